//! Policy isolation, hidden = unknown, search bounds and ranking, cursors (O3, O11, O12, O21,
//! O23, O28).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::value::RawValue;
use strict_mcp::core::descriptor::ContentBlock;
use strict_mcp::core::{
    Access, Caller, Clock, CoreError, CursorKey, DynamicOutput, FailureCode, Invocation, Policy,
    Registry, RegistryBuilder, ToolDef, ToolReply,
};

fn tool(name: &str, description: &str) -> ToolDef {
    ToolDef::dynamic(
        name,
        r#"{"type":"object"}"#,
        None,
        |_i: Invocation, _a: Box<RawValue>| async move {
            Ok(DynamicOutput {
                content: vec![ContentBlock::text("ran")],
                structured: None,
            })
        },
    )
    .description(description)
}

/// Tools named `<principal>.private...` are visible to that principal only; `<x>.listonly`
/// is listed but not invocable.
struct OwnerPolicy;
impl Policy for OwnerPolicy {
    fn tool(&self, caller: &Caller, name: &str) -> Access {
        if name.ends_with(".listonly") {
            return Access::ListOnly;
        }
        match name.split_once(".private") {
            Some((owner, _)) if Some(owner) != caller.principal() => Access::Hidden,
            _ => Access::Allowed,
        }
    }
}

fn registry() -> Registry {
    RegistryBuilder::new()
        .tool(tool("alice.private_notes", "Alice's notes"))
        .tool(tool("bob.private_notes", "Bob's notes"))
        .tool(tool("shared", "Shared notes"))
        .tool(tool("x.listonly", "Listed only"))
        .policy(OwnerPolicy)
        .build()
        .unwrap()
}

fn names(reg: &Registry, caller: &Caller) -> Vec<String> {
    reg.list_tools(caller, None)
        .unwrap()
        .items
        .into_iter()
        .map(|t| t.name)
        .collect()
}

#[test]
fn o3_e2_each_caller_sees_only_its_tools() {
    let reg = registry();
    assert_eq!(
        names(&reg, &Caller::new("alice")),
        ["alice.private_notes", "shared", "x.listonly"]
    );
    assert_eq!(
        names(&reg, &Caller::new("bob")),
        ["bob.private_notes", "shared", "x.listonly"]
    );
    assert_eq!(names(&reg, &Caller::anonymous()), ["shared", "x.listonly"]);
}

#[tokio::test]
async fn o23_hidden_and_unknown_are_byte_identical() {
    let reg = registry();
    let alice = || Invocation::new(Caller::new("alice"));
    let hidden = reg
        .call_tool(alice(), "bob.private_notes", None)
        .await
        .unwrap_err();
    let unknown = reg
        .call_tool(alice(), "nonexistent_tool", None)
        .await
        .unwrap_err();
    assert_eq!(hidden.code(), -32602);
    assert_eq!(unknown.code(), -32602);
    // Same shape; only the echoed name differs, so compare with the names swapped in.
    let h = hidden
        .to_error_object()
        .to_string()
        .replace("bob.private_notes", "N");
    let u = unknown
        .to_error_object()
        .to_string()
        .replace("nonexistent_tool", "N");
    assert_eq!(h, u);
    assert_eq!(h, r#"{"code":-32602,"message":"Unknown tool: N"}"#);
    // The same name hidden vs. absent from another registry: exactly the same bytes.
    let empty = RegistryBuilder::new()
        .tool(tool("shared", ""))
        .build()
        .unwrap();
    let absent = empty
        .call_tool(alice(), "bob.private_notes", None)
        .await
        .unwrap_err();
    assert_eq!(
        serde_json::to_vec(&hidden.to_error_object()).unwrap(),
        serde_json::to_vec(&absent.to_error_object()).unwrap()
    );
    assert_eq!(
        reg.tool(&Caller::new("alice"), "bob.private_notes")
            .unwrap_err(),
        absent
    );
}

#[tokio::test]
async fn o28_policy_runs_per_request() {
    let reg = registry();
    let ok = reg
        .call_tool(
            Invocation::new(Caller::new("bob")),
            "bob.private_notes",
            None,
        )
        .await
        .unwrap();
    assert!(matches!(ok, ToolReply::Success { .. }));
    let denied = reg
        .call_tool(
            Invocation::new(Caller::new("alice")),
            "bob.private_notes",
            None,
        )
        .await;
    assert!(matches!(denied, Err(CoreError::UnknownTool { .. })));
    match reg
        .call_tool(Invocation::new(Caller::new("bob")), "x.listonly", None)
        .await
        .unwrap()
    {
        ToolReply::Failure(f) => assert_eq!(f.code, FailureCode::UnavailableTool),
        other => panic!("{other:?}"),
    }
}

#[test]
fn o12_search_never_shows_hidden_tools_and_never_runs_handlers() {
    let reg = registry();
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let counted = ToolDef::dynamic(
        "counted_notes",
        r#"{"type":"object"}"#,
        None,
        move |_i: Invocation, _a: Box<RawValue>| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { Ok(DynamicOutput::default()) }
        },
    );
    let with_counter = RegistryBuilder::new().tool(counted).build().unwrap();
    let hits = with_counter
        .search_tools(&Caller::anonymous(), "notes", Some(20))
        .unwrap();
    assert_eq!(hits.tools.len(), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let hits = reg
        .search_tools(&Caller::new("alice"), "notes", None)
        .unwrap();
    let names: Vec<&str> = hits.tools.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["alice.private_notes", "shared"]);
    assert!(!hits.truncated);
}

