//! Shared helpers for the stateright models: run a full BFS with timing, hunt a planted bug.

#![allow(dead_code)] // each model uses a subset

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::hash::Hash;
use std::time::Instant;

use stateright::{Checker, HasDiscoveries, Model, Path};

/// `STRICT_MCP_DEEP_MODELS=1` widens every model's bounds (more time steps, callers, rounds);
/// pinned state counts are then not asserted. See models/README.md.
pub fn deep() -> bool {
    std::env::var_os("STRICT_MCP_DEEP_MODELS").is_some_and(|v| v != "0")
}

/// Exhaustive BFS; prints states explored and elapsed time.
pub fn explore<M>(label: &str, model: M) -> impl Checker<M>
where
    M: Model + Send + Sync + 'static,
    M::State: Hash + Send + Sync + Clone + PartialEq + Debug + 'static,
    M::Action: Clone + PartialEq + Debug,
{
    let start = Instant::now();
    let checker = model.checker().spawn_bfs().join();
    println!(
        "model {label}: {} unique states ({} generated), max depth {}, {:.2?}",
        checker.unique_state_count(),
        checker.state_count(),
        checker.max_depth(),
        start.elapsed()
    );
    for (name, path) in checker.discoveries() {
        println!("  discovery {name:?}: {} steps", path.into_actions().len());
    }
    checker
}

/// BFS until `property` has a discovery; returns its counterexample path (panics if none).
pub fn hunt<M>(label: &str, model: M, property: &'static str) -> Path<M::State, M::Action>
where
    M: Model + Send + Sync + 'static,
    M::State: Hash + Send + Sync + Clone + PartialEq + Debug + 'static,
    M::Action: Clone + PartialEq + Debug,
{
    let start = Instant::now();
    let checker = model
        .checker()
        .finish_when(HasDiscoveries::AnyOf(BTreeSet::from([property])))
        .spawn_bfs()
        .join();
    let path = checker
        .discovery(property)
        .unwrap_or_else(|| panic!("planted bug {label}: no counterexample for {property:?}"));
    println!(
        "planted bug {label}: {property:?} violated after {} steps ({} states, {:.2?}): {:?}",
        path.clone().into_actions().len(),
        checker.unique_state_count(),
        start.elapsed(),
        path.clone().into_actions()
    );
    path
}
