//! Model of one `subscriptions/listen` stream (K-section, O6). `next_state` clones the real
//! `strict_mcp::machine::subscriptions::Listen` and calls its `handle`; the model chooses what the
//! server supports, which changes happen, and whether the client or the server ends the stream.
//! Every emitted message is appended to a ghost log that the properties read.

#[path = "common/mod.rs"]
mod common;

use stateright::{Checker, Model, Property};
use strict_mcp::machine::subscriptions::{
    Change, ClientListen, Filter, Incoming, Listen, ListenEffect, ListenEvent, ListenFaults,
    ServerSupport, SubscriptionId, Transport, Verdict,
};
use strict_mcp::machine::Tick;

const ID: &str = "7";

#[derive(Clone, Debug)]
struct ListenModel {
    faults: ListenFaults,
    max_messages: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    stream: Listen,
    /// Everything sent on the stream, in order.
    log: Vec<ListenEffect>,
    /// The strict client's view of the same stream, fed every message.
    client: ClientListen,
    /// The client refused a message the server sent.
    client_rejected: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Action {
    Ack(ServerSupport),
    Change(Change),
    ClientClosed,
    ServerClosing,
}

fn requested() -> Filter {
    Filter {
        tools_list_changed: true,
        prompts_list_changed: false,
        resources_list_changed: true,
        resource_subscriptions: Some(["file:///a".to_string()].into_iter().collect()),
    }
}

fn changes() -> [Change; 5] {
    [
        Change::ToolsListChanged,
        Change::PromptsListChanged,
        Change::ResourcesListChanged,
        Change::ResourceUpdated {
            uri: "file:///a".into(),
        },
        Change::ResourceUpdated {
            uri: "file:///b".into(),
        },
    ]
}

/// The acknowledged filter, if the log has an acknowledgement.
fn acked(log: &[ListenEffect]) -> Option<(usize, &Filter)> {
    log.iter().enumerate().find_map(|(i, e)| match e {
        ListenEffect::SendAcknowledged { filter, .. } => Some((i, filter)),
        _ => None,
    })
}

impl Model for ListenModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        [Transport::Http, Transport::Stdio]
            .into_iter()
            .map(|t| State {
                stream: Listen::with_faults(SubscriptionId(ID.into()), t, requested(), self.faults),
                log: Vec::new(),
                client: ClientListen::new(SubscriptionId(ID.into()), requested()),
                client_rejected: false,
            })
            .collect()
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        if s.log.len() >= self.max_messages {
            return;
        }
        for bits in 0u8..16 {
            actions.push(Action::Ack(ServerSupport {
                tools_list_changed: bits & 1 != 0,
                prompts_list_changed: bits & 2 != 0,
                resources_list_changed: bits & 4 != 0,
                resources_subscribe: bits & 8 != 0,
            }));
        }
        actions.extend(changes().into_iter().map(Action::Change));
        actions.extend([Action::ClientClosed, Action::ServerClosing]);
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        let event = match action {
            Action::Ack(support) => ListenEvent::Acknowledge(support),
            Action::Change(c) => ListenEvent::Change(c),
            Action::ClientClosed => ListenEvent::ClientClosed,
            Action::ServerClosing => ListenEvent::ServerClosing,
        };
        let effects = s.stream.handle(Tick(0), event);
        for e in effects.0 {
            let incoming = match e.clone() {
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
            s.client_rejected |= matches!(s.client.handle(Tick(0), incoming), Verdict::Reject(_));
            s.log.push(e);
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(
                "K3: no notification precedes its acknowledgement",
                |_, s: &State| {
                    let first_ack = acked(&s.log).map_or(usize::MAX, |(i, _)| i);
                    s.log.iter().enumerate().all(|(i, e)| {
                        !matches!(e, ListenEffect::SendNotification { .. }) || i > first_ack
                    })
                },
            ),
            Property::always(
                "K2/K3: every notification matches the acknowledged filter",
                |_, s: &State| {
                    s.log.iter().all(|e| match e {
                        ListenEffect::SendNotification { change, .. } => {
                            acked(&s.log).is_some_and(|(_, f)| f.admits(change))
                        }
                        _ => true,
                    })
                },
            ),
            Property::always(
                "K3/K13: the acknowledged filter is a subset of the requested one",
                |_, s: &State| {
                    acked(&s.log).is_none_or(|(_, f)| {
                        let r = requested();
                        (!f.tools_list_changed || r.tools_list_changed)
                            && (!f.prompts_list_changed || r.prompts_list_changed)
                            && (!f.resources_list_changed || r.resources_list_changed)
                            && (f.resource_subscriptions.is_none()
                                || f.resource_subscriptions == r.resource_subscriptions)
                    })
                },
            ),
            Property::always(
                "K4: every message carries the subscription id",
                |_, s: &State| {
                    s.log.iter().all(|e| match e {
                        ListenEffect::SendAcknowledged { id, .. }
                        | ListenEffect::SendNotification { id, .. }
                        | ListenEffect::SendClosingResult { id }
                        | ListenEffect::SendCancelled { id } => id.0 == ID,
                        ListenEffect::CloseStream => true,
                    })
                },
            ),
            Property::always("K3: at most one acknowledgement", |_, s: &State| {
                s.log
                    .iter()
                    .filter(|e| matches!(e, ListenEffect::SendAcknowledged { .. }))
                    .count()
                    <= 1
            }),
            Property::always("K10: nothing follows the close", |_, s: &State| {
                s.log
                    .iter()
                    .position(|e| *e == ListenEffect::CloseStream)
                    .is_none_or(|i| i + 1 == s.log.len())
            }),
            Property::always(
                "K10/S2: the closing result is the last message before the close",
                |_, s: &State| match s
                    .log
                    .iter()
                    .position(|e| matches!(e, ListenEffect::SendClosingResult { .. }))
                {
                    None => true,
                    Some(i) => s.log[i + 1..].iter().all(|e| {
                        matches!(
                            e,
                            ListenEffect::SendCancelled { .. } | ListenEffect::CloseStream
                        )
                    }),
                },
            ),
            Property::always(
                "K7: the strict client accepts everything the server sends",
                |_, s: &State| !s.client_rejected,
            ),
            Property::sometimes("K12: a notification is delivered", |_, s: &State| {
                s.log
                    .iter()
                    .any(|e| matches!(e, ListenEffect::SendNotification { .. }))
            }),
            Property::sometimes(
                "O6/S2: shutdown closes with result and cancelled on stdio",
                |_, s: &State| {
                    s.log
                        .iter()
                        .any(|e| matches!(e, ListenEffect::SendCancelled { .. }))
                },
            ),
            Property::sometimes(
                "O6/K10: shutdown closes with the listen result",
                |_, s: &State| {
                    s.log
                        .iter()
                        .any(|e| matches!(e, ListenEffect::SendClosingResult { .. }))
                },
            ),
        ]
    }
}

fn model(faults: ListenFaults) -> ListenModel {
    ListenModel {
        faults,
        max_messages: if common::deep() { 6 } else { 4 },
    }
}

/// Pinned so an unintended change to the machine or the model shows up as a diff here.
const PINNED_LISTEN_STATES: usize = 378;

#[test]
fn listen_model_holds_all_properties() {
    let checker = common::explore("subscriptions", model(ListenFaults::default()));
    checker.assert_properties();
    if !common::deep() {
        assert_eq!(checker.unique_state_count(), PINNED_LISTEN_STATES);
    }
}

#[test]
fn planted_notify_before_ack_is_caught() {
    let faults = ListenFaults {
        notify_before_ack: true,
    };
    common::hunt(
        "notify_before_ack",
        model(faults),
        "K3: no notification precedes its acknowledgement",
    );
}

#[test]
fn planted_notify_before_ack_is_also_refused_by_the_strict_client() {
    let faults = ListenFaults {
        notify_before_ack: true,
    };
    common::hunt(
        "notify_before_ack (client view)",
        model(faults),
        "K7: the strict client accepts everything the server sends",
    );
}
