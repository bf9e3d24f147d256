//! `subscriptions/listen` (K-section): the method (filter read from the params, the stream held
//! open until the client cancels or the server ends it) and the [`Hub`] of open streams: one
//! [`Listen`] machine per stream, driven under one lock so that the acknowledgement always
//! precedes the stream's notifications and a change is offered to every stream in the same
//! order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::{select, Either};
use serde_json::value::RawValue;

use super::answer::Answer;
use super::context::{Ctx, Params};
use super::encode::{encode_notification, encode_result};
use super::{lock, Cause, Outbox, Reply};
use crate::core::bus::BusError;
use crate::core::CancelToken;
use crate::machine::subscriptions::{
    Change, Filter, Listen, ListenEffect, ListenEffects, ListenEvent, ServerSupport, SubscriptionId,
};
use crate::machine::Tick;
use crate::wire::jsonrpc::Request;
use crate::wire::listen;

struct Stream {
    machine: Listen,
    outbox: Arc<dyn Outbox>,
    closed: CancelToken,
    /// The tasks this stream follows (Tasks extension), as its acknowledgement granted them.
    tasks: Option<std::collections::BTreeSet<String>>,
}

/// Every open listen stream of one server.
#[derive(Default)]
pub(crate) struct Hub {
    streams: Mutex<BTreeMap<u64, Stream>>,
    next: AtomicU64,
}

/// Handle of one open stream.
pub(crate) struct Opened {
    pub(crate) key: u64,
    /// Fired when the server ended the stream (its closing result is already sent).
    pub(crate) closed: CancelToken,
}

impl Hub {
    /// Opens a stream and sends its acknowledgement.
    #[allow(clippy::too_many_arguments)] // one stream's parts, each stored or used once
    pub(crate) fn open(
        &self,
        now: Tick,
        id: SubscriptionId,
        requested: Filter,
        support: ServerSupport,
        outbox: Arc<dyn Outbox>,
        info: &RawValue,
        tasks: Option<std::collections::BTreeSet<String>>,
    ) -> Opened {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let closed = CancelToken::new();
        let mut machine = Listen::new(id, outbox.transport(), requested);
        let mut streams = lock(&self.streams);
        let effects = machine.handle(now, ListenEvent::Acknowledge(support));
        let mut stream = Stream {
            machine,
            outbox,
            closed: closed.clone(),
            tasks,
        };
        if apply(&mut stream, effects, info) {
            streams.insert(key, stream);
        }
        Opened { key, closed }
    }

    /// Offers a change to every open stream (each stream's filter decides).
    pub(crate) fn change(&self, now: Tick, change: &Change, info: &RawValue) {
        let mut streams = lock(&self.streams);
        streams.retain(|_, stream| {
            let effects = stream
                .machine
                .handle(now, ListenEvent::Change(change.clone()));
            apply(stream, effects, info)
        });
    }

    /// `notifications/tasks` with the task's new state to every stream that follows it (only
    /// acknowledged streams are in the hub, so nothing precedes an acknowledgement).
    pub(crate) fn task_status(&self, task: &crate::wire::tasks::DetailedTask) {
        let streams = lock(&self.streams);
        for stream in streams.values() {
            if stream
                .tasks
                .as_ref()
                .is_some_and(|ids| ids.contains(&task.task.task_id))
            {
                let params =
                    crate::wire::tasks::status_notification_params(task, &stream.machine.id().0);
                let _ = send(
                    stream,
                    crate::wire::tasks::TASK_STATUS_NOTIFICATION,
                    &params,
                );
            }
        }
    }

    /// The client ended the stream (stdio `notifications/cancelled`, HTTP close).
    pub(crate) fn client_closed(&self, now: Tick, key: u64) {
        if let Some(mut stream) = lock(&self.streams).remove(&key) {
            let _ = stream.machine.handle(now, ListenEvent::ClientClosed);
        }
    }

    /// Ends one stream gracefully (shutdown reached it directly).
    pub(crate) fn server_closing(&self, now: Tick, key: u64, info: &RawValue) {
        let mut streams = lock(&self.streams);
        if let Some(stream) = streams.get_mut(&key) {
            let effects = stream.machine.handle(now, ListenEvent::ServerClosing);
            if !apply(stream, effects, info) {
                streams.remove(&key);
            }
        }
    }

