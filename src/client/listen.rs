//! `subscriptions/listen` on the client: the acknowledgement first, then only notifications
//! that carry this stream's id and fit its effective filter ([`ClientListen`]).
//! A failed stream is reported with its cause and never reconnected.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::client::connection::{CallOptions, Client, ListenMsg, Shared};
use crate::client::error::{ClientError, RpcError, TransportError};
use crate::machine::subscriptions::{ClientListen, Filter, Incoming, Verdict, Violation};
use crate::machine::Tick;
use crate::wire::jsonrpc::{RequestId, Response};
use crate::wire::listen::{self, Change, SubscriptionId};

/// Why a listen stream ended without the server's closing result.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ListenError {
    /// The transport failed; the stream is over and is not reopened.
    #[error("the listen stream failed: {0}")]
    Transport(TransportError),
    /// The server refused the listen request.
    #[error(transparent)]
    Rpc(RpcError),
    /// The stream ended without the closing result (no acknowledgement, a bare cancel).
    #[error("the listen stream ended unexpectedly")]
    Ended,
    /// The application fell [`crate::client::LISTEN_QUEUE_MESSAGES`] messages behind.
    #[error("the listen stream overflowed and was ended")]
    Overflow,
    /// No acknowledgement within the call's deadline.
    #[error("no acknowledgement within the deadline")]
    Deadline,
    /// The request could not be sent.
    #[error(transparent)]
    Request(ClientError),
}

/// A live listen stream. Dropping it cancels the subscription (`notifications/cancelled`).
#[derive(Debug)]
pub struct ListenStream {
    shared: Arc<Shared>,
    id: RequestId,
    rx: mpsc::Receiver<ListenMsg>,
    overflowed: Arc<AtomicBool>,
    machine: ClientListen,
    effective: Filter,
    dropped: Filter,
    rejected: Vec<Violation>,
    done: bool,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

/// The most refused messages a stream remembers for diagnostics.
pub const MAX_REMEMBERED_VIOLATIONS: usize = 64;

impl Client {
    /// Opens `subscriptions/listen` for `filter` and waits for its acknowledgement.
    ///
    /// # Errors
    /// [`ListenError`]: the transport, the server's refusal, the deadline, or a stream that
    /// ended before acknowledging.
    pub async fn listen(
        &self,
        filter: Filter,
        options: &CallOptions,
    ) -> Result<ListenStream, ListenError> {
        let deadline = self
            .shared
            .deadline_of(options)
            .map_err(ListenError::Request)?;
        let mut params = Map::new();
        let notifications: Value =
            serde_json::from_str(&filter.to_json()).unwrap_or(Value::Object(Map::new()));
        params.insert("notifications".into(), notifications);
        // One deadline for sending the request and receiving the acknowledgement.
        let until = tokio::time::Instant::now() + deadline;
        let (id, rx, overflowed) =
            tokio::time::timeout_at(until, self.shared.open_listen(params, options))
                .await
                .map_err(|_| ListenError::Deadline)?
                .map_err(|e| match e {
                    ClientError::Transport(t) => ListenError::Transport(t),
                    other => ListenError::Request(other),
                })?;
        let mut stream = ListenStream {
            shared: Arc::clone(&self.shared),
            machine: ClientListen::new(SubscriptionId(id.token().to_owned()), filter),
            id,
            rx,
            overflowed,
            effective: Filter::default(),
            dropped: Filter::default(),
            rejected: Vec::new(),
            done: false,
        };
        match tokio::time::timeout_at(until, stream.step()).await {
            Err(_) => Err(ListenError::Deadline),
            Ok(Err(e)) => Err(e),
            Ok(Ok(Step::Acknowledged)) => Ok(stream),
            Ok(Ok(Step::Change(_) | Step::Closed)) => Err(ListenError::Ended),
        }
    }
}

enum Step {
    Acknowledged,
    Change(Change),
    Closed,
}

impl ListenStream {
    /// The next change; `Ok(None)` once the server closed the stream gracefully.
    ///
    /// # Errors
    /// [`ListenError`] when the stream failed; it is over and is not reopened.
    pub async fn next(&mut self) -> Result<Option<Change>, ListenError> {
        loop {
            match self.step().await? {
                Step::Change(c) => return Ok(Some(c)),
                Step::Closed => return Ok(None),
                Step::Acknowledged => {}
            }
        }
    }

    /// The filter the server acknowledged.
    #[must_use]
    pub fn effective_filter(&self) -> &Filter {
        &self.effective
    }

