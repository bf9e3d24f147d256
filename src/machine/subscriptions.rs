//! One `subscriptions/listen` stream: [`Listen`] is the server side,
//! [`ClientListen`] the strict client's check of what arrives.
//!
//! `Requested → Acknowledged → Closed` (or `Requested → Closed`). The stream's first message is
//! the acknowledgement carrying the effective filter (requested ∩ supported); every later
//! message carries the subscription id, which is the listen request's JSON-RPC id in its original
//! JSON text, and only notification types inside the effective filter go out.
//!
//! # Calling-order contract
//!
//! * The driver creates [`Listen::new`] when the listen request arrives and feeds
//!   [`ListenEvent::Acknowledge`] with what the server supports before anything else.
//! * Every registry or resource change is offered to every open stream with
//!   [`ListenEvent::Change`]; the stream decides whether it goes out. A change offered before the
//!   acknowledgement is dropped: nothing may precede the acknowledgement, and a client fetches
//!   the lists after it anyway.
//! * [`ListenEvent::ClientClosed`] when the client goes away (HTTP close, stdio
//!   `notifications/cancelled`); [`ListenEvent::ServerClosing`] at shutdown. After
//!   [`ListenEffect::CloseStream`] nothing is ever emitted again.
//!
//! Shutdown sends the listen result `{resultType: "complete", _meta: {subscriptionId}}`, then on
//! stdio `notifications/cancelled` for the listen id, then closes (S2). A stream shut down before
//! its acknowledgement is closed silently, since even the result may not precede the ack.

use std::collections::BTreeSet;

pub use crate::wire::listen::{Change, Filter, SubscriptionId};

/// What this server can honour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ServerSupport {
    /// `tools.listChanged` is advertised.
    pub tools_list_changed: bool,
    /// `prompts.listChanged` is advertised.
    pub prompts_list_changed: bool,
    /// `resources.listChanged` is advertised.
    pub resources_list_changed: bool,
    /// `resources.subscribe` is advertised.
    pub resources_subscribe: bool,
}

impl ServerSupport {
    /// The acknowledged filter: the requested subset this server honours.
    #[must_use]
    pub fn effective(&self, requested: &Filter) -> Filter {
        Filter {
            tools_list_changed: requested.tools_list_changed && self.tools_list_changed,
            prompts_list_changed: requested.prompts_list_changed && self.prompts_list_changed,
            resources_list_changed: requested.resources_list_changed && self.resources_list_changed,
            resource_subscriptions: if self.resources_subscribe {
                requested.resource_subscriptions.clone()
            } else {
                None
            },
        }
    }
}

/// Which transport carries the stream (decides the teardown sequence, S2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Line-framed stdio: result, then `notifications/cancelled`, then stop.
    Stdio,
    /// Streamable HTTP: result, then close the SSE stream.
    Http,
}

/// Planted bugs for the stateright models. Compiled only with feature `model`; all off by default.
#[cfg(feature = "model")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ListenFaults {
    /// Forward changes matching the *requested* filter before the acknowledgement.
    pub notify_before_ack: bool,
}

/// Inputs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ListenEvent {
    /// Send the acknowledgement; `support` is what the server advertises.
    Acknowledge(ServerSupport),
    /// Something changed on the server.
    Change(Change),
    /// The client ended the subscription.
    ClientClosed,
    /// The server is shutting down.
    ServerClosing,
}

/// One thing to send or do, in order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ListenEffect {
    /// `notifications/subscriptions/acknowledged` with `_meta.subscriptionId` and the filter.
    SendAcknowledged {
        /// Subscription id.
        id: SubscriptionId,
        /// Effective filter.
        filter: Filter,
    },
    /// A stream notification tagged with the subscription id.
    SendNotification {
        /// Subscription id.
        id: SubscriptionId,
        /// What changed.
        change: Change,
    },
    /// The listen result `{resultType: "complete", _meta: {subscriptionId}}`.
    SendClosingResult {
        /// Subscription id.
        id: SubscriptionId,
    },
    /// Server-sent `notifications/cancelled` for the listen id (stdio only).
    SendCancelled {
        /// Subscription id.
        id: SubscriptionId,
    },
    /// Close the stream; nothing follows.
    CloseStream,
}