fn many(n: usize) -> Registry {
    let mut b = RegistryBuilder::new();
    for i in 0..n {
        b = b.tool(tool(&format!("tool_{i:02}"), "does a thing"));
    }
    b.build().unwrap()
}

#[test]
fn o12_search_bounds_0_5_20_21() {
    let reg = many(30);
    let c = Caller::anonymous();
    assert!(matches!(
        reg.search_tools(&c, "thing", Some(0)),
        Err(CoreError::InvalidParams { .. })
    ));
    let d = reg.search_tools(&c, "thing", None).unwrap();
    assert_eq!(d.tools.len(), 5);
    assert!(d.truncated);
    assert_eq!(reg.search_tools(&c, "thing", Some(5)).unwrap(), d);
    let twenty = reg.search_tools(&c, "thing", Some(20)).unwrap();
    assert_eq!(twenty.tools.len(), 20);
    assert_eq!(twenty.tools[0].name, "tool_00");
    assert_eq!(twenty.tools[19].name, "tool_19");
    assert!(twenty.truncated);
    let err = reg.search_tools(&c, "thing", Some(21)).unwrap_err();
    assert_eq!(err.code(), -32602);
    assert_eq!(
        err.to_string(),
        "Invalid params: limit must be between 1 and 20"
    );
}

#[test]
fn o11_search_ranking_is_deterministic() {
    let reg = RegistryBuilder::new()
        .tool(tool("git_log", "Show commit history").keywords(["history"]))
        .tool(tool("commit", "Record changes"))
        .tool(tool("commit_search", "Find commits by message"))
        .tool(tool("unrelated", "Nothing to see"))
        .build()
        .unwrap();
    let c = Caller::anonymous();
    let order = |q: &str| -> Vec<String> {
        reg.search_tools(&c, q, Some(20))
            .unwrap()
            .tools
            .into_iter()
            .map(|h| h.name)
            .collect()
    };
    // exact name (100+5) > name word (60+5) > description only (5)
    assert_eq!(order("commit"), ["commit", "commit_search", "git_log"]);
    assert_eq!(order("history"), ["git_log"]);
    assert_eq!(order("zzz"), Vec::<String>::new());
    for _ in 0..3 {
        assert_eq!(order("commit"), ["commit", "commit_search", "git_log"]);
    }
}

/// A clock the test moves by hand.
#[derive(Debug, Default)]
struct ManualClock(AtomicU64);
impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

