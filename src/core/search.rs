//! `search_tools`' index and ranking (issue #23's registry curve).
//!
//! The searchable texts of every tool (name, title, description, keywords) are lower-cased
//! once, when the registry is built ([`SearchText`]), not per tool per query. A search scores
//! each tool in registry (name) order and keeps only the best `limit` in a bounded heap
//! ([`top`]), instead of collecting and sorting every match. The per-caller policy still runs
//! on every request (O28), for every match whose visibility changes the answer: a match that
//! would enter the kept set, and matches that cannot enter only until one of them is visible
//! (that one decides `truncated`). The ranking is today's: score descending, ties by name.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// One tool's searchable texts, lower-cased at registry build.
#[derive(Debug)]
pub(crate) struct SearchText {
    name: String,
    /// `name` split at every non-alphanumeric character (empty pieces kept: a token is never
    /// empty, so they never match).
    name_words: Vec<String>,
    title: String,
    description: String,
    keywords: Vec<String>,
}

impl SearchText {
    pub(crate) fn new(
        name: &str,
        title: Option<&str>,
        description: Option<&str>,
        keywords: &[String],
    ) -> Self {
        let name = name.to_lowercase();
        let name_words = name
            .split(|c: char| !c.is_alphanumeric())
            .map(str::to_owned)
            .collect();
        SearchText {
            name_words,
            name,
            title: title.unwrap_or("").to_lowercase(),
            description: description.unwrap_or("").to_lowercase(),
            keywords: keywords.iter().map(|k| k.to_lowercase()).collect(),
        }
    }

    /// The tool's score for the query's (lower-cased, non-empty) tokens; 0 is no match.
    pub(crate) fn score(&self, tokens: &[String]) -> u32 {
        let mut total = 0;
        for token in tokens {
            let token = token.as_str();
            let mut score = 0;
            if self.name == token {
                score += 100;
            } else if self.name_words.iter().any(|w| w == token) {
                score += 60;
            } else if self.name.contains(token) {
                score += 30;
            }
            if self.title.contains(token) {
                score += 20;
            }
            if self.keywords.iter().any(|k| k == token) {
                score += 25;
            } else if self.keywords.iter().any(|k| k.contains(token)) {
                score += 10;
            }
            if self.description.contains(token) {
                score += 5;
            }
            total += score;
        }
        total
    }
}

/// The query's tokens: its alphanumeric runs, lower-cased.
pub(crate) fn query_tokens(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A kept match: ordered so that the heap's greatest is the *worst* kept (lowest score, then
/// the latest in name order), the one a better match replaces.
struct Kept<T> {
    score: u32,
    index: usize,
    item: T,
}

impl<T> Kept<T> {
    /// Larger is better: a higher score, then an earlier name.
    fn rank(&self) -> (u32, Reverse<usize>) {
        (self.score, Reverse(self.index))
    }
}

impl<T> PartialEq for Kept<T> {
    fn eq(&self, other: &Self) -> bool {
        self.rank() == other.rank()
    }
}
impl<T> Eq for Kept<T> {}
impl<T> PartialOrd for Kept<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Kept<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        other.rank().cmp(&self.rank())
    }
}

