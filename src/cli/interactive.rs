//! `--interactive`: answers a server's elicitation requests on the terminal.
//!
//! Form mode asks one field at a time by its schema type, the spec's restricted elicitation
//! schema: `string` (with `minLength`/`maxLength`), `number` and `integer` (with
//! `minimum`/`maximum`), `boolean`, single-select enums (`enum`, titled `oneOf`, legacy
//! `enumNames`) and multi-select enums (`type: array` with `items.enum` / `items.anyOf`).
//! An empty line takes the field's default, or leaves an optional field out. URL mode shows
//! the URL and asks for consent; strict-mcp never opens it (the user does, after saying yes).
//! Every question reads from a `BufRead` and writes to a `Write`, so tests drive it with
//! bytes; the command passes the terminal.

use std::io::{BufRead, Write};

use serde_json::{Map, Number, Value};

use crate::wire::{ElicitRequestParams, InputRequest, InputRequiredResult};

/// The longest answer line read for one question.
///
/// Why: a field value is short text typed by a person; a pasted or endless line must not
/// grow memory, and the whole answer must still fit the server's 2 MiB request bound.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// How many times one question is asked again after an answer that does not fit its
/// schema, before the round is given up.
///
/// Why: a typo deserves another try; an input that never fits (a script feeding the terminal
/// the wrong thing) must end instead of looping.
pub const MAX_ATTEMPTS: usize = 3;

/// Why no answer could be built (the command exits 6, input required).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// The terminal closed (end of input) before the question was answered.
    #[error("the terminal closed before {0:?} was answered")]
    Closed(String),
    /// [`MAX_ATTEMPTS`] answers in a row did not fit the field.
    #[error("no valid answer for {0:?} after {MAX_ATTEMPTS} attempts")]
    Attempts(String),
    /// An answer line is longer than [`MAX_LINE_BYTES`].
    #[error("an answer is longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    /// A kind of input request the terminal cannot answer (sampling, roots), or a field type
    /// outside the elicitation schema.
    #[error("{0}")]
    Unsupported(String),
    /// Reading or writing the terminal failed.
    #[error("terminal: {0}")]
    Io(String),
}

fn io(e: &std::io::Error) -> AskError {
    AskError::Io(e.to_string())
}

/// The terminal the questions go through.
pub struct Terminal<'a> {
    input: &'a mut dyn BufRead,
    output: &'a mut dyn Write,
}

impl std::fmt::Debug for Terminal<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Terminal")
    }
}

impl<'a> Terminal<'a> {
    /// Questions to `output`, answers from `input`.
    pub fn new(input: &'a mut dyn BufRead, output: &'a mut dyn Write) -> Self {
        Terminal { input, output }
    }

    fn say(&mut self, text: &str) -> Result<(), AskError> {
        self.output
            .write_all(text.as_bytes())
            .and_then(|()| self.output.flush())
            .map_err(|e| io(&e))
    }

    /// One line, without its line ending; `None` at end of input.
    fn line(&mut self, prompt: &str, what: &str) -> Result<String, AskError> {
        self.say(prompt)?;
        let mut buf = Vec::new();
        let limit = u64::try_from(MAX_LINE_BYTES + 1).unwrap_or(u64::MAX);
        let n = std::io::Read::take(&mut *self.input, limit)
            .read_until(b'\n', &mut buf)
            .map_err(|e| io(&e))?;
        if n == 0 {
            return Err(AskError::Closed(what.to_owned()));
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        } else if buf.len() > MAX_LINE_BYTES {
            return Err(AskError::TooLong);
        }
        String::from_utf8(buf).map_err(|_| AskError::Io("the answer is not UTF-8".to_owned()))
    }

    /// Asks `prompt` until `parse` accepts the line (at most [`MAX_ATTEMPTS`] times).
    fn ask<T>(
        &mut self,
        prompt: &str,
        what: &str,
        mut parse: impl FnMut(&str) -> Result<T, String>,
    ) -> Result<T, AskError> {
        for _ in 0..MAX_ATTEMPTS {
            let line = self.line(prompt, what)?;
            match parse(line.trim()) {
                Ok(v) => return Ok(v),
                Err(why) => self.say(&format!("  {why}\n"))?,
            }
        }
        Err(AskError::Attempts(what.to_owned()))
    }
}