    /// Feeds `event` to every stream's machine, dropping the streams it ends (shutdown feeds
    /// `ServerClosing`: every stream ends gracefully).
    pub(crate) fn feed_all(&self, now: Tick, event: &ListenEvent, info: &RawValue) {
        let mut streams = lock(&self.streams);
        streams.retain(|_, stream| {
            let effects = stream.machine.handle(now, event.clone());
            apply(stream, effects, info)
        });
    }

    /// Ends every stream with the bus-lost error (-32603, `data.reason = "bus_unavailable"`):
    /// changes published elsewhere may have been missed, so no stream may stay open silent.
    pub(crate) fn fail_all(&self, error: &BusError) {
        let streams = std::mem::take(&mut *lock(&self.streams));
        for (_, stream) in streams {
            fail(stream, error);
        }
    }

    /// Ends one stream with the bus-lost error, if it is still open.
    pub(crate) fn fail(&self, key: u64, error: &BusError) {
        let stream = lock(&self.streams).remove(&key);
        if let Some(stream) = stream {
            fail(stream, error);
        }
    }

    /// Open streams.
    pub(crate) fn len(&self) -> usize {
        lock(&self.streams).len()
    }
}

/// Sends what the machine asked for; returns whether the stream stays open.
fn apply(stream: &mut Stream, effects: ListenEffects, info: &RawValue) -> bool {
    let mut open = true;
    for effect in effects.0 {
        match effect {
            ListenEffect::SendAcknowledged { id, filter } => {
                let params = match &stream.tasks {
                    Some(ids) => {
                        crate::wire::tasks::acknowledged_params_with_tasks(&id, &filter, ids)
                    }
                    None => listen::acknowledged_params(&id, &filter),
                };
                open &= send(stream, listen::ACKNOWLEDGED, &params);
            }
            ListenEffect::SendNotification { id, change } => {
                open &= send(stream, change.method(), &change.params(&id));
            }
            ListenEffect::SendClosingResult { id } => {
                let result = listen::closing_result(&id, info);
                match crate::wire::jsonrpc::RequestId::from_token(&id.0)
                    .ok()
                    .and_then(|rid| encode_result(&rid, &result).ok())
                {
                    Some(line) => stream.outbox.finish(Reply { line, status: 200 }),
                    None => tracing::warn!("listen closing result could not be encoded"),
                }
            }
            // The machine emits this on stdio only (S2).
            ListenEffect::SendCancelled { id } => {
                let params = format!(r#"{{"requestId":{}}}"#, id.0);
                let _ = send(stream, "notifications/cancelled", &params);
            }
            ListenEffect::CloseStream => {
                stream.closed.cancel();
                open = false;
            }
        }
    }
    if !open {
        // Closed by the server, or the peer is gone: the listen request ends without a reply
        // unless its closing result already went out.
        stream.closed.cancel();
    }
    open
}

/// The `data.reason` of a listen stream ended because its event bus was lost.
pub(crate) const BUS_LOST_REASON: &str = "bus_unavailable";

/// The bus-lost error on the listen request's id: -32603 with
/// `{"reason":"bus_unavailable","retryable":true}` (listening again re-attaches the bus). The
/// listen machine has no outage event: the stream leaves the hub and its machine is dropped,
/// as for a peer that is gone.
fn fail(stream: Stream, error: &BusError) {
    tracing::debug!(%error, "listen stream ended by a bus loss");
    let id = stream.machine.id().clone();
    match crate::wire::jsonrpc::RequestId::from_token(&id.0) {
        Ok(rid) => stream.outbox.finish(bus_lost_reply(&rid)),
        Err(_) => tracing::warn!("listen id could not be re-encoded"),
    }
    stream.closed.cancel();
}

/// The reply of [`fail`], also what a listen answers when its bus cannot be attached.
pub(crate) fn bus_lost_answer() -> Answer {
    Answer::Error {
        cause: Cause::Internal,
        message: "The listen event bus is unavailable; listen again.".to_owned(),
        data: Some(serde_json::json!({ "reason": BUS_LOST_REASON, "retryable": true })),
    }
}

fn bus_lost_reply(id: &crate::wire::jsonrpc::RequestId) -> Reply {
    match bus_lost_answer() {
        Answer::Error {
            cause,
            message,
            data,
        } => super::encode::error_reply(id, cause, &message, data),
        _ => super::encode::error_reply(id, Cause::Internal, "Internal error", None),
    }
}

/// Sends one notification; `false` when the peer is gone (the stream then ends).
fn send(stream: &Stream, method: &str, params: &str) -> bool {
    match encode_notification(method, params) {
        Some(line) => stream.outbox.notify(line),
        None => true,
    }
}

/// `subscriptions/listen` (K-section): acknowledgement first, then tagged notifications until
/// the client cancels (no reply) or the server shuts down (closing result).
pub(crate) async fn listen(
    ctx: &Ctx,
    request: &Request,
    params: &Params<'_>,
    outbox: &Arc<dyn Outbox>,
    client_cancel: &CancelToken,
) -> Result<Answer, Answer> {
    let filter = params
        .get("notifications")
        .ok_or(crate::wire::listen::FilterError::Missing)
        .and_then(|raw| Filter::read(raw.get()))
        .map_err(|e| Answer::error(Cause::InvalidParams, e.to_string()))?;
    let registry = &ctx.registry;
    // The Tasks extension's `taskIds`: only for a declaring request (N36), and only the
    // caller's own tasks are granted (another principal's id is as unknown as a wrong one).
    let tasks = match params.get("notifications") {
        Some(raw) if registry.has_task_tools() => {
            match crate::wire::tasks::listen_task_ids(raw.get())
                .map_err(|e| Answer::error(Cause::InvalidParams, e.to_string()))?
            {
                Some(_) if !ctx.caps.declares_tasks() => {
                    return Err(super::tasks::missing_extension())
                }
                Some(ids) => Some(super::tasks::owned_ids(ctx, ids).await),
                None => None,
            }
        }
        _ => None,
    };
    let support = ServerSupport {
        tools_list_changed: registry.has_tools(),
        prompts_list_changed: registry.has_prompts(),
        resources_list_changed: registry.has_resources(),
        resources_subscribe: registry.has_resources(),
    };
    // Attached before the acknowledgement: a change published anywhere after it reaches us.
    let generation = match ctx.server.attach_bus().await {
        Ok(generation) => generation,
        Err(error) => {
            tracing::warn!(%error, "listen event bus cannot be attached");
            return Err(bus_lost_answer());
        }
    };
    let hub = ctx.server.listens();
    let Opened { key, closed } = hub.open(
        ctx.server.now(),
        SubscriptionId(request.id.token().to_owned()),
        filter,
        support,
        Arc::clone(outbox),
        ctx.server.info(),
        tasks,
    );
    // However this future ends (client cancellation may drop it), the stream leaves the hub.
    let _guard = StreamGuard { ctx, key };
    if ctx.server.bus_generation() != generation {
        // The bus was lost between attaching and registering this stream.
        hub.fail(
            key,
            &BusError::Unavailable("lost while the stream opened".into()),
        );
    }
    super::fault::point(super::fault::points::LISTEN_AFTER_ACK);
    let client = client_cancel.cancelled();
    let server_closed = closed.cancelled();
    let shutdown = ctx.cancel.cancelled();
    futures_util::pin_mut!(client);
    futures_util::pin_mut!(server_closed);
    futures_util::pin_mut!(shutdown);
    let ended = select(client, server_closed);
    if let Either::Right(((), _)) = select(ended, shutdown).await {
        // Shutdown reached this call before the stream was registered for `feed_all`.
        hub.server_closing(ctx.server.now(), key, ctx.server.info());
    }
    Ok(Answer::Silent)
}

/// Removes a listen stream from the hub when its request ends; a stream the server already
/// closed is gone and this does nothing.
struct StreamGuard<'a> {
    ctx: &'a Ctx,
    key: u64,
}

impl Drop for StreamGuard<'_> {
    fn drop(&mut self) {
        self.ctx
            .server
            .listens()
            .client_closed(self.ctx.server.now(), self.key);
    }
}
