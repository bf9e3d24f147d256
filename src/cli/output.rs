//! Output: the lossless `--json` records and the human view (tables, pretty JSON).
//! Both print raw bytes as received; numbers are never re-encoded.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};

use serde::Serialize;
use serde_json::value::RawValue;

use crate::cli::tap::Record;

/// Pretty-prints JSON text without re-encoding any scalar (numbers stay byte-exact).
#[must_use]
pub fn pretty(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = raw.trim().chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    if let Some(close) = chars.next() {
                        out.push(close);
                    }
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// Whether stdout gets colour: a terminal, and `NO_COLOR` unset or empty.
#[must_use]
pub fn colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// One line of `--json` output.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    kind: &'a str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    page: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a RawValue>,
}

/// What kind a received answer is, for its record.
fn kind_of(record: &Record) -> &'static str {
    match &record.body {
        Err(_) => "error",
        Ok(raw) => {
            #[derive(serde::Deserialize)]
            struct Probe<'a> {
                #[serde(rename = "resultType", borrow)]
                result_type: Option<&'a str>,
                #[serde(rename = "isError")]
                is_error: Option<bool>,
            }
            match serde_json::from_str::<Probe<'_>>(raw.get()) {
                Ok(Probe {
                    result_type: Some("input_required"),
                    ..
                }) => "input_required",
                // A tools/call the server runs as a task (the Tasks extension).
                Ok(Probe {
                    result_type: Some("task"),
                    ..
                }) => "task",
                Ok(Probe {
                    is_error: Some(true),
                    ..
                }) => "tool_error",
                _ => "result",
            }
        }
    }
}

/// The lossless printer: each answer is one JSON line, in arrival order; list pages are
/// numbered per method.
#[derive(Debug, Default)]
pub struct Records {
    pages: BTreeMap<String, usize>,
}

fn is_list(method: &str) -> bool {
    method.ends_with("/list")
}

impl Records {
    /// Prints `records` as lines on stdout.
    pub fn emit(&mut self, records: &[Record]) {
        let mut stdout = std::io::stdout().lock();
        for record in records {
            let page = is_list(&record.method).then(|| {
                let n = self.pages.entry(record.method.clone()).or_default();
                *n += 1;
                *n
            });
            let (result, error) = match &record.body {
                Ok(r) => (Some(&**r), None),
                Err(e) => (None, Some(&**e)),
            };
            let line = Line {
                kind: if page.is_some() && result.is_some() {
                    "page"
                } else {
                    kind_of(record)
                },
                method: &record.method,
                page,
                result,
                error,
            };
            if let Ok(text) = serde_json::to_string(&line) {
                let _ = writeln!(stdout, "{text}");
            }
        }
    }

    /// Prints a record the command made itself (a digest, a listen change).
    pub fn emit_value(value: &serde_json::Value) {
        let _ = writeln!(std::io::stdout().lock(), "{value}");
    }
}

/// One member of a raw object, as raw text.
#[must_use]
pub fn member<'a>(raw: &'a RawValue, name: &str) -> Option<Box<RawValue>> {
    let map: BTreeMap<&'a str, Box<RawValue>> = serde_json::from_str(raw.get()).ok()?;
    map.into_iter().find(|(k, _)| *k == name).map(|(_, v)| v)
}

/// A plain table: a header row and left-aligned columns, bold header on a colour terminal.
#[must_use]
pub fn table(header: &[&str], rows: &[Vec<String>], colour: bool) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                s.push_str(cell);
                s.push_str(&" ".repeat(pad + 2));
            }
        }
        s.trim_end().to_owned()
    };
    let mut out = String::new();
    let head = line(header.to_vec());
    if colour {
        out.push_str(&format!("\x1b[1m{head}\x1b[0m\n"));
    } else {
        out.push_str(&head);
        out.push('\n');
    }
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

/// Shortens a description to its first line, at most `max` characters.
#[must_use]
pub fn short(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or_default();
    if first.chars().count() > max {
        let cut: String = first.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        first.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o96_pretty_keeps_numbers_and_strings_byte_exact() {
        let raw = r#"{"sum":123456789012345678901234567890,"s":"a, {b}: \"c\"","e":[],"o":{}}"#;
        assert_eq!(
            pretty(raw),
            "{\n  \"sum\": 123456789012345678901234567890,\n  \"s\": \"a, {b}: \\\"c\\\"\",\n  \"e\": [],\n  \"o\": {}\n}"
        );
    }

    #[test]
    fn table_aligns_columns() {
        let t = table(
            &["NAME", "DESCRIPTION"],
            &[
                vec!["add".into(), "Adds.".into()],
                vec!["confirm".into(), "Asks.".into()],
            ],
            false,
        );
        assert_eq!(t, "NAME     DESCRIPTION\nadd      Adds.\nconfirm  Asks.\n");
    }
}