/// Answers every input request of one `input_required` result, in key order.
///
/// # Errors
/// [`AskError`] when a question cannot be answered; nothing is sent then.
pub fn answer(
    asked: &InputRequiredResult,
    terminal: &mut Terminal<'_>,
) -> Result<Map<String, Value>, AskError> {
    let mut out = Map::new();
    let empty = std::collections::BTreeMap::new();
    let requests = asked.input_requests.as_ref().map_or(&empty, |r| &r.0);
    for (key, request) in requests {
        let InputRequest::ElicitRequest(elicit) = request else {
            return Err(AskError::Unsupported(format!(
                "input request {key:?} is not an elicitation; --interactive answers \
                 elicitations only"
            )));
        };
        let answer = match &elicit.params {
            ElicitRequestParams::UrlParams(p) => url_consent(&p.message, &p.url, terminal)?,
            ElicitRequestParams::FormParams(p) => {
                let schema = serde_json::to_value(&p.requested_schema)
                    .map_err(|e| AskError::Unsupported(e.to_string()))?;
                form(&p.message, &schema, terminal)?
            }
        };
        out.insert(key.clone(), answer);
    }
    Ok(out)
}

/// URL mode: show the URL, ask consent; yes is `accept` (no content), no is `decline`.
fn url_consent(message: &str, url: &str, t: &mut Terminal<'_>) -> Result<Value, AskError> {
    t.say(&format!(
        "The server asks you to open a URL: {message}\n  URL: {url}\n  \
         (strict-mcp does not open it; open it yourself if you agree)\n"
    ))?;
    let yes = t.ask(
        "Do you consent to open this URL? [y/N]: ",
        "URL consent",
        |s| yes_no(s, Some(false)),
    )?;
    Ok(serde_json::json!({"action": if yes { "accept" } else { "decline" }}))
}

fn yes_no(s: &str, default: Option<bool>) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "y" | "yes" | "true" => Ok(true),
        "n" | "no" | "false" => Ok(false),
        "" => default.ok_or_else(|| "answer y or n".to_owned()),
        _ => Err("answer y or n".to_owned()),
    }
}

/// Form mode: accept, decline or cancel first; on accept, each field by its type.
fn form(message: &str, schema: &Value, t: &mut Terminal<'_>) -> Result<Value, AskError> {
    t.say(&format!("The server asks: {message}\n"))?;
    let action = t.ask(
        "Answer, decline or cancel? [A/d/c]: ",
        "the action",
        |s| match s.to_ascii_lowercase().as_str() {
            "" | "a" | "answer" | "accept" => Ok("accept"),
            "d" | "decline" => Ok("decline"),
            "c" | "cancel" => Ok("cancel"),
            _ => Err("answer a, d or c".to_owned()),
        },
    )?;
    if action != "accept" {
        return Ok(serde_json::json!({ "action": action }));
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut content = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, field) in properties.into_iter().flatten() {
        let required = required.contains(&name.as_str());
        if let Some(value) = ask_field(name, field, required, t)? {
            content.insert(name.clone(), value);
        }
    }
    Ok(serde_json::json!({"action": "accept", "content": content}))
}

/// The choices of an enum field: (value, label).
fn choices(field: &Value) -> Option<Vec<(String, String)>> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    let titled = |v: &Value| -> Vec<(String, String)> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| {
                let value = o.get("const")?.as_str()?.to_owned();
                let title = o.get("title").and_then(Value::as_str).unwrap_or(&value);
                Some((value.clone(), title.to_owned()))
            })
            .collect()
    };
    if let Some(values) = field.get("enum") {
        let values = strings(values);
        let names = field.get("enumNames").map(strings).unwrap_or_default();
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), names.get(i).unwrap_or(v).clone()))
                .collect(),
        );
    }
    field.get("oneOf").map(titled)
}

/// Picks one choice by its number or its value.
fn pick(s: &str, options: &[(String, String)]) -> Result<String, String> {
    if let Ok(n) = s.parse::<usize>() {
        if let Some((v, _)) = n.checked_sub(1).and_then(|i| options.get(i)) {
            return Ok(v.clone());
        }
    }
    options
        .iter()
        .find(|(v, _)| v == s)
        .map(|(v, _)| v.clone())
        .ok_or_else(|| format!("choose 1 to {} or one of the values", options.len()))
}

/// The final check of one answer against its field's own schema (JSON Schema 2020-12 with
/// `format` asserted: `email`, `uri`, `date`, `date-time`), so nothing the questions above do
/// not parse themselves slips through. A field schema the validator cannot build is left to
/// the server to judge.
fn fits(field: &Value, value: &Value) -> Result<(), String> {
    let Ok(validator) = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(field)
    else {
        return Ok(());
    };
    let first = validator.iter_errors(value).next().map(|e| e.to_string());
    first.map_or(Ok(()), Err)
}

