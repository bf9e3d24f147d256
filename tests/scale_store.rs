//! `RedisLedgerStore` against a real redis-server: the behaviour `MemoryLedgerStore` has (one
//! table, both stores), compare-and-swap races, expiry, the record bound, credentials, and an
//! outage (typed errors, then recovery). See tests/scale_support for how Redis is found.

#![forbid(unsafe_code)]

mod scale_support;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use scale_support::{shared_redis, unique_prefix, RedisProc};
use strict_mcp::core::store::{LedgerStore, MemoryLedgerStore, StoreError};
use strict_mcp::machine::ledger::{
    Binding, Chain, ChainId, ChainRejection, InputMethod, LedgerConfig, LedgerEffect, LedgerEvent,
    Phase, RecordError, RequestState, Resume, MAX_ROUNDS,
};
use strict_mcp::machine::{Digest, Epoch, Tick};
use strict_mcp::scale::{
    decode_chain, encode_chain, EpochScope, RecordCodecError, RedisLedgerStore, RedisStoreConfig,
    RedisStoreError, MAX_RECORD_BYTES,
};

/// Concurrent-swap rounds in the race test.
const RACE_REPEATS: usize = 200;

/// Seed of the race test's jitter (fixed: a failure replays).
const RACE_SEED: u64 = 0x5eed_0020;

/// Lifetime of states in these tests.
const TTL_MS: u64 = 1_000;

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64
}

fn chain_with_ttl(id: u8, ttl: u64) -> Chain {
    let binding = Binding {
        principal: Digest([1; 32]),
        method: InputMethod::ToolsCall,
        request: Digest([2; 32]),
    };
    Chain::new(
        ChainId([id; 16]),
        binding,
        Epoch(0),
        LedgerConfig::with_ttl(ttl),
    )
}

fn chain(id: u8) -> Chain {
    chain_with_ttl(id, TTL_MS)
}

fn asked(mut c: Chain, now: u64) -> Chain {
    let e = c.handle(Tick(now), LedgerEvent::HandlerAsked { prompt: vec![1] });
    assert!(matches!(e, LedgerEffect::Prompt { .. }), "{e:?}");
    c
}

fn resume_of(c: &Chain, now: u64) -> (LedgerEffect, Chain) {
    let state = RequestState {
        chain: c.id(),
        principal: c.binding().principal,
        method: InputMethod::ToolsCall,
        request: c.binding().request,
        round: c.prompts_issued(),
        expires: match c.phase() {
            Phase::AwaitingAnswer { expires, .. } => expires,
            _ => Tick(now + TTL_MS),
        },
        epoch: c.epoch(),
    };
    let mut next = c.clone();
    let effect = next.handle(
        Tick(now),
        LedgerEvent::Resume(Resume {
            state,
            principal: c.binding().principal,
            method: InputMethod::ToolsCall,
            request: c.binding().request,
            serving_epoch: Epoch(0),
            answer: Some(b"yes".to_vec()),
        }),
    );
    (effect, next)
}

fn config(url: &str, prefix: &str) -> RedisStoreConfig {
    let mut c = RedisStoreConfig::new(url);
    c.prefix = prefix.to_owned();
    c
}

async fn redis_store(url: &str, prefix: &str) -> RedisLedgerStore {
    RedisLedgerStore::connect(config(url, prefix))
        .await
        .expect("redis store connects")
}

// ---------------------------------------------------------------------------------------------
// One behaviour table, both stores
// ---------------------------------------------------------------------------------------------

/// O52: insert, load, swap; a second writer holding the old value loses.
async fn case_insert_load_and_compare_and_swap(s: &dyn LedgerStore, t: u64) {
    let c = asked(chain(1), t);
    s.compare_and_swap(Tick(t), None, c.clone()).await.unwrap();
    assert_eq!(s.load(c.id()).await.unwrap(), Some(c.clone()));
    assert_eq!(
        s.compare_and_swap(Tick(t), None, c.clone()).await,
        Err(StoreError::Conflict)
    );
    let mut next = c.clone();
    let _ = next.handle(Tick(t + 1), LedgerEvent::EpochBumped(Epoch(1)));
    s.compare_and_swap(Tick(t + 1), Some(c.clone()), next.clone())
        .await
        .unwrap();
    assert_eq!(
        s.compare_and_swap(Tick(t + 1), Some(c), next).await,
        Err(StoreError::Conflict)
    );
    assert_eq!(s.load(ChainId([9; 16])).await.unwrap(), None);
}