/// The best `limit` matches of `candidates` (given in name order), best first, ties by name,
/// and whether more visible tools matched. With no tokens every candidate matches with score
/// 0 (so the first `limit` visible ones, by name). `visible` (the policy) is asked only about
/// matches whose visibility changes the answer, in name order.
pub(crate) fn top<'a, T>(
    candidates: impl Iterator<Item = (&'a SearchText, T)>,
    tokens: &[String],
    limit: usize,
    mut visible: impl FnMut(&T) -> bool,
) -> (Vec<T>, bool) {
    let mut kept: BinaryHeap<Kept<T>> = BinaryHeap::with_capacity(limit + 1);
    let mut truncated = false;
    for (index, (text, item)) in candidates.enumerate() {
        let score = if tokens.is_empty() {
            0
        } else {
            match text.score(tokens) {
                0 => continue,
                s => s,
            }
        };
        let candidate = Kept { score, index, item };
        // Full: a match no better than the worst kept cannot enter; it only matters (one
        // policy question) until a visible one has shown that more matched than the limit.
        if kept.len() == limit && kept.peek().is_some_and(|worst| candidate >= *worst) {
            if !truncated && visible(&candidate.item) {
                truncated = true;
                if tokens.is_empty() {
                    // Every later candidate scores 0 and comes later by name: none can enter.
                    break;
                }
            }
            continue;
        }
        if !visible(&candidate.item) {
            continue;
        }
        kept.push(candidate);
        if kept.len() > limit {
            kept.pop();
            truncated = true;
        }
    }
    // Ascending by `Ord` is best first (the order is reversed).
    let items = kept.into_sorted_vec().into_iter().map(|k| k.item).collect();
    (items, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ranking before the index (session 8's `score_tool` and full sort), kept as the
    /// reference the index must reproduce exactly.
    fn reference_score(
        name: &str,
        title: Option<&str>,
        description: Option<&str>,
        keywords: &[String],
        tokens: &[String],
    ) -> u32 {
        let name = name.to_lowercase();
        let title = title.unwrap_or("").to_lowercase();
        let description = description.unwrap_or("").to_lowercase();
        let keywords: Vec<String> = keywords.iter().map(|k| k.to_lowercase()).collect();
        let name_words: Vec<&str> = name.split(|c: char| !c.is_alphanumeric()).collect();
        let mut total = 0;
        for token in tokens {
            let mut score = 0;
            if name == *token {
                score += 100;
            } else if name_words.contains(&token.as_str()) {
                score += 60;
            } else if name.contains(token.as_str()) {
                score += 30;
            }
            if title.contains(token.as_str()) {
                score += 20;
            }
            if keywords.iter().any(|k| k == token) {
                score += 25;
            } else if keywords.iter().any(|k| k.contains(token.as_str())) {
                score += 10;
            }
            if description.contains(token.as_str()) {
                score += 5;
            }
            total += score;
        }
        total
    }

    struct Def {
        name: String,
        title: Option<String>,
        description: Option<String>,
        keywords: Vec<String>,
    }

    fn reference(
        defs: &[Def],
        query: &str,
        limit: usize,
        visible: &dyn Fn(&str) -> bool,
    ) -> (Vec<String>, bool) {
        let tokens = query_tokens(query);
        let mut scored: Vec<(u32, &Def)> = defs
            .iter()
            .filter(|d| visible(&d.name))
            .filter_map(|d| {
                if tokens.is_empty() {
                    return Some((0, d));
                }
                let s = reference_score(
                    &d.name,
                    d.title.as_deref(),
                    d.description.as_deref(),
                    &d.keywords,
                    &tokens,
                );
                (s > 0).then_some((s, d))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
        let truncated = scored.len() > limit;
        let names = scored
            .into_iter()
            .take(limit)
            .map(|(_, d)| d.name.clone())
            .collect();
        (names, truncated)
    }

    /// A few hundred generated tools whose texts draw from a small vocabulary (so many scores
    /// tie), with mixed case and non-ASCII letters (lower-casing must match the reference).
    fn generated(n: usize) -> Vec<Def> {
        const WORDS: &[&str] = &[
            "send",
            "Mail",
            "file",
            "READ",
            "write",
            "Ünïcode",
            "list",
            "get",
            "net",
            "x",
        ];
        let word = |i: usize| WORDS[i % WORDS.len()];
        let mut defs: Vec<Def> = (0..n)
            .map(|i| Def {
                name: format!("{}_{}.{i}", word(i * 7 + 1), word(i * 3)),
                title: (i % 3 != 0).then(|| format!("{} {}", word(i), word(i / 2))),
                description: (i % 4 != 1)
                    .then(|| format!("Does {} with {}", word(i / 3), word(i * 5))),
                keywords: (0..i % 3).map(|k| word(i + k * 2).to_owned()).collect(),
            })
            .collect();
        // The registry's order: by name (the BTreeMap); names here are unique.
        defs.sort_by(|a, b| a.name.cmp(&b.name));
        defs.dedup_by(|a, b| a.name == b.name);
        defs
    }

    #[test]
    fn issue23_the_index_and_the_heap_rank_exactly_as_the_full_sort_did() {
        let defs = generated(400);
        assert!(defs.len() > 300, "{} distinct tools", defs.len());
        let index: Vec<SearchText> = defs
            .iter()
            .map(|d| {
                SearchText::new(
                    &d.name,
                    d.title.as_deref(),
                    d.description.as_deref(),
                    &d.keywords,
                )
            })
            .collect();
        let hide_sevens = |name: &str| !name.ends_with(".7");
        let queries = [
            "",
            "send",
            "SEND mail",
            "ünïcode",
            "ÜNÏCODE file",
            "x",
            "read write list",
            "get_net",
            "mail.3",
            "nothing-matches-zz",
            "e",
            "  ",
            "send_file.0",
        ];
        let mut compared = 0;
        for query in queries {
            for limit in [1usize, 5, 20] {
                let policies: [&dyn Fn(&str) -> bool; 2] = [&|_| true, &hide_sevens];
                for visible in policies {
                    let want = reference(&defs, query, limit, visible);
                    let tokens = query_tokens(query);
                    let (got, truncated) =
                        top(index.iter().zip(defs.iter()), &tokens, limit, |d: &&Def| {
                            visible(&d.name)
                        });
                    let got: Vec<String> = got.iter().map(|d| d.name.clone()).collect();
                    assert_eq!((got, truncated), want, "query {query:?} limit {limit}");
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 13 * 3 * 2);
        // The queries do produce ties at the limit (several equal scores cross it).
        let tokens = query_tokens("send");
        let mut scores: Vec<u32> = index
            .iter()
            .map(|t| t.score(&tokens))
            .filter(|s| *s > 0)
            .collect();
        scores.sort_unstable_by(|a, b| b.cmp(a));
        assert!(
            scores.len() > 20 && scores[4] == scores[5],
            "ties at limit 5: {scores:?}"
        );
    }

    /// O28: the policy is asked about the matches that decide the answer, in name order:
    /// the kept ones and, once the set is full, the first visible one that cannot enter.
    #[test]
    fn o28_the_policy_is_asked_only_about_matches_that_change_the_answer() {
        let texts: Vec<SearchText> = (0..100)
            .map(|i| SearchText::new(&format!("tool_{i:03}"), None, Some("shared words"), &[]))
            .collect();
        let names: Vec<String> = (0..100).map(|i| format!("tool_{i:03}")).collect();
        let run = |query: &str, limit: usize, hidden: &dyn Fn(&str) -> bool| {
            let mut asked = Vec::new();
            let (items, truncated) = top(
                texts.iter().zip(names.iter()),
                &query_tokens(query),
                limit,
                |n: &&String| {
                    asked.push((*n).clone());
                    !hidden(n)
                },
            );
            (
                items.into_iter().cloned().collect::<Vec<_>>(),
                truncated,
                asked,
            )
        };
        // Every tool matches with the same score: the first five and one more are asked.
        let (items, truncated, asked) = run("shared", 5, &|_| false);
        assert_eq!(items, names[..5]);
        assert!(truncated);
        assert_eq!(asked, names[..6]);
        // At the bound: exactly `limit` matches is not truncated; one more is.
        let (items, truncated, asked) = run("00", 10, &|_| false);
        assert_eq!((items.len(), truncated, asked.len()), (10, false, 10));
        let (items, truncated, _) = run("00", 9, &|_| false);
        assert_eq!((items.len(), truncated), (9, true));
        // One match: one question.
        let (items, truncated, asked) = run("042", 5, &|_| false);
        assert_eq!(
            (items, truncated, asked),
            (vec![names[42].clone()], false, vec![names[42].clone()])
        );
        // Hidden matches are skipped and never counted for `truncated`.
        let (items, truncated, asked) = run("shared", 5, &|n| n != "tool_099" && n > "tool_003");
        assert_eq!(items, [&names[..4], &names[99..]].concat());
        assert!(!truncated);
        assert_eq!(asked.len(), 100);
        // No tokens: the first `limit` visible by name, and one more question.
        let (items, truncated, asked) = run(" - ", 3, &|n| n == "tool_001");
        assert_eq!(
            items,
            [names[0].clone(), names[2].clone(), names[3].clone()]
        );
        assert!(truncated);
        assert_eq!(asked, names[..5]);
    }
}