fn number_bound(field: &Value, key: &str) -> Option<f64> {
    field.get(key).and_then(Value::as_f64)
}

/// Asks one field; `None` leaves an optional field out.
#[allow(clippy::too_many_lines)]
fn ask_field(
    name: &str,
    field: &Value,
    required: bool,
    t: &mut Terminal<'_>,
) -> Result<Option<Value>, AskError> {
    let title = field.get("title").and_then(Value::as_str).unwrap_or(name);
    let default = field.get("default").cloned();
    if let Some(d) = field.get("description").and_then(Value::as_str) {
        t.say(&format!("  {title}: {d}\n"))?;
    }
    let star = if required { "*" } else { "" };
    let shown_default = match &default {
        Some(Value::String(s)) => format!(" [{s}]"),
        Some(Value::Array(a)) => format!(
            " [{}]",
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(",")
        ),
        Some(other) => format!(" [{other}]"),
        None => String::new(),
    };
    // Empty line: the default, else nothing for an optional field, else ask again.
    let empty = |default: &Option<Value>| -> Result<Option<Value>, String> {
        match default {
            Some(d) => Ok(Some(d.clone())),
            None if !required => Ok(None),
            None => Err("this field is required".to_owned()),
        }
    };
    let kind = field.get("type").and_then(Value::as_str).unwrap_or("");
    let asked = |t: &mut Terminal<'_>,
                 prompt: &str,
                 parse: &dyn Fn(&str) -> Result<Option<Value>, String>| {
        t.ask(prompt, name, |s| {
            let answer = parse(s)?;
            if let Some(v) = &answer {
                fits(field, v)?;
            }
            Ok(answer)
        })
    };
    match kind {
        "boolean" => {
            let prompt = format!("{title}{star} (yes/no){shown_default}: ");
            asked(t, &prompt, &|s| {
                if s.is_empty() {
                    return empty(&default);
                }
                yes_no(s, None).map(|b| Some(Value::Bool(b)))
            })
        }
        "number" | "integer" => {
            let (min, max) = (
                number_bound(field, "minimum"),
                number_bound(field, "maximum"),
            );
            let range = match (min, max) {
                (Some(a), Some(b)) => format!(", {a} to {b}"),
                (Some(a), None) => format!(", at least {a}"),
                (None, Some(b)) => format!(", at most {b}"),
                (None, None) => String::new(),
            };
            let prompt = format!("{title}{star} ({kind}{range}){shown_default}: ");
            asked(t, &prompt, &|s| {
                if s.is_empty() {
                    return empty(&default);
                }
                let n: Number = serde_json::from_str(s).map_err(|_| format!("not a {kind}"))?;
                if kind == "integer" && !(n.is_i64() || n.is_u64()) {
                    return Err("not an integer".to_owned());
                }
                let x = n.as_f64().unwrap_or(f64::NAN);
                if min.is_some_and(|m| x < m) || max.is_some_and(|m| x > m) {
                    return Err(format!("out of range{range}"));
                }
                Ok(Some(Value::Number(n)))
            })
        }
        "array" => {
            let items = field.get("items").cloned().unwrap_or_default();
            let options = match (items.get("enum"), items.get("anyOf")) {
                (Some(_), _) => choices(&items),
                (None, Some(any)) => choices(&serde_json::json!({ "oneOf": any })),
                _ => None,
            }
            .ok_or_else(|| {
                AskError::Unsupported(format!("field {name:?}: an array without enum items"))
            })?;
            let min = field.get("minItems").and_then(Value::as_u64);
            let max = field.get("maxItems").and_then(Value::as_u64);
            show_choices(&options, t)?;
            let prompt =
                format!("{title}{star} (numbers or values, comma-separated){shown_default}: ");
            asked(t, &prompt, &|s| {
                if s.is_empty() {
                    return empty(&default);
                }
                let picked: Vec<Value> = s
                    .split(',')
                    .map(|part| pick(part.trim(), &options).map(Value::String))
                    .collect::<Result<_, _>>()?;
                let n = picked.len() as u64;
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    return Err(format!(
                        "choose {} to {} values",
                        min.unwrap_or(0),
                        max.map_or_else(|| "any".to_owned(), |m| m.to_string())
                    ));
                }
                Ok(Some(Value::Array(picked)))
            })
        }
        "string" => {
            if let Some(options) = choices(field) {
                show_choices(&options, t)?;
                let prompt = format!("{title}{star} (number or value){shown_default}: ");
                return asked(t, &prompt, &|s| {
                    if s.is_empty() {
                        return empty(&default);
                    }
                    pick(s, &options).map(|v| Some(Value::String(v)))
                });
            }
            let min = field.get("minLength").and_then(Value::as_u64);
            let max = field.get("maxLength").and_then(Value::as_u64);
            let format = field
                .get("format")
                .and_then(Value::as_str)
                .map(|f| format!(", {f}"))
                .unwrap_or_default();
            let prompt = format!("{title}{star} (text{format}){shown_default}: ");
            asked(t, &prompt, &|s| {
                if s.is_empty() {
                    return empty(&default);
                }
                let n = s.chars().count() as u64;
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    return Err(format!(
                        "{} to {} characters",
                        min.unwrap_or(0),
                        max.map_or_else(|| "any".to_owned(), |m| m.to_string())
                    ));
                }
                Ok(Some(Value::String(s.to_owned())))
            })
        }
        other => Err(AskError::Unsupported(format!(
            "field {name:?} has type {other:?}, outside the elicitation schema"
        ))),
    }
}