/// Swapping against a value that was never stored is a conflict, not an insert.
async fn case_expected_but_absent_is_a_conflict(s: &dyn LedgerStore, t: u64) {
    let c = asked(chain(2), t);
    assert_eq!(
        s.compare_and_swap(Tick(t), Some(c.clone()), c.clone())
            .await,
        Err(StoreError::Conflict)
    );
    assert_eq!(s.load(c.id()).await.unwrap(), None);
}

/// O53: two resumes of one pending round both compute `Dispatch`; only one swap wins, and the
/// loser's reload sees the running chain (`InFlight`).
async fn case_o53_one_round_dispatches_once(s: &dyn LedgerStore, t: u64) {
    let c = asked(chain(3), t);
    s.compare_and_swap(Tick(t), None, c.clone()).await.unwrap();
    let (e1, n1) = resume_of(&c, t + 1);
    let (e2, n2) = resume_of(&c, t + 1);
    assert_eq!(e1, LedgerEffect::Dispatch { round: 1 });
    assert_eq!(e2, LedgerEffect::Dispatch { round: 1 });
    s.compare_and_swap(Tick(t + 1), Some(c.clone()), n1)
        .await
        .unwrap();
    assert_eq!(
        s.compare_and_swap(Tick(t + 1), Some(c), n2).await,
        Err(StoreError::Conflict)
    );
    let reloaded = s.load(ChainId([3; 16])).await.unwrap().unwrap();
    assert_eq!(reloaded.phase(), Phase::Running { round: 1 });
    assert_eq!(
        resume_of(&reloaded, t + 2).0,
        LedgerEffect::Rejected(ChainRejection::InFlight)
    );
}

/// A pending prompt past its expiry is still loadable until dropped, and only ever refused.
async fn case_i7_expired_prompt_is_refused(s: &dyn LedgerStore, t: u64) {
    let c = asked(chain(4), t);
    s.compare_and_swap(Tick(t), None, c.clone()).await.unwrap();
    let late = t + TTL_MS;
    let stored = s
        .load(c.id())
        .await
        .unwrap()
        .expect("kept within the grace");
    assert_eq!(
        resume_of(&stored, late).0,
        LedgerEffect::Rejected(ChainRejection::Expired)
    );
}

/// O5: a bump invalidates the kept chains: pending ones are dropped, running ones kept
/// invalidated until their handler reports.
async fn case_o5_bump_epoch_invalidates_kept_chains(s: &dyn LedgerStore, t: u64) {
    s.compare_and_swap(Tick(t), None, asked(chain(5), t))
        .await
        .unwrap();
    s.compare_and_swap(Tick(t), None, chain(6)).await.unwrap();
    s.bump_epoch(Tick(t + 1), Epoch(1)).await.unwrap();
    assert_eq!(s.load(ChainId([5; 16])).await.unwrap(), None);
    let running = s.load(ChainId([6; 16])).await.unwrap().unwrap();
    assert_eq!(running.phase(), Phase::Invalidated { running: true });
}

/// The table: every case runs on a fresh memory store and a fresh Redis prefix.
#[tokio::test]
async fn o52_memory_and_redis_stores_pass_one_behaviour_table() {
    let Some((url, _guard)) = shared_redis() else {
        return;
    };
    macro_rules! table {
        ($($case:ident),* $(,)?) => {
            $(
                let t = wall_ms();
                case_memory_and_redis(stringify!($case), &url, t, |s| Box::pin($case(s, t))).await;
            )*
        };
    }
    table!(
        case_insert_load_and_compare_and_swap,
        case_expected_but_absent_is_a_conflict,
        case_o53_one_round_dispatches_once,
        case_i7_expired_prompt_is_refused,
        case_o5_bump_epoch_invalidates_kept_chains,
    );
}

