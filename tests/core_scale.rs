//! Costs that grow with the registry (issue #23): a `tools/list` page asks the per-caller
//! policy only about the tools up to its end plus one (O21 pages, O28 policy on every
//! request), not about the whole catalogue, and the lazy walk keeps the cursor rules: a
//! cursor exactly at the end of what the caller sees gives an empty last page, one past it
//! is -32602. `search_tools` asks it only about the matches that decide its answer.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::value::RawValue;
use strict_mcp::core::descriptor::ContentBlock;
use strict_mcp::core::{
    Access, Caller, CoreError, CursorKey, DynamicOutput, Invocation, Policy, Registry,
    RegistryBuilder, ToolDef, DEFAULT_PAGE_SIZE,
};

fn tool(name: &str) -> ToolDef {
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
}

/// Counts every question; with `narrow` set, only tools whose number is below 20 are
/// visible (so what one caller sees can shrink between two requests, O28).
#[derive(Default)]
struct Counting {
    asked: AtomicUsize,
    narrow: AtomicBool,
}

struct Shared(Arc<Counting>);
impl Policy for Shared {
    fn tool(&self, _caller: &Caller, name: &str) -> Access {
        self.0.asked.fetch_add(1, Ordering::SeqCst);
        let n: usize = name.trim_start_matches('t').parse().unwrap_or(usize::MAX);
        if self.0.narrow.load(Ordering::SeqCst) && n >= 20 {
            Access::Hidden
        } else {
            Access::Allowed
        }
    }
}

fn registry(n: usize, policy: &Arc<Counting>) -> Registry {
    let mut b = RegistryBuilder::new()
        .cursor_key(CursorKey::new([3; 32]))
        .policy(Shared(policy.clone()));
    for i in 0..n {
        b = b.tool(tool(&format!("t{i:05}")));
    }
    b.build().unwrap()
}

/// How many policy questions one `list_tools` asked.
fn asked_during<T>(policy: &Counting, f: impl FnOnce() -> T) -> (T, usize) {
    let before = policy.asked.load(Ordering::SeqCst);
    let out = f();
    (out, policy.asked.load(Ordering::SeqCst) - before)
}

#[test]
fn o21_o28_a_page_of_a_10k_tool_registry_asks_the_policy_only_up_to_its_end() {
    let policy = Arc::new(Counting::default());
    let reg = registry(10_000, &policy);
    let caller = Caller::new("alice");
    let (p1, asked) = asked_during(&policy, || reg.list_tools(&caller, None).unwrap());
    assert_eq!(p1.items.len(), DEFAULT_PAGE_SIZE);
    assert_eq!(p1.items[0].name, "t00000");
    // The page's 20 tools and one more to know whether a next page exists.
    assert_eq!(asked, DEFAULT_PAGE_SIZE + 1);
    let (p2, asked) = asked_during(&policy, || {
        reg.list_tools(&caller, p1.next_cursor.as_deref()).unwrap()
    });
    assert_eq!(p2.items[0].name, "t00020");
    assert_eq!(asked, 2 * DEFAULT_PAGE_SIZE + 1);
    // The policy still runs on every request (O28): the same page asks again.
    let (_, asked) = asked_during(&policy, || reg.list_tools(&caller, None).unwrap());
    assert_eq!(asked, DEFAULT_PAGE_SIZE + 1);
}

/// At the bound: 40 tools make exactly two full pages and no third; one past (41) makes a
/// third page of one.
#[test]
fn o21_the_lookahead_finds_a_next_page_at_40_and_41_tools() {
    let caller = Caller::new("alice");
    for (n, last_page) in [(40usize, None), (41, Some(1usize))] {
        let policy = Arc::new(Counting::default());
        let reg = registry(n, &policy);
        let p1 = reg.list_tools(&caller, None).unwrap();
        let p2 = reg.list_tools(&caller, p1.next_cursor.as_deref()).unwrap();
        assert_eq!(p2.items.len(), DEFAULT_PAGE_SIZE, "{n} tools");
        assert_eq!(p2.items[19].name, "t00039");
        match last_page {
            None => assert_eq!(p2.next_cursor, None, "{n} tools"),
            Some(len) => {
                let p3 = reg.list_tools(&caller, p2.next_cursor.as_deref()).unwrap();
                assert_eq!(p3.items.len(), len);
                assert_eq!(p3.items[0].name, "t00040");
                assert_eq!(p3.next_cursor, None);
            }
        }
    }
}

/// A cursor minted while 45 tools were visible, used after the policy narrowed the view to
/// 20 (O28): exactly at the end is an empty last page; past the end is -32602.
#[test]
fn o21_o28_a_cursor_at_the_end_of_a_narrowed_view_is_empty_and_past_it_is_refused() {
    let policy = Arc::new(Counting::default());
    let reg = registry(45, &policy);
    let caller = Caller::new("alice");
    let p1 = reg.list_tools(&caller, None).unwrap();
    let p2 = reg.list_tools(&caller, p1.next_cursor.as_deref()).unwrap();
    policy.narrow.store(true, Ordering::SeqCst);
    let at_end = reg.list_tools(&caller, p1.next_cursor.as_deref()).unwrap();
    assert!(at_end.items.is_empty());
    assert_eq!(at_end.next_cursor, None);
    assert_eq!(
        reg.list_tools(&caller, p2.next_cursor.as_deref())
            .unwrap_err(),
        CoreError::InvalidCursor
    );
}

/// `search_tools` over 10 000 tools asks the policy only about the matches that decide the
/// answer (O28): one for a query one tool matches, the limit and one more for a query every
/// tool matches with the same score, and the answer is the same as before the index.
#[test]
fn o28_search_over_10k_tools_asks_the_policy_only_about_deciding_matches() {
    let policy = Arc::new(Counting::default());
    let reg = registry(10_000, &policy);
    let caller = Caller::new("alice");
    let (one, asked) = asked_during(&policy, || {
        reg.search_tools(&caller, "t05000", None).unwrap()
    });
    let names: Vec<&str> = one.tools.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["t05000"]);
    assert!(!one.truncated);
    assert_eq!(asked, 1);
    let (every, asked) = asked_during(&policy, || {
        reg.search_tools(&caller, "t", Some(20)).unwrap()
    });
    let names: Vec<String> = every.tools.iter().map(|h| h.name.clone()).collect();
    let expected: Vec<String> = (0..20).map(|i| format!("t{i:05}")).collect();
    assert_eq!(names, expected);
    assert!(every.truncated);
    assert_eq!(asked, 21);
    // Narrowed: the hidden matches are asked about and left out; t00019 is the last visible.
    policy.narrow.store(true, Ordering::SeqCst);
    let (narrow, asked) = asked_during(&policy, || {
        reg.search_tools(&caller, "t", Some(20)).unwrap()
    });
    assert_eq!(narrow.tools.len(), 20);
    assert!(!narrow.truncated);
    assert_eq!(asked, 10_000);
}