fn show_choices(options: &[(String, String)], t: &mut Terminal<'_>) -> Result<(), AskError> {
    for (i, (value, label)) in options.iter().enumerate() {
        if label == value {
            t.say(&format!("  {}) {value}\n", i + 1))?;
        } else {
            t.say(&format!("  {}) {label} ({value})\n", i + 1))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asked(requests: Value) -> InputRequiredResult {
        serde_json::from_value(json!({"resultType": "input_required", "inputRequests": requests}))
            .expect("input_required")
    }

    fn form_request(schema: Value) -> Value {
        json!({"q": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Tell me", "requestedSchema": schema}}})
    }

    /// Runs the questions over `typed` and returns the answers and the prompts shown.
    fn run(requests: Value, typed: &str) -> (Result<Map<String, Value>, AskError>, String) {
        let mut input = typed.as_bytes();
        let mut output = Vec::new();
        let result = answer(
            &asked(requests),
            &mut Terminal::new(&mut input, &mut output),
        );
        (result, String::from_utf8(output).expect("utf-8"))
    }

    fn one(schema: Value, typed: &str) -> (Result<Value, AskError>, String) {
        let (r, shown) = run(form_request(schema), typed);
        (r.map(|mut m| m.remove("q").expect("answered")), shown)
    }

    #[test]
    fn o98_form_fields_by_type_with_defaults() {
        let schema = json!({"type": "object", "properties": {
            "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
            "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
            "ok": {"type": "boolean", "default": true},
            "ratio": {"type": "number"},
            "tags": {"type": "array", "items": {"anyOf": [
                {"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}]}},
            "name": {"type": "string", "description": "Your name", "maxLength": 5}
        }, "required": ["age", "name"]});
        // Keys in order: age, color, name, ok, ratio, tags.
        let (answer, shown) = one(schema, "\n41\n1\nAda\n\n0.5\n2,a\n");
        assert_eq!(
            answer.expect("answered"),
            json!({"action": "accept", "content": {
                "age": 41, "color": "red", "name": "Ada", "ok": true, "ratio": 0.5,
                "tags": ["b", "a"]}})
        );
        assert!(shown.starts_with("The server asks: Tell me\nAnswer, decline or cancel? [A/d/c]: "));
        assert!(shown.contains("Age* (integer, 0 to 150): "), "{shown}");
        assert!(shown.contains("  1) red\n  2) green\ncolor (number or value) [green]: "));
        assert!(shown.contains("  name: Your name\nname* (text): "));
        assert!(shown.contains("ok (yes/no) [true]: "));
        assert!(shown.contains("  1) Alpha (a)\n  2) Beta (b)\n"));
    }

    #[test]
    fn o98_optional_field_left_out_and_default_taken() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "number"}, "s": {"type": "string", "default": "x"}}});
        let (answer, _) = one(schema, "a\n\n\n");
        assert_eq!(
            answer.expect("answered"),
            json!({"action": "accept", "content": {"s": "x"}})
        );
    }

    #[test]
    fn o98_decline_and_cancel_send_no_content() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "number"}}});
        assert_eq!(
            one(schema.clone(), "d\n").0,
            Ok(json!({"action": "decline"}))
        );
        assert_eq!(one(schema, "cancel\n").0, Ok(json!({"action": "cancel"})));
    }

    #[test]
    fn o98_integer_refuses_fractions_and_range() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 3}}, "required": ["n"]});
        let (answer, shown) = one(schema, "a\n1.5\n4\n3\n");
        assert_eq!(
            answer.expect("third try"),
            json!({"action": "accept", "content": {"n": 3}})
        );
        assert!(shown.contains("  not an integer\n"));
        assert!(shown.contains("  out of range, 1 to 3\n"));
    }

    #[test]
    fn o98_attempts_bound_at_and_past() {
        let schema = json!({"type": "object", "properties": {
            "b": {"type": "boolean"}}, "required": ["b"]});
        // MAX_ATTEMPTS - 1 bad answers, then a good one: answered.
        let typed = format!("a\n{}y\n", "maybe\n".repeat(MAX_ATTEMPTS - 1));
        assert_eq!(
            one(schema.clone(), &typed).0,
            Ok(json!({"action": "accept", "content": {"b": true}}))
        );
        // MAX_ATTEMPTS bad answers: given up, even though a good one follows.
        let typed = format!("a\n{}y\n", "maybe\n".repeat(MAX_ATTEMPTS));
        assert_eq!(
            one(schema, &typed).0,
            Err(AskError::Attempts("b".to_owned()))
        );
    }

    #[test]
    fn o98_required_field_without_default_is_asked_again() {
        let schema = json!({"type": "object", "properties": {
            "s": {"type": "string", "minLength": 2}}, "required": ["s"]});
        let (answer, shown) = one(schema, "a\n\nx\nxy\n");
        assert_eq!(
            answer.expect("answered"),
            json!({"action": "accept", "content": {"s": "xy"}})
        );
        assert!(shown.contains("  this field is required\n"));
        assert!(shown.contains("  2 to any characters\n"));
    }

    #[test]
    fn o98_answers_are_checked_against_the_field_schema_formats_included() {
        let schema = json!({"type": "object", "properties": {
            "mail": {"type": "string", "format": "email"},
            "day": {"type": "string", "format": "date"}}, "required": ["mail", "day"]});
        let (answer, shown) = one(
            schema,
            "a\n2026-13-45\n2026-12-01\nnot-a-mail\nada@example.test\n",
        );
        assert_eq!(
            answer.expect("answered"),
            json!({"action": "accept", "content": {"day": "2026-12-01", "mail": "ada@example.test"}})
        );
        assert!(shown.contains("day* (text, date): "), "{shown}");
        assert!(
            shown.contains("\"2026-13-45\" is not a \"date\""),
            "{shown}"
        );
        assert!(
            shown.contains("\"not-a-mail\" is not a \"email\""),
            "{shown}"
        );
    }

    #[test]
    fn o98_line_bound_at_and_past() {
        let schema = json!({"type": "object", "properties": {"s": {"type": "string"}}});
        let at = format!("a\n{}\n", "x".repeat(MAX_LINE_BYTES));
        let (answer, _) = one(schema.clone(), &at);
        assert_eq!(
            answer.expect("at the bound")["content"]["s"]
                .as_str()
                .map(str::len),
            Some(MAX_LINE_BYTES)
        );
        let past = format!("a\n{}\n", "x".repeat(MAX_LINE_BYTES + 1));
        assert_eq!(one(schema, &past).0, Err(AskError::TooLong));
    }

    #[test]
    fn o98_end_of_input_gives_up() {
        let schema = json!({"type": "object", "properties": {"s": {"type": "string"}}});
        assert_eq!(one(schema, "a\n").0, Err(AskError::Closed("s".to_owned())));
    }

    #[test]
    fn o98_url_mode_shows_the_url_and_asks_consent() {
        let requests = json!({"login": {"method": "elicitation/create", "params": {
            "mode": "url", "message": "Sign in", "url": "https://example.test/auth",
            "elicitationId": "e1"}}});
        let (yes, shown) = run(requests.clone(), "y\n");
        assert_eq!(
            Value::Object(yes.expect("answered")),
            json!({"login": {"action": "accept"}})
        );
        assert_eq!(
            shown,
            "The server asks you to open a URL: Sign in\n  URL: https://example.test/auth\n  \
             (strict-mcp does not open it; open it yourself if you agree)\n\
             Do you consent to open this URL? [y/N]: "
        );
        // No (or just Enter) declines.
        let (no, _) = run(requests, "\n");
        assert_eq!(
            Value::Object(no.expect("answered")),
            json!({"login": {"action": "decline"}})
        );
    }

    #[test]
    fn o98_sampling_is_not_answered_on_the_terminal() {
        let requests = json!({"s": {"method": "sampling/createMessage", "params": {
            "messages": [], "maxTokens": 5}}});
        assert!(matches!(run(requests, "").0, Err(AskError::Unsupported(_))));
    }
}