type CaseFuture<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + 'a>>;

async fn case_memory_and_redis(
    name: &str,
    url: &str,
    _t: u64,
    case: impl for<'a> Fn(&'a dyn LedgerStore) -> CaseFuture<'a>,
) {
    eprintln!("case {name}: memory");
    let memory = MemoryLedgerStore::new(16);
    case(&memory).await;
    eprintln!("case {name}: redis");
    let redis = redis_store(url, &unique_prefix(name)).await;
    case(&redis).await;
}

// ---------------------------------------------------------------------------------------------
// Redis specifics
// ---------------------------------------------------------------------------------------------

/// Two instances (two connections) swap the same expected value at once: exactly one wins,
/// every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o53_concurrent_swaps_on_one_value_have_exactly_one_winner() {
    let Some((url, _guard)) = shared_redis() else {
        return;
    };
    let prefix = unique_prefix("race");
    let a = Arc::new(redis_store(&url, &prefix).await);
    let b = Arc::new(redis_store(&url, &prefix).await);
    let mut rng = RACE_SEED;
    for i in 0..RACE_REPEATS {
        let t = wall_ms();
        let id = (i % 200) as u8;
        let base = asked(chain_with_ttl(id, TTL_MS), t);
        let key_free = a.load(base.id()).await.unwrap().is_none();
        let expected = if key_free {
            a.compare_and_swap(Tick(t), None, base.clone())
                .await
                .unwrap();
            base.clone()
        } else {
            a.load(base.id()).await.unwrap().unwrap()
        };
        let (_, next) = resume_of(&expected, t + 1);
        // xorshift: how many times each side yields before swapping.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let (ya, yb) = (rng % 3, (rng >> 8) % 3);
        let race = |s: Arc<RedisLedgerStore>, yields: u64| {
            let (expected, next) = (expected.clone(), next.clone());
            tokio::spawn(async move {
                for _ in 0..yields {
                    tokio::task::yield_now().await;
                }
                s.compare_and_swap(Tick(t + 1), Some(expected), next).await
            })
        };
        let (ra, rb) = (race(Arc::clone(&a), ya), race(Arc::clone(&b), yb));
        let results = [ra.await.unwrap(), rb.await.unwrap()];
        let wins = results.iter().filter(|r| r.is_ok()).count();
        let conflicts = results
            .iter()
            .filter(|r| **r == Err(StoreError::Conflict))
            .count();
        assert_eq!((wins, conflicts), (1, 1), "round {i}: {results:?}");
        assert_eq!(a.load(base.id()).await.unwrap(), Some(next));
    }
}

/// The key carries the prefix and a hash tag around the full chain id.
#[tokio::test]
async fn keys_are_prefixed_and_hash_tagged() {
    let Some((url, _guard)) = shared_redis() else {
        return;
    };
    let s = redis_store(&url, "p:").await;
    let mut id = [0u8; 16];
    id[0] = 0xab;
    id[15] = 0x01;
    assert_eq!(
        s.key(ChainId(id)),
        "p:chain:{ab000000000000000000000000000001}"
    );
}

/// Prefixes and databases separate deployments sharing one Redis.
#[tokio::test]
async fn prefix_and_database_isolate_records() {
    let Some((url, _guard)) = shared_redis() else {
        return;
    };
    let t = wall_ms();
    let prefix = unique_prefix("iso");
    let a = redis_store(&url, &prefix).await;
    let other_prefix = redis_store(&url, &unique_prefix("iso2")).await;
    let mut db1 = config(&url, &prefix);
    db1.db = Some(1);
    let other_db = RedisLedgerStore::connect(db1).await.unwrap();
    let c = asked(chain(7), t);
    a.compare_and_swap(Tick(t), None, c.clone()).await.unwrap();
    assert_eq!(a.load(c.id()).await.unwrap(), Some(c.clone()));
    assert_eq!(other_prefix.load(c.id()).await.unwrap(), None);
    assert_eq!(other_db.load(c.id()).await.unwrap(), None);
}

