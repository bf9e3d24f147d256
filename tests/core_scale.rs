//! Costs that grow with the registry (issue #23): a `tools/list` page seeks to the last name
//! its cursor carries and asks the per-caller policy only about its own candidates (its
//! tools, hidden ones among them, and one more to know whether a next page exists: O21
//! pages, O28 policy on every request), wherever the page lies in the catalogue; and
//! `search_tools` asks it only about the matches that decide its answer.

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
    // The second page seeks to its cursor's name: it asks about its own 21 too.
    assert_eq!(asked, DEFAULT_PAGE_SIZE + 1);
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

/// Walks every page of 10 000 tools: the first, a middle (page 250) and the last page
/// (500) each ask the policy 21 times (20 on the last: no next tool), the pages together
/// serve every tool exactly once, in name order, and ask 10 000 + 499 questions in all,
/// where offset cursors asked about every earlier tool again (Σ 20k + 21, ≈ 2.5 M).
#[test]
fn o21_o28_the_first_a_middle_and_the_last_page_of_10k_tools_cost_the_same() {
    let policy = Arc::new(Counting::default());
    let reg = registry(10_000, &policy);
    let caller = Caller::new("alice");
    let mut cursor: Option<String> = None;
    let mut served = Vec::new();
    let mut total = 0;
    for page in 1..=500usize {
        let (p, asked) = asked_during(&policy, || {
            reg.list_tools(&caller, cursor.as_deref()).unwrap()
        });
        total += asked;
        assert_eq!(p.items.len(), DEFAULT_PAGE_SIZE, "page {page}");
        assert_eq!(
            p.items[0].name,
            format!("t{:05}", (page - 1) * DEFAULT_PAGE_SIZE)
        );
        if page == 500 {
            assert_eq!(asked, DEFAULT_PAGE_SIZE, "the last page has no lookahead");
            assert_eq!(p.next_cursor, None);
        } else {
            assert_eq!(asked, DEFAULT_PAGE_SIZE + 1, "page {page}");
            assert!(p.next_cursor.is_some(), "page {page}");
        }
        served.extend(p.items.into_iter().map(|t| t.name));
        cursor = p.next_cursor;
    }
    assert_eq!(total, 10_000 + 499);
    let expected: Vec<String> = (0..10_000).map(|i| format!("t{i:05}")).collect();
    assert_eq!(served, expected);
}

/// Hidden tools among a page's candidates are asked about and skipped, never served; the
/// next page starts after the last name served, not after the hidden ones.
#[test]
fn o28_hidden_tools_between_pages_are_skipped_and_the_walk_resumes_by_name() {
    struct EveryThird(Arc<Counting>);
    impl Policy for EveryThird {
        fn tool(&self, _caller: &Caller, name: &str) -> Access {
            self.0.asked.fetch_add(1, Ordering::SeqCst);
            let n: usize = name.trim_start_matches('t').parse().unwrap();
            if n % 3 == 2 {
                Access::Hidden
            } else {
                Access::Allowed
            }
        }
    }
    let counting = Arc::new(Counting::default());
    let mut b = RegistryBuilder::new()
        .cursor_key(CursorKey::new([3; 32]))
        .policy(EveryThird(counting.clone()));
    for i in 0..100 {
        b = b.tool(tool(&format!("t{i:05}")));
    }
    let reg = b.build().unwrap();
    let caller = Caller::new("alice");
    let (p1, asked) = asked_during(&counting, || reg.list_tools(&caller, None).unwrap());
    // 20 visible in t00000..=t00028 (t00002, t00005, …, t00026 hidden: 9), then the
    // lookahead asks about t00029 (hidden) and t00030 (visible): 31 questions.
    assert_eq!(p1.items.len(), DEFAULT_PAGE_SIZE);
    assert_eq!(p1.items.last().unwrap().name, "t00028");
    assert_eq!(asked, 31);
    let (p2, asked) = asked_during(&counting, || {
        reg.list_tools(&caller, p1.next_cursor.as_deref()).unwrap()
    });
    assert_eq!(p2.items[0].name, "t00030");
    assert_eq!(p2.items.last().unwrap().name, "t00058");
    assert!(p2
        .items
        .iter()
        .all(|t| t.name[1..].parse::<usize>().unwrap() % 3 != 2));
    // t00029 (hidden) to t00058, then t00059 (hidden) and t00060: 32 questions.
    assert_eq!(asked, 32);
}

/// A cursor minted while 45 tools were visible, used after the policy narrowed the view to
/// the first 20 (O28): the walk resumes after the last name served, so both the cursor at
/// the end of the narrowed view and one past it give an empty last page (an offset cursor
/// refused the second; a name is never "past the end"). Widened again, the same cursor
/// resumes exactly where it left off.
#[test]
fn o21_o28_a_cursor_after_a_narrowed_view_is_an_empty_last_page_and_resumes_when_widened() {
    let policy = Arc::new(Counting::default());
    let reg = registry(45, &policy);
    let caller = Caller::new("alice");
    let p1 = reg.list_tools(&caller, None).unwrap();
    let p2 = reg.list_tools(&caller, p1.next_cursor.as_deref()).unwrap();
    policy.narrow.store(true, Ordering::SeqCst);
    for cursor in [&p1.next_cursor, &p2.next_cursor] {
        let (page, asked) = asked_during(&policy, || {
            reg.list_tools(&caller, cursor.as_deref()).unwrap()
        });
        assert!(page.items.is_empty());
        assert_eq!(page.next_cursor, None);
        // It asked about every tool after the cursor's name (all hidden now).
        assert!(asked == 25 || asked == 5, "{asked}");
    }
    policy.narrow.store(false, Ordering::SeqCst);
    let p3 = reg.list_tools(&caller, p2.next_cursor.as_deref()).unwrap();
    let names: Vec<&str> = p3.items.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["t00040", "t00041", "t00042", "t00043", "t00044"]);
    assert_eq!(p3.next_cursor, None);
}

/// A cursor of another registry (one tool more: another digest) is refused as before
/// (-32602), even when the name it carries exists in both.
#[test]
fn o21_a_cursor_of_a_changed_registry_is_refused() {
    let policy = Arc::new(Counting::default());
    let before = registry(45, &policy);
    let after = registry(46, &policy);
    let caller = Caller::new("alice");
    let cursor = before
        .list_tools(&caller, None)
        .unwrap()
        .next_cursor
        .unwrap();
    assert!(before.list_tools(&caller, Some(&cursor)).is_ok());
    assert_eq!(
        after.list_tools(&caller, Some(&cursor)).unwrap_err(),
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