/// Effects of one event, in order.
#[must_use = "listen effects are messages that must be sent"]
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ListenEffects(pub Vec<ListenEffect>);

/// Where a stream stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The listen request arrived; the acknowledgement has not been sent.
    Requested,
    /// Acknowledged with this effective filter.
    Acknowledged(Filter),
    /// Closed; nothing more goes out.
    Closed,
}

/// One listen stream. See the module docs for the calling-order contract.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Listen {
    id: SubscriptionId,
    transport: Transport,
    requested: Filter,
    phase: Phase,
    #[cfg(feature = "model")]
    faults: ListenFaults,
}

impl Listen {
    /// A stream for the listen request `id` asking for `requested`.
    #[must_use]
    pub fn new(id: SubscriptionId, transport: Transport, requested: Filter) -> Listen {
        Listen {
            id,
            transport,
            requested,
            phase: Phase::Requested,
            #[cfg(feature = "model")]
            faults: ListenFaults::default(),
        }
    }

    /// A stream with planted bugs (model builds only).
    #[cfg(feature = "model")]
    #[must_use]
    pub fn with_faults(
        id: SubscriptionId,
        transport: Transport,
        requested: Filter,
        faults: ListenFaults,
    ) -> Listen {
        Listen {
            faults,
            ..Listen::new(id, transport, requested)
        }
    }

    /// Subscription id.
    #[must_use]
    pub fn id(&self) -> &SubscriptionId {
        &self.id
    }

    /// Current phase.
    #[must_use]
    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// True until the stream closed.
    #[must_use]
    pub fn is_open(&self) -> bool {
        self.phase != Phase::Closed
    }

    /// Listen streams have no timers of their own (keep-alives are the HTTP driver's).
    #[must_use]
    pub fn poll_timeout(&self) -> Option<super::Tick> {
        None
    }

    fn notifies_before_ack(&self) -> bool {
        #[cfg(feature = "model")]
        if self.faults.notify_before_ack {
            return true;
        }
        false
    }

    /// Apply one event. `now` is accepted for uniformity with the other machines; nothing here
    /// depends on time.
    pub fn handle(&mut self, _now: super::Tick, event: ListenEvent) -> ListenEffects {
        let mut out = Vec::new();
        match (&self.phase, event) {
            (Phase::Requested, ListenEvent::Acknowledge(support)) => {
                let filter = support.effective(&self.requested);
                out.push(ListenEffect::SendAcknowledged {
                    id: self.id.clone(),
                    filter: filter.clone(),
                });
                self.phase = Phase::Acknowledged(filter);
            }
            (Phase::Requested, ListenEvent::Change(change)) => {
                if self.notifies_before_ack() && self.requested.admits(&change) {
                    out.push(ListenEffect::SendNotification {
                        id: self.id.clone(),
                        change,
                    });
                }
            }
            (Phase::Acknowledged(filter), ListenEvent::Change(change)) => {
                if filter.admits(&change) {
                    out.push(ListenEffect::SendNotification {
                        id: self.id.clone(),
                        change,
                    });
                }
            }
            (Phase::Requested, ListenEvent::ServerClosing) => {
                out.push(ListenEffect::CloseStream);
                self.phase = Phase::Closed;
            }
            (Phase::Acknowledged(_), ListenEvent::ServerClosing) => {
                out.push(ListenEffect::SendClosingResult {
                    id: self.id.clone(),
                });
                if self.transport == Transport::Stdio {
                    out.push(ListenEffect::SendCancelled {
                        id: self.id.clone(),
                    });
                }
                out.push(ListenEffect::CloseStream);
                self.phase = Phase::Closed;
            }
            (Phase::Requested | Phase::Acknowledged(_), ListenEvent::ClientClosed) => {
                // The client is gone: nothing to tell it (K9).
                self.phase = Phase::Closed;
            }
            // A second acknowledgement, or anything after close, does nothing.
            (Phase::Acknowledged(_), ListenEvent::Acknowledge(_)) | (Phase::Closed, _) => {}
        }
        ListenEffects(out)
    }
}