/// Expiry comes from the chain's own deadline: the record lives until the pending prompt's
/// expiry plus the grace, then it is gone (and an absent chain is refused by the server).
/// No fixed sleep: Redis expires a key on access by the same wall clock, so each load is
/// checked against the time around it (present only if it began by the deadline, absent only
/// if it ended after it), polling until the record is gone (a generous bound, never an
/// upper bound on the time taken).
#[tokio::test]
async fn i7_record_expires_at_the_chains_deadline_plus_grace() {
    let Some((url, _guard)) = shared_redis() else {
        return;
    };
    let mut cfg = config(&url, &unique_prefix("expiry"));
    cfg.grace_ms = 100;
    let s = RedisLedgerStore::connect(cfg).await.unwrap();
    let t = wall_ms();
    let c = asked(chain_with_ttl(8, 300), t);
    s.compare_and_swap(Tick(t), None, c.clone()).await.unwrap();
    // The prompt expires at t + 300; the record outlives it by the grace (and is refused by
    // the machine meanwhile).
    let deadline = t + 300 + 100;
    let bound = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let before = wall_ms();
        let found = s.load(c.id()).await.unwrap();
        let after = wall_ms();
        match found {
            Some(found) => {
                assert_eq!(found, c);
                assert!(
                    before <= deadline,
                    "still kept at {before}, past {deadline}"
                );
            }
            None => {
                assert!(after > deadline, "gone at {after}, before {deadline}");
                break;
            }
        }
        assert!(std::time::Instant::now() < bound, "never expired");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The record bound: a chain encoding to exactly MAX_RECORD_BYTES is stored and read back; one
/// byte more is refused (Full), and nothing is written.
#[tokio::test]
async fn record_bound_at_and_one_past_max_record_bytes() {
    let Some((url, _guard)) = shared_redis() else {
        return;
    };
    let s = redis_store(&url, &unique_prefix("bound")).await;
    let t = wall_ms();
    let with_prompt = |id: u8, len: usize| {
        let mut c = chain(id);
        let _ = c.handle(
            Tick(t),
            LedgerEvent::HandlerAsked {
                prompt: vec![b'x'; len],
            },
        );
        c
    };
    let overhead = encode_chain(&with_prompt(1, 0)).unwrap().len();
    let at = with_prompt(10, MAX_RECORD_BYTES - overhead);
    let past = with_prompt(11, MAX_RECORD_BYTES - overhead + 1);
    assert_eq!(encode_chain(&at).unwrap().len(), MAX_RECORD_BYTES);
    assert_eq!(
        encode_chain(&past),
        Err(RecordCodecError::TooLarge(MAX_RECORD_BYTES + 1))
    );
    assert_eq!(decode_chain(&encode_chain(&at).unwrap()), Ok(at.clone()));
    s.compare_and_swap(Tick(t), None, at.clone()).await.unwrap();
    assert_eq!(s.load(at.id()).await.unwrap(), Some(at));
    assert_eq!(
        s.compare_and_swap(Tick(t), None, past.clone()).await,
        Err(StoreError::Full)
    );
    assert_eq!(
        s.swap_chain(Tick(t), None, &past).await,
        Err(RedisStoreError::RecordTooLarge(MAX_RECORD_BYTES + 1))
    );
    assert_eq!(s.load(past.id()).await.unwrap(), None);
}

/// Corrupt bytes decode to a typed error, never a panic or a chain.
#[test]
fn corrupt_records_are_typed_errors() {
    let good = encode_chain(&asked(chain(1), 1_000)).unwrap();
    assert_eq!(decode_chain(&good), Ok(asked(chain(1), 1_000)));
    for cut in 0..good.len() {
        assert!(decode_chain(&good[..cut]).is_err(), "truncated at {cut}");
    }
    let mut bad_version = good.clone();
    bad_version[0] = 9;
    assert!(matches!(
        decode_chain(&bad_version),
        Err(RecordCodecError::Malformed(_))
    ));
    let mut trailing = good;
    trailing.push(0);
    assert_eq!(
        decode_chain(&trailing),
        Err(RecordCodecError::Malformed("trailing bytes"))
    );
}

/// A record no event sequence could produce is refused when rebuilt (round limit, answers
/// beyond prompts, phase rounds that disagree with what was kept).
#[test]
fn o54_from_record_refuses_impossible_chains() {
    let good = asked(chain(1), 1_000).to_record();
    assert_eq!(Chain::from_record(good.clone()), Ok(asked(chain(1), 1_000)));
    let mut r = good.clone();
    r.issued = MAX_ROUNDS;
    r.phase = Phase::Completed;
    assert!(Chain::from_record(r.clone()).is_ok(), "at the round limit");
    r.issued = MAX_ROUNDS + 1;
    assert_eq!(
        Chain::from_record(r),
        Err(RecordError("more prompts than the round limit"))
    );
    let mut r = good.clone();
    r.answers = vec![vec![1], vec![2]];
    assert_eq!(
        Chain::from_record(r),
        Err(RecordError("more answers than prompts"))
    );
    let mut r = good.clone();
    r.phase = Phase::Running { round: 1 };
    assert_eq!(
        Chain::from_record(r),
        Err(RecordError("running round differs from the answers kept"))
    );
    let mut r = good;
    r.phase = Phase::AwaitingAnswer {
        round: 2,
        expires: Tick(2_000),
    };
    assert_eq!(
        Chain::from_record(r),
        Err(RecordError("pending round differs from the prompts issued"))
    );
}

/// Epoch scopes across instances: one instance's bump (its shutdown) invalidates the chains it
/// created and no other; the fleet bump invalidates them all.
#[tokio::test]
async fn o5_instance_bump_touches_own_chains_fleet_bump_touches_all() {
    let Some((url, _guard)) = shared_redis() else {
        return;
    };
    let prefix = unique_prefix("epoch");
    let a = redis_store(&url, &prefix).await;
    let b = redis_store(&url, &prefix).await;
    let t = wall_ms();
    a.compare_and_swap(Tick(t), None, asked(chain(1), t))
        .await
        .unwrap();
    b.compare_and_swap(Tick(t), None, asked(chain(2), t))
        .await
        .unwrap();
    a.bump_epoch(Tick(t + 1), Epoch(1)).await.unwrap();
    assert_eq!(b.load(ChainId([1; 16])).await.unwrap(), None);
    assert_eq!(
        a.load(ChainId([2; 16])).await.unwrap(),
        Some(asked(chain(2), t)),
        "another instance's chain is untouched"
    );
    assert_eq!(
        a.bump_epoch_scoped(Tick(t + 2), Epoch(1), EpochScope::Fleet)
            .await,
        Ok(1)
    );
    assert_eq!(a.load(ChainId([2; 16])).await.unwrap(), None);
    assert_eq!(a.sweep(Tick(t + 3)).await, Ok(0));
}

/// No password reaches `Debug`, nor an error; AUTH and ACL user + password both work.
#[tokio::test]
async fn credentials_never_show_and_auth_and_acl_work() {
    if !scale_support::redis_available() {
        return;
    }
    let secret = "s3cret-Pa55";
    let server = RedisProc::start(&["--requirepass", secret]);
    let url = format!("redis://:{secret}@127.0.0.1:{}/", server.port);
    let mut cfg = config(&url, "auth:");
    cfg.password = Some(secret.to_owned());
    let debug = format!("{cfg:?}");
    assert!(!debug.contains(secret), "{debug}");
    assert!(debug.contains("<redacted>"), "{debug}");

    let store = RedisLedgerStore::connect(cfg.clone()).await.expect("AUTH");
    let debug = format!("{store:?}");
    assert!(!debug.contains(secret), "{debug}");
    let t = wall_ms();
    store
        .compare_and_swap(Tick(t), None, asked(chain(1), t))
        .await
        .unwrap();

    // A wrong password: a typed failure that names neither password.
    let mut wrong = config(&server.url(), "auth:");
    wrong.password = Some("wr0ng-Pa55".into());
    wrong.connect_timeout = Duration::from_millis(300);
    // The manager retries the handshake with backoff, so the refusal surfaces as either.
    let err = RedisLedgerStore::connect(wrong).await.unwrap_err();
    assert!(
        matches!(
            err,
            RedisStoreError::Unavailable(_) | RedisStoreError::Timeout(_)
        ),
        "{err:?}"
    );
    let text = format!("{err} {err:?}");
    assert!(
        !text.contains("wr0ng-Pa55") && !text.contains(secret),
        "{text}"
    );

    // An ACL user limited to the prefix.
    let mut admin = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "app", "on", ">app-Pa55", "~acl:*", "+@all"])
        .query_async(&mut admin)
        .await
        .unwrap();
    let mut acl = config(&server.url(), "acl:");
    acl.username = Some("app".into());
    acl.password = Some("app-Pa55".into());
    let app = RedisLedgerStore::connect(acl).await.expect("ACL user");
    app.compare_and_swap(Tick(t), None, asked(chain(2), t))
        .await
        .unwrap();
    assert!(app.load(ChainId([2; 16])).await.unwrap().is_some());
}

