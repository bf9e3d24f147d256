//! Scale-out: state shared by several server instances behind a balancer.
//!
//! The 2026-07-28 revision is stateless, so any instance may serve any request; the one state
//! that must outlive a request is the continuation ledger (single-use rounds, round order,
//! expiry). [`RedisLedgerStore`] keeps it in Redis so an MRTR round started on one instance
//! resumes on another, and two instances resuming the same round concurrently dispatch at most
//! once (compare-and-swap in a server-side script). Inject it with
//! `ServerOptions::ledger_store`, and give every instance the same key ring. [`Readiness`] is the
//! probe a balancer sends: ready while serving and the store answers. [`RedisEventBus`] carries
//! listen events between instances (`ServerOptions::event_bus`): an update published on one
//! reaches the listen streams of all.

pub mod bus;
pub mod ledger;
#[cfg(all(feature = "server", feature = "http"))]
pub mod ready;
pub mod record;
pub mod tasks;

pub use bus::{
    decode_event, encode_event, BusSettings, EventDecodeError, RedisEventBus, DEFAULT_HEARTBEAT,
    MAX_BUS_MESSAGE_BYTES,
};
pub use ledger::{EpochScope, RedisLedgerStore, RedisStoreConfig, RedisStoreError};
#[cfg(all(feature = "server", feature = "http"))]
pub use ready::{NotReady, Readiness, DEFAULT_PROBE_TIMEOUT};
pub use record::{decode_chain, encode_chain, RecordCodecError, MAX_RECORD_BYTES};
pub use tasks::{RedisTaskStore, MAX_TASK_RECORD_BYTES};
