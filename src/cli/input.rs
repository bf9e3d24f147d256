//! What the user hands the command: a stdio command line split into words (no shell),
//! `K=V` / `K:V` pairs, tool arguments and the `--responses` file.

use std::io::Read;
use std::path::Path;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::client::digest::{canonical_json, DigestError};

/// The largest argument text (inline, file or stdin) the command reads.
///
/// Why: the server refuses any request over 2 MiB anyway; reading more would only spend
/// memory on a request that cannot succeed.
pub const MAX_ARGUMENT_BYTES: usize = 2 * 1024 * 1024;

/// The largest `--responses` file the command reads (same reason as [`MAX_ARGUMENT_BYTES`]).
pub const MAX_RESPONSES_BYTES: usize = 2 * 1024 * 1024;

/// Why user input was refused (a usage error, exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The `--stdio` command line has an unclosed quote or a trailing backslash.
    #[error("--stdio: {0}")]
    Words(&'static str),
    /// The `--stdio` command line is empty.
    #[error("--stdio: the command is empty")]
    EmptyCommand,
    /// A `K=V` or `K:V` pair without its separator or with an empty name.
    #[error("{flag} expects {shape}, got {got:?}")]
    Pair {
        /// The flag.
        flag: &'static str,
        /// The expected shape.
        shape: &'static str,
        /// What was given (never a header value: only the name part is kept).
        got: String,
    },
    /// The argument text is longer than the bound.
    #[error("{what} is longer than {limit} bytes")]
    TooLarge {
        /// Which input.
        what: &'static str,
        /// The bound.
        limit: usize,
    },
    /// Reading the file or stdin failed.
    #[error("cannot read {what}: {reason}")]
    Read {
        /// Which input.
        what: String,
        /// The OS error.
        reason: String,
    },
    /// The text is not one JSON value, or names a member twice.
    #[error("{what}: {reason}")]
    Json {
        /// Which input.
        what: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The arguments are valid JSON but not an object.
    #[error("{what} must be a JSON object")]
    NotObject {
        /// Which input.
        what: &'static str,
    },
    /// The responses file does not have the documented shape.
    #[error("--responses: {0}")]
    Responses(String),
}

/// Splits a command line into words the way a POSIX shell would quote them, without running
/// one: whitespace separates words, `'…'` is literal, `"…"` honours `\"` and `\\`, and a
/// backslash outside quotes escapes the next character. No expansion of any kind.
///
/// # Errors
/// [`InputError::Words`] for an unclosed quote or a trailing backslash;
/// [`InputError::EmptyCommand`] when no word remains.
pub fn split_words(line: &str) -> Result<Vec<String>, InputError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(InputError::Words("unclosed single quote")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(InputError::Words("unclosed double quote")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(InputError::Words("unclosed double quote")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err(InputError::Words("trailing backslash")),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(InputError::EmptyCommand);
    }
    Ok(words)
}

/// Splits `NAME<sep>VALUE`; the name must not be empty.
///
/// # Errors
/// [`InputError::Pair`], naming only what precedes the separator (a header value may be a
/// secret).
pub fn split_pair(
    flag: &'static str,
    shape: &'static str,
    sep: char,
    text: &str,
) -> Result<(String, String), InputError> {
    match text.split_once(sep) {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_owned(), value.trim_start().to_owned()))
        }
        _ => Err(InputError::Pair {
            flag,
            shape,
            got: text
                .split(sep)
                .next()
                .unwrap_or_default()
                .chars()
                .take(40)
                .collect(),
        }),
    }
}

/// Reads at most `limit` bytes from `reader`, refusing more.
fn read_bounded(
    mut reader: impl Read,
    what: &'static str,
    name: &str,
    limit: usize,
) -> Result<String, InputError> {
    let mut buf = Vec::new();
    reader
        .by_ref()
        .take(limit as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| InputError::Read {
            what: name.to_owned(),
            reason: e.to_string(),
        })?;
    if buf.len() > limit {
        return Err(InputError::TooLarge { what, limit });
    }
    String::from_utf8(buf).map_err(|_| InputError::Json {
        what,
        reason: "not UTF-8".to_owned(),
    })
}

/// Reads a file, refusing more than `limit` bytes.
fn read_file(path: &Path, what: &'static str, limit: usize) -> Result<String, InputError> {
    let file = std::fs::File::open(path).map_err(|e| InputError::Read {
        what: path.display().to_string(),
        reason: e.to_string(),
    })?;
    read_bounded(file, what, &path.display().to_string(), limit)
}

/// Checks `text` is one JSON value with no duplicate member names, within the bound.
fn strict_json(text: &str, what: &'static str, limit: usize) -> Result<Box<RawValue>, InputError> {
    if text.len() > limit {
        return Err(InputError::TooLarge { what, limit });
    }
    canonical_json(text).map_err(|e| InputError::Json {
        what,
        reason: match e {
            DigestError::DuplicateKey => "duplicate member name in an object".to_owned(),
            DigestError::Syntax => "not valid JSON".to_owned(),
            other => other.to_string(),
        },
    })?;
    RawValue::from_string(text.trim().to_owned()).map_err(|e| InputError::Json {
        what,
        reason: e.to_string(),
    })
}

/// Tool (or prompt) arguments: exact bytes, plus the parsed object the client API takes.
#[derive(Debug, Clone)]
pub struct Arguments {
    /// The text exactly as given (numbers byte-exact).
    pub raw: Box<RawValue>,
    /// The same object parsed (numbers beyond 64 bits approximate; used only where the
    /// client API needs a map, never sent as such for `tools/call`).
    pub map: Map<String, Value>,
}