/// A message received on a listen stream by the client (after decoding).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Incoming {
    /// `notifications/subscriptions/acknowledged`.
    Acknowledged {
        /// `_meta.subscriptionId`.
        id: SubscriptionId,
        /// `notifications` as acknowledged.
        filter: Filter,
    },
    /// A stream notification.
    Notification {
        /// `_meta.subscriptionId`.
        id: SubscriptionId,
        /// What changed.
        change: Change,
    },
    /// The listen result (the server ends the subscription).
    ClosingResult {
        /// `_meta.subscriptionId`.
        id: SubscriptionId,
    },
    /// Server-sent `notifications/cancelled` for the listen id (stdio).
    Cancelled {
        /// The listen request id it references.
        id: SubscriptionId,
    },
    /// The transport closed the stream.
    StreamClosed,
}

/// A server message the strict client refuses. The stream stays usable: one bad message is
/// dropped, not the subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Violation {
    /// A notification before the acknowledgement.
    BeforeAck,
    /// A subscription id other than this stream's.
    UnknownId,
    /// A notification type or URI outside the acknowledged filter.
    OutsideFilter,
    /// A second acknowledgement.
    DuplicateAck,
    /// The acknowledgement grants something that was not requested.
    AckWidensFilter,
    /// Anything after the subscription ended.
    AfterEnd,
}

/// The client's verdict on one incoming message.
#[must_use = "a verdict says whether to deliver, drop or end"]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The subscription is live with this effective filter; `dropped` is what the server did not
    /// honour, for the application to cope with (e.g. poll instead).
    Acknowledged {
        /// Effective filter.
        filter: Filter,
        /// Requested but not acknowledged.
        dropped: Filter,
    },
    /// Hand this change to the application.
    Deliver(Change),
    /// Refuse and drop this message.
    Reject(Violation),
    /// The subscription ended. `graceful` is false when the stream closed without the listen
    /// result, which a client may treat as unexpected and re-listen.
    Ended {
        /// The server sent the closing result first.
        graceful: bool,
    },
    /// Nothing to do (e.g. the stdio `notifications/cancelled` after the result).
    Nothing,
}

fn subset(granted: &Filter, requested: &Filter) -> bool {
    (!granted.tools_list_changed || requested.tools_list_changed)
        && (!granted.prompts_list_changed || requested.prompts_list_changed)
        && (!granted.resources_list_changed || requested.resources_list_changed)
        && match (
            &granted.resource_subscriptions,
            &requested.resource_subscriptions,
        ) {
            (None, _) => true,
            (Some(g), Some(r)) => g.is_subset(r),
            (Some(_), None) => false,
        }
}

fn minus(requested: &Filter, granted: &Filter) -> Filter {
    Filter {
        tools_list_changed: requested.tools_list_changed && !granted.tools_list_changed,
        prompts_list_changed: requested.prompts_list_changed && !granted.prompts_list_changed,
        resources_list_changed: requested.resources_list_changed && !granted.resources_list_changed,
        resource_subscriptions: requested.resource_subscriptions.as_ref().and_then(|r| {
            let left: BTreeSet<String> = match &granted.resource_subscriptions {
                Some(g) => r.difference(g).cloned().collect(),
                None => r.clone(),
            };
            (!left.is_empty()).then_some(left)
        }),
    }
}

/// The client side of one listen stream: checks every incoming message against the listen rules.
///
/// Calling order: [`ClientListen::new`] with the id and filter the client sent, then
/// [`ClientListen::handle`] for each message demultiplexed to this stream (on stdio by
/// `subscriptionId`), then once [`Incoming::StreamClosed`] when the transport ends.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientListen {
    id: SubscriptionId,
    requested: Filter,
    phase: ClientPhase,
}