/// `rediss://` needs the TLS feature; without it the configuration is refused, typed.
#[cfg(not(feature = "redis-tls"))]
#[tokio::test]
async fn rediss_without_the_tls_feature_is_a_config_error() {
    let err = RedisLedgerStore::connect(RedisStoreConfig::new("rediss://:pw@127.0.0.1:1/"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        RedisStoreError::Config("rediss:// needs the redis-tls feature".into())
    );
}

/// Redis stopped mid-operation: loads and swaps fail typed (never `Ok`, never "absent"); Redis
/// back: the store works again without being rebuilt.
#[tokio::test]
async fn outage_is_a_typed_error_and_the_store_recovers() {
    if !scale_support::redis_available() {
        return;
    }
    let mut server = RedisProc::start(&[]);
    let mut cfg = config(&server.url(), "outage:");
    cfg.op_timeout = Duration::from_millis(500);
    cfg.connect_timeout = Duration::from_millis(200);
    cfg.backoff_max = Duration::from_millis(100);
    let s = RedisLedgerStore::connect(cfg).await.unwrap();
    let t = wall_ms();
    let c = asked(chain(1), t);
    s.compare_and_swap(Tick(t), None, c.clone()).await.unwrap();

    server.stop();
    // Refused or not answered in time (reconnecting): an outage either way, never `Ok`.
    let loaded = s.load(c.id()).await;
    assert!(matches!(&loaded, Err(e) if e.is_outage()), "{loaded:?}");
    let (_, next) = resume_of(&c, t + 1);
    let swapped = s.compare_and_swap(Tick(t + 1), Some(c.clone()), next).await;
    assert!(matches!(&swapped, Err(e) if e.is_outage()), "{swapped:?}");
    let typed = s.load_chain(c.id()).await.unwrap_err();
    assert!(
        matches!(
            typed,
            RedisStoreError::Unavailable(_) | RedisStoreError::Timeout(_)
        ),
        "{typed:?}"
    );

    server.restart();
    // The manager reconnects with backoff; within a bounded wait the store answers again (an
    // empty Redis: nothing was persisted, so the old chain is absent and a new one is stored).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let fresh = asked(chain(2), wall_ms());
    loop {
        match s
            .compare_and_swap(Tick(wall_ms()), None, fresh.clone())
            .await
        {
            Ok(()) => break,
            Err(e) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "never recovered: {e:?}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    assert_eq!(s.load(fresh.id()).await.unwrap(), Some(fresh));
    assert_eq!(s.load(c.id()).await.unwrap(), None);
}
