//! Random event sequences against the real machines, with unbounded ticks that may jump
//! backwards: no panics, and the safety properties of the models hold far outside the models'
//! small bounds.

use proptest::prelude::*;
use strict_mcp::machine::epoch::{CallId, EpochEffect, EpochEvent, Lifecycle, Phase as EpochPhase};
use strict_mcp::machine::ledger::{
    Binding, Chain, ChainId, InputMethod, LedgerConfig, LedgerEffect, LedgerEvent, RequestState,
    Resume, MAX_ROUNDS,
};
use strict_mcp::machine::pacer::{Number, Pacer, PacerEffect, PacerEvent, Update, MIN_INTERVAL_MS};
use strict_mcp::machine::subscriptions::{
    Change, Filter, Listen, ListenEffect, ListenEvent, ServerSupport, SubscriptionId, Transport,
};
use strict_mcp::machine::{Digest, Epoch, Tick};

#[derive(Clone, Debug)]
enum LedgerOp {
    Ask,
    Complete,
    Fail,
    Resume {
        token: usize,
        principal: bool,
        request: bool,
        answer: bool,
        epoch: u64,
    },
    Bump(u64),
    Timeout,
}

fn ledger_op() -> impl Strategy<Value = LedgerOp> {
    prop_oneof![
        3 => Just(LedgerOp::Ask),
        1 => Just(LedgerOp::Complete),
        1 => Just(LedgerOp::Fail),
        6 => (any::<usize>(), any::<bool>(), any::<bool>(), any::<bool>(), 0u64..3).prop_map(
            |(token, principal, request, answer, epoch)| LedgerOp::Resume { token, principal, request, answer, epoch }
        ),
        1 => (0u64..3).prop_map(LedgerOp::Bump),
        1 => Just(LedgerOp::Timeout),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn ledger_random_sequences(ops in proptest::collection::vec((ledger_op(), any::<u16>()), 0..80), ttl in 1u64..5_000) {
        let alice = Digest([1; 32]);
        let req = Digest([2; 32]);
        let config = LedgerConfig::with_ttl(ttl);
        let mut chain = Chain::new(ChainId([5; 16]), Binding { principal: alice, method: InputMethod::ToolsCall, request: req }, Epoch(0), config);
        let mut tokens: Vec<RequestState> = Vec::new();
        let (mut dispatches, mut completions) = (0usize, 0usize);
        for (op, t) in ops {
            let now = Tick(u64::from(t)); // arbitrary order: time may go backwards
            let effect = match op {
                LedgerOp::Ask => chain.handle(now, LedgerEvent::HandlerAsked { prompt: vec![1] }),
                LedgerOp::Complete => chain.handle(now, LedgerEvent::HandlerCompleted),
                LedgerOp::Fail => chain.handle(now, LedgerEvent::HandlerFailed),
                LedgerOp::Resume { token, principal, request, answer, epoch } => {
                    if tokens.is_empty() { continue; }
                    let state = tokens[token % tokens.len()];
                    let resume = Resume {
                        state,
                        principal: if principal { alice } else { Digest([9; 32]) },
                        method: InputMethod::ToolsCall,
                        request: if request { req } else { Digest([8; 32]) },
                        serving_epoch: Epoch(epoch),
                        answer: answer.then(|| vec![state.round]),
                    };
                    let e = chain.handle(now, LedgerEvent::Resume(resume));
                    if matches!(e, LedgerEffect::Dispatch { .. }) {
                        prop_assert!(principal && request && epoch == 0, "dispatch only for the binding and epoch");
                        prop_assert!(now.0 < state.expires.0, "dispatch only before expiry");
                        prop_assert_eq!(completions, 0, "never after completion");
                    }
                    e
                }
                LedgerOp::Bump(e) => chain.handle(now, LedgerEvent::EpochBumped(Epoch(e))),
                LedgerOp::Timeout => chain.handle_timeout(now),
            };
            match effect {
                LedgerEffect::Prompt { state, replayed: false, .. } => tokens.push(state),
                LedgerEffect::Dispatch { .. } => dispatches += 1,
                LedgerEffect::Completed => completions += 1,
                _ => {}
            }
            prop_assert!(completions <= 1);
            prop_assert!(chain.prompts_issued() <= MAX_ROUNDS);
            prop_assert_eq!(chain.answers().len(), dispatches, "one exact answer per dispatched round");
        }
    }

    #[test]
    fn epoch_random_sequences(ops in proptest::collection::vec((0u8..4, 0u64..6, any::<u16>()), 0..60), budget in 0u64..500) {
        let mut server = Lifecycle::default();
        let mut shutdown = false;
        let mut active = std::collections::BTreeSet::new();
        for (kind, call, t) in ops {
            let now = Tick(u64::from(t));
            let effects = match kind {
                0 => server.handle(now, EpochEvent::Admit(CallId(call))),
                1 => server.handle(now, EpochEvent::CallEnded(CallId(call))),
                2 => { shutdown = true; server.handle(now, EpochEvent::Shutdown { budget_ms: budget }) }
                _ => server.handle_timeout(now),
            };
            for e in effects.0 {
                match e {
                    EpochEffect::Admitted { call, epoch } => {
                        prop_assert!(!shutdown, "no admission after shutdown starts");
                        prop_assert_eq!(epoch, Epoch(0));
                        active.insert(call);
                    }
                    EpochEffect::Stopped => prop_assert_eq!(server.status().active_calls, 0),
                    EpochEffect::CleanupFailed { unfinished } => prop_assert!(unfinished > 0),
                    _ => {}
                }
            }
            if kind == 1 { active.remove(&CallId(call)); }
            prop_assert_eq!(server.status().active_calls, active.len());
            prop_assert_eq!(server.epoch(), Epoch(u64::from(shutdown)));
            if shutdown { prop_assert!(!server.is_serving()); }
            if server.status().phase == EpochPhase::Stopped { prop_assert!(active.is_empty()); }
        }
    }

    #[test]
    fn pacer_random_sequences(ops in proptest::collection::vec((0u8..6, 0u32..1_000, any::<u16>()), 0..80)) {
        let mut pacer = Pacer::new(Some("\"t\""));
        let mut running = false;
        let mut last: Option<(Tick, f64)> = None;
        for (kind, value, t) in ops {
            let now = Tick(u64::from(t));
            let effect = match kind {
                0 => { running = true; pacer.handle(now, PacerEvent::InvocationStarted) }
                1 => { running = false; pacer.handle(now, PacerEvent::InvocationEnded) }
                2 | 3 => pacer.handle(now, PacerEvent::Update(Update {
                    progress: Number::from_u64(u64::from(value)),
                    total: None,
                    message: None,
                })),
                4 => pacer.handle_timeout(now),
                _ => { running = false; pacer.handle(now, PacerEvent::CallEnded) }
            };
            if kind == 5 {
                // Once the call ended nothing restarts it.
                prop_assert!(!pacer.is_running());
            }
            if let PacerEffect::Deliver(n) = effect {
                prop_assert!(running && pacer.is_running(), "nothing outside a running invocation");
                if let Some((at, v)) = last {
                    prop_assert!(now.0 >= at.0 + MIN_INTERVAL_MS, "100 ms apart even when time jumps back");
                    prop_assert!(n.progress.value() > v, "strictly increasing");
                }
                last = Some((now, n.progress.value()));
            }
        }
    }

    #[test]
    fn listen_random_sequences(ops in proptest::collection::vec((0u8..5, 0u8..16, any::<bool>()), 0..40), stdio in any::<bool>()) {
        let requested = Filter {
            tools_list_changed: true,
            resources_list_changed: true,
            resource_subscriptions: Some(["u:a".to_string()].into_iter().collect()),
            ..Filter::default()
        };
        let transport = if stdio { Transport::Stdio } else { Transport::Http };
        let mut stream = Listen::new(SubscriptionId("1".into()), transport, requested);
        let mut log: Vec<ListenEffect> = Vec::new();
        for (kind, bits, flag) in ops {
            let event = match kind {
                0 => ListenEvent::Acknowledge(ServerSupport {
                    tools_list_changed: bits & 1 != 0,
                    prompts_list_changed: bits & 2 != 0,
                    resources_list_changed: bits & 4 != 0,
                    resources_subscribe: bits & 8 != 0,
                }),
                1 => ListenEvent::Change(match bits % 4 {
                    0 => Change::ToolsListChanged,
                    1 => Change::PromptsListChanged,
                    2 => Change::ResourcesListChanged,
                    _ => Change::ResourceUpdated { uri: if flag { "u:a".into() } else { "u:b".into() } },
                }),
                2 => ListenEvent::ClientClosed,
                3 => ListenEvent::ServerClosing,
                _ => ListenEvent::Change(Change::ToolsListChanged),
            };
            log.extend(stream.handle(Tick(0), event).0);
        }
        if let Some(first) = log.first() {
            let first_ok = matches!(first, ListenEffect::SendAcknowledged { .. } | ListenEffect::CloseStream);
            prop_assert!(first_ok, "the acknowledgement (or a silent close) comes first");
        }
        if let Some(i) = log.iter().position(|e| *e == ListenEffect::CloseStream) {
            prop_assert_eq!(i + 1, log.len(), "nothing after the close");
        }
    }
}