/// Where a client-side stream stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ClientPhase {
    /// Waiting for the acknowledgement.
    AwaitingAck,
    /// Live with this effective filter.
    Live(Filter),
    /// The listen result arrived; only `notifications/cancelled` and the close may follow.
    Closing,
    /// Over.
    Ended,
}

impl ClientListen {
    /// A stream for the listen request `id` that asked for `requested`.
    #[must_use]
    pub fn new(id: SubscriptionId, requested: Filter) -> ClientListen {
        ClientListen {
            id,
            requested,
            phase: ClientPhase::AwaitingAck,
        }
    }

    /// Current phase.
    #[must_use]
    pub fn phase(&self) -> &ClientPhase {
        &self.phase
    }

    /// Judge one incoming message. `now` is accepted for uniformity; nothing here depends on it.
    pub fn handle(&mut self, _now: super::Tick, incoming: Incoming) -> Verdict {
        let id_ok = |id: &SubscriptionId| *id == self.id;
        match (&self.phase, incoming) {
            (ClientPhase::Ended, Incoming::StreamClosed) => Verdict::Nothing,
            (ClientPhase::Ended, _) => Verdict::Reject(Violation::AfterEnd),
            (ClientPhase::Closing, Incoming::StreamClosed) => {
                self.phase = ClientPhase::Ended;
                Verdict::Ended { graceful: true }
            }
            (_, Incoming::StreamClosed) => {
                self.phase = ClientPhase::Ended;
                Verdict::Ended { graceful: false }
            }
            (
                _,
                Incoming::Acknowledged { id, .. }
                | Incoming::Notification { id, .. }
                | Incoming::ClosingResult { id }
                | Incoming::Cancelled { id },
            ) if !id_ok(&id) => Verdict::Reject(Violation::UnknownId),
            (ClientPhase::Closing, Incoming::Cancelled { .. }) => {
                self.phase = ClientPhase::Ended;
                Verdict::Ended { graceful: true }
            }
            (ClientPhase::Closing, _) => Verdict::Reject(Violation::AfterEnd),
            (ClientPhase::AwaitingAck, Incoming::Acknowledged { filter, .. }) => {
                if !subset(&filter, &self.requested) {
                    return Verdict::Reject(Violation::AckWidensFilter);
                }
                let dropped = minus(&self.requested, &filter);
                self.phase = ClientPhase::Live(filter.clone());
                Verdict::Acknowledged { filter, dropped }
            }
            (
                ClientPhase::AwaitingAck,
                Incoming::Notification { .. } | Incoming::ClosingResult { .. },
            ) => Verdict::Reject(Violation::BeforeAck),
            (ClientPhase::Live(_), Incoming::Acknowledged { .. }) => {
                Verdict::Reject(Violation::DuplicateAck)
            }
            (ClientPhase::Live(filter), Incoming::Notification { change, .. }) => {
                if filter.admits(&change) {
                    Verdict::Deliver(change)
                } else {
                    Verdict::Reject(Violation::OutsideFilter)
                }
            }
            (ClientPhase::Live(_), Incoming::ClosingResult { .. }) => {
                self.phase = ClientPhase::Closing;
                Verdict::Nothing
            }
            // A server-sent cancel without the result first still ends the subscription (J12).
            (ClientPhase::AwaitingAck | ClientPhase::Live(_), Incoming::Cancelled { .. }) => {
                self.phase = ClientPhase::Ended;
                Verdict::Ended { graceful: false }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Tick;

    fn id() -> SubscriptionId {
        SubscriptionId("\"listen-1\"".into())
    }

    fn all_support() -> ServerSupport {
        ServerSupport {
            tools_list_changed: true,
            prompts_list_changed: true,
            resources_list_changed: true,
            resources_subscribe: true,
        }
    }

    fn requested() -> Filter {
        Filter {
            tools_list_changed: true,
            prompts_list_changed: false,
            resources_list_changed: true,
            resource_subscriptions: Some(["file:///a".to_string()].into_iter().collect()),
        }
    }

    #[test]
    fn k3_no_notification_before_the_acknowledgement() {
        let mut l = Listen::new(id(), Transport::Http, requested());
        assert_eq!(
            l.handle(Tick(0), ListenEvent::Change(Change::ToolsListChanged))
                .0,
            vec![]
        );
        let ack = l.handle(Tick(1), ListenEvent::Acknowledge(all_support())).0;
        assert_eq!(
            ack,
            vec![ListenEffect::SendAcknowledged {
                id: id(),
                filter: requested()
            }]
        );
        assert_eq!(
            l.handle(Tick(2), ListenEvent::Change(Change::ToolsListChanged))
                .0,
            vec![ListenEffect::SendNotification {
                id: id(),
                change: Change::ToolsListChanged
            }]
        );
    }

    #[test]
    fn k3_k13_effective_filter_omits_unsupported_types() {
        let mut l = Listen::new(id(), Transport::Http, requested());
        let support = ServerSupport {
            tools_list_changed: true,
            ..ServerSupport::default()
        };
        let ack = l.handle(Tick(0), ListenEvent::Acknowledge(support)).0;
        let only_tools = Filter {
            tools_list_changed: true,
            ..Filter::default()
        };
        assert_eq!(
            ack,
            vec![ListenEffect::SendAcknowledged {
                id: id(),
                filter: only_tools.clone()
            }]
        );
        assert_eq!(l.phase(), &Phase::Acknowledged(only_tools));
        // K2: resources were requested but not honoured, so they never go out.
        assert_eq!(
            l.handle(Tick(1), ListenEvent::Change(Change::ResourcesListChanged))
                .0,
            vec![]
        );
        assert_eq!(
            l.handle(
                Tick(1),
                ListenEvent::Change(Change::ResourceUpdated {
                    uri: "file:///a".into()
                })
            )
            .0,
            vec![]
        );
    }

    #[test]
    fn k2_k4_only_filtered_changes_go_out_tagged_with_the_subscription_id() {
        let mut l = Listen::new(id(), Transport::Stdio, requested());
        let _ = l.handle(Tick(0), ListenEvent::Acknowledge(all_support()));
        assert_eq!(
            l.handle(Tick(1), ListenEvent::Change(Change::PromptsListChanged))
                .0,
            vec![]
        );
        assert_eq!(
            l.handle(
                Tick(1),
                ListenEvent::Change(Change::ResourceUpdated {
                    uri: "file:///b".into()
                })
            )
            .0,
            vec![]
        );
        let a = Change::ResourceUpdated {
            uri: "file:///a".into(),
        };
        assert_eq!(
            l.handle(Tick(1), ListenEvent::Change(a.clone())).0,
            vec![ListenEffect::SendNotification {
                id: id(),
                change: a
            }]
        );
        assert_eq!(
            l.handle(Tick(2), ListenEvent::Acknowledge(all_support())).0,
            vec![],
            "acknowledged once"
        );
    }

    #[test]
    fn k4_integer_id_keeps_its_json_type() {
        let numeric = SubscriptionId("42".into());
        let mut l = Listen::new(numeric.clone(), Transport::Http, Filter::default());
        assert_eq!(
            l.handle(Tick(0), ListenEvent::Acknowledge(all_support())).0,
            vec![ListenEffect::SendAcknowledged {
                id: numeric,
                filter: Filter::default()
            }]
        );
    }

    #[test]
    fn o6_k10_s2_shutdown_on_http_sends_the_result_then_closes() {
        let mut l = Listen::new(id(), Transport::Http, requested());
        let _ = l.handle(Tick(0), ListenEvent::Acknowledge(all_support()));
        assert_eq!(
            l.handle(Tick(1), ListenEvent::ServerClosing).0,
            vec![
                ListenEffect::SendClosingResult { id: id() },
                ListenEffect::CloseStream
            ]
        );
        assert!(!l.is_open());
        assert_eq!(
            l.handle(Tick(2), ListenEvent::Change(Change::ToolsListChanged))
                .0,
            vec![]
        );
        assert_eq!(l.handle(Tick(2), ListenEvent::ServerClosing).0, vec![]);
    }

    #[test]
    fn o6_k10_s2_shutdown_on_stdio_adds_cancelled() {
        let mut l = Listen::new(id(), Transport::Stdio, requested());
        let _ = l.handle(Tick(0), ListenEvent::Acknowledge(all_support()));
        assert_eq!(
            l.handle(Tick(1), ListenEvent::ServerClosing).0,
            vec![
                ListenEffect::SendClosingResult { id: id() },
                ListenEffect::SendCancelled { id: id() },
                ListenEffect::CloseStream
            ]
        );
    }

    #[test]
    fn k3_shutdown_before_ack_closes_silently() {
        let mut l = Listen::new(id(), Transport::Stdio, requested());
        assert_eq!(
            l.handle(Tick(0), ListenEvent::ServerClosing).0,
            vec![ListenEffect::CloseStream]
        );
        assert_eq!(
            l.handle(Tick(1), ListenEvent::Acknowledge(all_support())).0,
            vec![]
        );
    }

    #[test]
    fn k9_client_close_ends_the_stream_without_messages() {
        let mut l = Listen::new(id(), Transport::Http, requested());
        let _ = l.handle(Tick(0), ListenEvent::Acknowledge(all_support()));
        assert_eq!(l.handle(Tick(1), ListenEvent::ClientClosed).0, vec![]);
        assert_eq!(l.phase(), &Phase::Closed);
        assert_eq!(
            l.handle(Tick(1), ListenEvent::Change(Change::ToolsListChanged))
                .0,
            vec![]
        );
        assert_eq!(l.poll_timeout(), None);
    }
    fn client() -> ClientListen {
        ClientListen::new(id(), requested())
    }

    fn ack(filter: Filter) -> Incoming {
        Incoming::Acknowledged { id: id(), filter }
    }

    fn note(change: Change) -> Incoming {
        Incoming::Notification { id: id(), change }
    }

    #[test]
    fn k7_client_rejects_notifications_before_the_ack_and_unknown_ids() {
        let mut c = client();
        assert_eq!(
            c.handle(Tick(0), note(Change::ToolsListChanged)),
            Verdict::Reject(Violation::BeforeAck)
        );
        let foreign = Incoming::Notification {
            id: SubscriptionId("\"other\"".into()),
            change: Change::ToolsListChanged,
        };
        assert_eq!(
            c.handle(Tick(0), foreign),
            Verdict::Reject(Violation::UnknownId)
        );
        // K4: same value, other JSON type (string "1" vs integer 1) is another id.
        let mut numeric = ClientListen::new(SubscriptionId("1".into()), Filter::default());
        let typed = Incoming::Acknowledged {
            id: SubscriptionId("\"1\"".into()),
            filter: Filter::default(),
        };
        assert_eq!(
            numeric.handle(Tick(0), typed),
            Verdict::Reject(Violation::UnknownId)
        );
    }

    #[test]
    fn k6_k7_client_reports_dropped_types_and_rejects_outside_filter() {
        let mut c = client();
        let only_tools = Filter {
            tools_list_changed: true,
            ..Filter::default()
        };
        assert_eq!(
            c.handle(Tick(0), ack(only_tools.clone())),
            Verdict::Acknowledged {
                filter: only_tools,
                dropped: Filter {
                    tools_list_changed: false,
                    ..requested()
                },
            }
        );
        assert_eq!(
            c.handle(Tick(1), note(Change::ToolsListChanged)),
            Verdict::Deliver(Change::ToolsListChanged)
        );
        assert_eq!(
            c.handle(Tick(1), note(Change::ResourcesListChanged)),
            Verdict::Reject(Violation::OutsideFilter)
        );
        assert_eq!(
            c.handle(Tick(1), ack(Filter::default())),
            Verdict::Reject(Violation::DuplicateAck)
        );
    }

    #[test]
    fn k3_client_rejects_an_ack_granting_more_than_requested() {
        let mut c = client();
        let wider = Filter {
            prompts_list_changed: true,
            ..requested()
        };
        assert_eq!(
            c.handle(Tick(0), ack(wider)),
            Verdict::Reject(Violation::AckWidensFilter)
        );
        let more_uris = Filter {
            resource_subscriptions: Some(
                ["file:///a".to_string(), "file:///z".to_string()]
                    .into_iter()
                    .collect(),
            ),
            ..requested()
        };
        assert_eq!(
            c.handle(Tick(0), ack(more_uris)),
            Verdict::Reject(Violation::AckWidensFilter)
        );
        assert_eq!(c.phase(), &ClientPhase::AwaitingAck);
    }

    #[test]
    fn k10_k11_graceful_and_unexpected_ends() {
        let mut c = client();
        let _ = c.handle(Tick(0), ack(requested()));
        assert_eq!(
            c.handle(Tick(1), Incoming::ClosingResult { id: id() }),
            Verdict::Nothing
        );
        assert_eq!(
            c.handle(Tick(1), note(Change::ToolsListChanged)),
            Verdict::Reject(Violation::AfterEnd)
        );
        assert_eq!(
            c.handle(Tick(1), Incoming::Cancelled { id: id() }),
            Verdict::Ended { graceful: true }
        );
        assert_eq!(c.handle(Tick(2), Incoming::StreamClosed), Verdict::Nothing);
        assert_eq!(
            c.handle(Tick(2), note(Change::ToolsListChanged)),
            Verdict::Reject(Violation::AfterEnd)
        );

        let mut abrupt = client();
        let _ = abrupt.handle(Tick(0), ack(requested()));
        assert_eq!(
            abrupt.handle(Tick(1), Incoming::StreamClosed),
            Verdict::Ended { graceful: false }
        );
    }

    #[test]
    fn server_and_client_machines_agree() {
        // Whatever the server machine emits, the client machine accepts.
        let mut server = Listen::new(id(), Transport::Stdio, requested());
        let mut c = client();
        let support = ServerSupport {
            tools_list_changed: true,
            resources_subscribe: true,
            ..ServerSupport::default()
        };
        let mut sent = server.handle(Tick(0), ListenEvent::Acknowledge(support)).0;
        for change in [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourceUpdated {
                uri: "file:///a".into(),
            },
        ] {
            sent.extend(server.handle(Tick(1), ListenEvent::Change(change)).0);
        }
        sent.extend(server.handle(Tick(2), ListenEvent::ServerClosing).0);
        let verdicts: Vec<Verdict> = sent
            .into_iter()
            .map(|e| {
                let incoming = match e {
                    ListenEffect::SendAcknowledged { id, filter } => {
                        Incoming::Acknowledged { id, filter }
                    }
                    ListenEffect::SendNotification { id, change } => {
                        Incoming::Notification { id, change }
                    }
                    ListenEffect::SendClosingResult { id } => Incoming::ClosingResult { id },
                    ListenEffect::SendCancelled { id } => Incoming::Cancelled { id },
                    ListenEffect::CloseStream => Incoming::StreamClosed,
                };
                c.handle(Tick(3), incoming)
            })
            .collect();
        assert!(
            verdicts.iter().all(|v| !matches!(v, Verdict::Reject(_))),
            "{verdicts:?}"
        );
        assert_eq!(
            verdicts
                .iter()
                .filter(|v| matches!(v, Verdict::Deliver(_)))
                .count(),
            2
        );
        assert!(verdicts.contains(&Verdict::Ended { graceful: true }));
    }
}