fn paged(clock: Arc<ManualClock>) -> Registry {
    let mut b = RegistryBuilder::new()
        .cursor_key(CursorKey::new([7; 32]))
        .clock(clock)
        .cursor_ttl_ms(1_000)
        .page_size(20);
    for i in 0..45 {
        b = b.tool(tool(&format!("t{i:02}"), ""));
    }
    b.build().unwrap()
}

#[test]
fn o21_pages_of_20_in_stable_order() {
    let reg = paged(Arc::default());
    let c = Caller::new("alice");
    let p1 = reg.list_tools(&c, None).unwrap();
    assert_eq!(p1.items.len(), 20);
    assert_eq!(p1.items[0].name, "t00");
    let p2 = reg.list_tools(&c, p1.next_cursor.as_deref()).unwrap();
    assert_eq!(p2.items[0].name, "t20");
    let p3 = reg.list_tools(&c, p2.next_cursor.as_deref()).unwrap();
    assert_eq!(p3.items.len(), 5);
    assert_eq!(p3.items[4].name, "t44");
    assert_eq!(p3.next_cursor, None);
    let body: serde_json::Value = serde_json::from_str(p3.to_result("tools").get()).unwrap();
    assert_eq!(body["ttlMs"], 0);
    assert_eq!(body["cacheScope"], "private");
    assert!(body.get("nextCursor").is_none());
}

#[test]
fn o21_cursor_tampered_other_scope_expired_is_32602() {
    let clock = Arc::new(ManualClock::default());
    let reg = paged(Arc::clone(&clock));
    let alice = Caller::new("alice");
    let cursor = reg.list_tools(&alice, None).unwrap().next_cursor.unwrap();
    // Valid for alice.
    assert!(reg.list_tools(&alice, Some(&cursor)).is_ok());
    // Tampered: flip one character.
    let mut bytes = cursor.clone().into_bytes();
    bytes[3] = if bytes[3] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    assert_eq!(
        reg.list_tools(&alice, Some(&tampered)).unwrap_err(),
        CoreError::InvalidCursor
    );
    assert_eq!(
        reg.list_tools(&alice, Some("garbage!")).unwrap_err(),
        CoreError::InvalidCursor
    );
    // Other scope.
    assert_eq!(
        reg.list_tools(&Caller::new("bob"), Some(&cursor))
            .unwrap_err(),
        CoreError::InvalidCursor
    );
    assert_eq!(
        reg.list_tools(&Caller::anonymous(), Some(&cursor))
            .unwrap_err(),
        CoreError::InvalidCursor
    );
    // Other list.
    assert_eq!(
        reg.list_prompts(&alice, Some(&cursor)).unwrap_err(),
        CoreError::InvalidCursor
    );
    // Other key (another server).
    let other = paged(Arc::clone(&clock));
    assert!(
        other.list_tools(&alice, Some(&cursor)).is_ok(),
        "same key shares cursors"
    );
    let foreign = RegistryBuilder::new()
        .tool(tool("t00", ""))
        .cursor_key(CursorKey::new([8; 32]))
        .build()
        .unwrap();
    assert_eq!(
        foreign.list_tools(&alice, Some(&cursor)).unwrap_err(),
        CoreError::InvalidCursor
    );
    // Expired.
    clock.0.store(999, Ordering::SeqCst);
    assert!(reg.list_tools(&alice, Some(&cursor)).is_ok());
    clock.0.store(1_000, Ordering::SeqCst);
    let err = reg.list_tools(&alice, Some(&cursor)).unwrap_err();
    assert_eq!(
        err.to_error_object().to_string(),
        r#"{"code":-32602,"message":"Invalid cursor"}"#
    );
}

#[test]
fn system_clock_never_goes_backwards() {
    use strict_mcp::core::SystemClock;
    let clock = SystemClock::new();
    let mut last = clock.now_ms();
    assert!(
        last > 1_700_000_000_000,
        "wall-clock milliseconds since the Unix epoch"
    );
    for _ in 0..1000 {
        let now = clock.now_ms();
        assert!(now >= last);
        last = now;
    }
}