/// Where arguments come from: inline text, `@`-less file path, or `-` for stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgumentSource {
    /// `--args JSON`.
    Inline(String),
    /// `--args -`.
    Stdin,
    /// `--args-file PATH`.
    File(std::path::PathBuf),
}

/// Reads and checks arguments: one JSON object, no duplicate keys, numbers exact.
///
/// # Errors
/// [`InputError`].
pub fn read_arguments(source: &ArgumentSource) -> Result<Arguments, InputError> {
    const WHAT: &str = "arguments";
    let text = match source {
        ArgumentSource::Inline(text) => text.clone(),
        ArgumentSource::Stdin => {
            read_bounded(std::io::stdin().lock(), WHAT, "stdin", MAX_ARGUMENT_BYTES)?
        }
        ArgumentSource::File(path) => read_file(path, WHAT, MAX_ARGUMENT_BYTES)?,
    };
    let raw = strict_json(&text, WHAT, MAX_ARGUMENT_BYTES)?;
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(raw.get()) else {
        return Err(InputError::NotObject { what: WHAT });
    };
    Ok(Arguments { raw, map })
}

/// The `--responses` file: one `inputResponses` object per round, used in order.
///
/// ```json
/// {"rounds": [
///   {"confirm": {"action": "accept", "content": {"confirm": true}}},
///   {"note": {"action": "accept", "content": {"note": "ok"}}}
/// ]}
/// ```
///
/// Round *n* answers the *n*-th `input_required` result of the call; when the rounds run
/// out, the last `input_required` result is printed and the command exits 6.
#[derive(Debug, Clone, Default)]
pub struct Responses {
    /// The rounds, in order; each is sent as `inputResponses` verbatim.
    pub rounds: Vec<Map<String, Value>>,
}

/// Reads and checks a `--responses` file.
///
/// # Errors
/// [`InputError`] for an unreadable, oversized, duplicate-keyed or misshapen file.
pub fn read_responses(path: &Path) -> Result<Responses, InputError> {
    const WHAT: &str = "--responses";
    let text = read_file(path, WHAT, MAX_RESPONSES_BYTES)?;
    let raw = strict_json(&text, WHAT, MAX_RESPONSES_BYTES)?;
    let value: Value = serde_json::from_str(raw.get()).map_err(|e| InputError::Json {
        what: WHAT,
        reason: e.to_string(),
    })?;
    let Value::Object(mut top) = value else {
        return Err(InputError::Responses(
            "the file must be an object {\"rounds\": [...]}".to_owned(),
        ));
    };
    let Some(Value::Array(rounds)) = top.remove("rounds") else {
        return Err(InputError::Responses(
            "`rounds` must be an array of objects".to_owned(),
        ));
    };
    if let Some(extra) = top.keys().next() {
        return Err(InputError::Responses(format!("unknown member `{extra}`")));
    }
    let rounds = rounds
        .into_iter()
        .enumerate()
        .map(|(i, round)| match round {
            Value::Object(map) => Ok(map),
            _ => Err(InputError::Responses(format!(
                "round {} must be an object of inputResponses",
                i + 1
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Responses { rounds })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_words_quotes_without_a_shell() {
        assert_eq!(
            split_words(r#"sh -c 'echo $HOME; x' "a \"b\"" c\ d"#).unwrap(),
            vec!["sh", "-c", "echo $HOME; x", "a \"b\"", "c d"]
        );
        assert_eq!(split_words("''").unwrap(), vec![""]);
        assert_eq!(split_words("  ").unwrap_err(), InputError::EmptyCommand);
        assert!(matches!(split_words("'open"), Err(InputError::Words(_))));
        assert!(matches!(split_words("\"open"), Err(InputError::Words(_))));
        assert!(matches!(split_words("end\\"), Err(InputError::Words(_))));
    }

    #[test]
    fn o104_pair_error_never_echoes_the_value() {
        let e = split_pair("--header", "NAME:VALUE", ':', "Authorization").unwrap_err();
        assert!(e.to_string().contains("Authorization"));
        let (k, v) = split_pair("--header", "NAME:VALUE", ':', "Authorization: Bearer x").unwrap();
        assert_eq!((k.as_str(), v.as_str()), ("Authorization", "Bearer x"));
        let e = split_pair("--env", "K=V", '=', "=secret").unwrap_err();
        assert!(!e.to_string().contains("secret"));
    }

    #[test]
    fn o93_arguments_object_exact_and_unique() {
        let a = read_arguments(&ArgumentSource::Inline(
            r#"{"a":123456789012345678901234567890,"b":1}"#.into(),
        ))
        .unwrap();
        assert_eq!(a.raw.get(), r#"{"a":123456789012345678901234567890,"b":1}"#);
        let dup = read_arguments(&ArgumentSource::Inline(r#"{"a":1,"a":2}"#.into()));
        assert!(matches!(dup, Err(InputError::Json { .. })), "{dup:?}");
        let arr = read_arguments(&ArgumentSource::Inline("[1]".into()));
        assert_eq!(
            arr.unwrap_err(),
            InputError::NotObject { what: "arguments" }
        );
    }

    #[test]
    fn o93_argument_bound_at_and_past_the_limit() {
        let pad = |n: usize| format!("{{\"t\":\"{}\"}}", "x".repeat(n - 8));
        let at = pad(MAX_ARGUMENT_BYTES);
        assert_eq!(at.len(), MAX_ARGUMENT_BYTES);
        assert!(read_arguments(&ArgumentSource::Inline(at)).is_ok());
        let past = pad(MAX_ARGUMENT_BYTES + 1);
        assert_eq!(
            read_arguments(&ArgumentSource::Inline(past)).unwrap_err(),
            InputError::TooLarge {
                what: "arguments",
                limit: MAX_ARGUMENT_BYTES
            }
        );
    }
}