    /// What was requested but not acknowledged.
    #[must_use]
    pub fn dropped_filter(&self) -> &Filter {
        &self.dropped
    }

    /// Messages refused so far (before the acknowledgement, wrong id, outside the filter).
    #[must_use]
    pub fn violations(&self) -> &[Violation] {
        &self.rejected
    }

    /// The subscription id (the listen request's id, as JSON text).
    #[must_use]
    pub fn subscription_id(&self) -> &str {
        self.id.token()
    }

    async fn step(&mut self) -> Result<Step, ListenError> {
        loop {
            let incoming = match self.rx.recv().await {
                Some(ListenMsg::Notification(n)) => match to_incoming(&n) {
                    Some(i) => i,
                    None => {
                        self.remember(Violation::OutsideFilter);
                        continue;
                    }
                },
                Some(ListenMsg::Response(Response::Error(e))) => {
                    self.done = true;
                    return Err(ListenError::Rpc(RpcError::from_object(
                        listen::LISTEN,
                        &e.error,
                    )));
                }
                Some(ListenMsg::Response(Response::Success(_))) => Incoming::ClosingResult {
                    id: SubscriptionId(self.id.token().to_owned()),
                },
                None => {
                    self.done = true;
                    let verdict = self.machine.handle(Tick(0), Incoming::StreamClosed);
                    if self.overflowed.load(Ordering::Relaxed) {
                        return Err(ListenError::Overflow);
                    }
                    return match (verdict, self.shared.dead()) {
                        (Verdict::Ended { graceful: true } | Verdict::Nothing, _) => {
                            Ok(Step::Closed)
                        }
                        (_, Some(cause)) => Err(ListenError::Transport(cause)),
                        (_, None) => Err(ListenError::Ended),
                    };
                }
            };
            match self.machine.handle(Tick(0), incoming) {
                Verdict::Acknowledged { filter, dropped } => {
                    self.effective = filter;
                    self.dropped = dropped;
                    return Ok(Step::Acknowledged);
                }
                Verdict::Deliver(change) => return Ok(Step::Change(change)),
                Verdict::Reject(v) => self.remember(v),
                Verdict::Ended { graceful } => {
                    self.done = true;
                    self.shared.close_listen(&self.id, false);
                    return if graceful {
                        Ok(Step::Closed)
                    } else {
                        Err(ListenError::Ended)
                    };
                }
                Verdict::Nothing => {}
            }
        }
    }

    fn remember(&mut self, v: Violation) {
        tracing::debug!(?v, "refused a listen-stream message");
        if self.rejected.len() < MAX_REMEMBERED_VIOLATIONS {
            self.rejected.push(v);
        }
    }
}

impl Drop for ListenStream {
    fn drop(&mut self) {
        self.shared.close_listen(&self.id, !self.done);
    }
}

/// Reads one stream notification into the machine's terms; `None` when it is malformed.
fn to_incoming(n: &crate::wire::jsonrpc::Notification) -> Option<Incoming> {
    let params: Map<String, Value> = match n.params.as_deref() {
        Some(p) => serde_json::from_str(p.get()).ok()?,
        None => Map::new(),
    };
    let id_of = |params: &Map<String, Value>| {
        params
            .get("_meta")
            .and_then(|m| m.get(crate::wire::meta::SUBSCRIPTION_ID))
            .map(|v| SubscriptionId(v.to_string()))
    };
    Some(match n.method.as_str() {
        listen::ACKNOWLEDGED => Incoming::Acknowledged {
            id: id_of(&params)?,
            filter: Filter::read(&params.get("notifications")?.to_string()).ok()?,
        },
        listen::TOOLS_LIST_CHANGED => Incoming::Notification {
            id: id_of(&params)?,
            change: Change::ToolsListChanged,
        },
        listen::PROMPTS_LIST_CHANGED => Incoming::Notification {
            id: id_of(&params)?,
            change: Change::PromptsListChanged,
        },
        listen::RESOURCES_LIST_CHANGED => Incoming::Notification {
            id: id_of(&params)?,
            change: Change::ResourcesListChanged,
        },
        listen::RESOURCE_UPDATED => Incoming::Notification {
            id: id_of(&params)?,
            change: Change::ResourceUpdated {
                uri: params.get("uri")?.as_str()?.to_owned(),
            },
        },
        crate::wire::methods::CANCELLED => Incoming::Cancelled {
            id: SubscriptionId(params.get("requestId")?.to_string()),
        },
        _ => return None,
    })
}
