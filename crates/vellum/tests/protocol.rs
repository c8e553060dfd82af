//! Data-driven protocol tests: every file in `tests/protocol/` is one scripted conversation
//! with the test server (see `vellum_testkit::fixture`), run through [`vellum::transport::Connection`]
//! without HTTP. Adding a case means adding a file; the format is described in
//! `tests/README.md`:
//!
//! ```text
//! What the case checks, in free text (at least one line).
//!
//! -- script --
//! # a comment
//! -> {"jsonrpc":"2.0","id":1,"method":"ping"}      (sent as written)
//! <- {"jsonrpc":"2.0","id":1,"result":{}}          (the next message the server sends)
//! ```
//!
//! Expected messages are compared as JSON values (objects must have exactly the same keys,
//! numbers compare by value). A string in an expected message may be a placeholder:
//! `"<any>"`, `"<string>"`, `"<number>"`, `"<contains:TEXT>"`, or `"<capture:NAME>"` (any value,
//! remembered as NAME; a later `->` line writes it with `${NAME}`). After the script the
//! server must go idle with nothing left unread.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use vellum_testkit::conn::Conn;
use vellum_testkit::fixture::test_server;

/// The file extension of a case.
const EXTENSION: &str = "mcp";
/// The line that ends the header and starts the script.
const SCRIPT_MARKER: &str = "-- script --";
/// How long one expected message may take to arrive.
const MESSAGE_DEADLINE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// Feed this text to the server (after `${NAME}` substitution).
    Send { line: usize, text: String },
    /// The next message from the server must match this.
    Expect { line: usize, message: Value },
}

#[derive(Debug)]
struct Case {
    header: String,
    steps: Vec<Step>,
}

/// Parses a case file; any deviation from the format is an error naming the line.
fn parse_case(text: &str) -> Result<Case, String> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let mut header = Vec::new();
    let mut found_marker = false;
    for (_, line) in lines.by_ref() {
        if line.trim() == SCRIPT_MARKER {
            found_marker = true;
            break;
        }
        header.push(line);
    }
    if !found_marker {
        return Err(format!("no `{SCRIPT_MARKER}` line"));
    }
    let header = header.join("\n").trim().to_owned();
    if header.is_empty() {
        return Err("the header (what the case checks) is empty".into());
    }

    // (line, is_send, text) of each message, with its continuation lines.
    let mut raw: Vec<(usize, bool, String)> = Vec::new();
    for (n, line) in lines {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("->") {
            raw.push((n, true, rest.trim().to_owned()));
        } else if let Some(rest) = line.strip_prefix("<-") {
            raw.push((n, false, rest.trim().to_owned()));
        } else if line.starts_with("--") {
            return Err(format!("line {n}: unknown section {trimmed:?}"));
        } else if let Some(last) = raw.last_mut() {
            last.2.push('\n');
            last.2.push_str(line);
        } else {
            return Err(format!(
                "line {n}: text before the first `->` or `<-`: {trimmed:?}"
            ));
        }
    }

    let mut steps = Vec::new();
    for (line, is_send, text) in raw {
        if text.is_empty() {
            return Err(format!("line {line}: an empty message"));
        }
        if is_send {
            steps.push(Step::Send { line, text });
        } else {
            let message = serde_json::from_str(&text)
                .map_err(|e| format!("line {line}: the expected message is not JSON: {e}"))?;
            steps.push(Step::Expect { line, message });
        }
    }
    if !steps.iter().any(|s| matches!(s, Step::Send { .. })) {
        return Err("the script sends nothing".into());
    }
    if !steps.iter().any(|s| matches!(s, Step::Expect { .. })) {
        return Err("the script expects nothing".into());
    }
    Ok(Case { header, steps })
}

/// Matches `actual` against `expected` (with placeholders); records captures.
fn matches(
    expected: &Value,
    actual: &Value,
    path: &str,
    captures: &mut BTreeMap<String, Value>,
) -> Result<(), String> {
    let mismatch = || {
        format!(
            "at {}: expected {expected}, got {actual}",
            if path.is_empty() { "(root)" } else { path }
        )
    };
    match expected {
        Value::String(s) if s.starts_with('<') && s.ends_with('>') => {
            let inner = &s[1..s.len() - 1];
            let ok = match inner.split_once(':') {
                Some(("capture", name)) => {
                    captures.insert(name.to_owned(), actual.clone());
                    true
                }
                Some(("contains", needle)) => actual.as_str().is_some_and(|a| a.contains(needle)),
                _ => match inner {
                    "any" => true,
                    "string" => actual.is_string(),
                    "number" => actual.is_number(),
                    _ => return Err(format!("at {path}: unknown placeholder {s:?}")),
                },
            };
            ok.then_some(()).ok_or_else(mismatch)
        }
        Value::Object(e) => {
            let Value::Object(a) = actual else {
                return Err(mismatch());
            };
            let missing: Vec<&String> = e.keys().filter(|k| !a.contains_key(*k)).collect();
            let extra: Vec<&String> = a.keys().filter(|k| !e.contains_key(*k)).collect();
            if !missing.is_empty() || !extra.is_empty() {
                return Err(format!(
                    "at {}: missing keys {missing:?}, unexpected keys {extra:?}; expected {expected}, got {actual}",
                    if path.is_empty() { "(root)" } else { path }
                ));
            }
            for (k, ev) in e {
                matches(ev, &a[k], &format!("{path}/{k}"), captures)?;
            }
            Ok(())
        }
        Value::Array(e) => {
            let Value::Array(a) = actual else {
                return Err(mismatch());
            };
            if a.len() != e.len() {
                return Err(mismatch());
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                matches(ev, av, &format!("{path}/{i}"), captures)?;
            }
            Ok(())
        }
        Value::Number(e) => match actual {
            // 1 and 1.0 are the same JSON number.
            Value::Number(a) if a == e || (a.as_f64().is_some() && a.as_f64() == e.as_f64()) => {
                Ok(())
            }
            _ => Err(mismatch()),
        },
        _ if expected == actual => Ok(()),
        _ => Err(mismatch()),
    }
}

/// Replaces every `${NAME}` with the captured value's JSON.
fn substitute(text: &str, captures: &BTreeMap<String, Value>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("an unclosed `${{` in {text:?}"))?;
        let name = &after[..end];
        let value = captures
            .get(name)
            .ok_or_else(|| format!("`${{{name}}}` was never captured"))?;
        out.push_str(&value.to_string());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Runs one case against a fresh test server; returns every failure.
async fn run_case(case: &Case) -> Result<(), String> {
    let fixture = test_server();
    let mut conn = Conn::new(fixture.server.clone());
    let mut captures = BTreeMap::new();
    for step in &case.steps {
        match step {
            Step::Send { line, text } => {
                let text = substitute(text, &captures).map_err(|e| format!("line {line}: {e}"))?;
                conn.send_raw(&text).await;
            }
            Step::Expect { line, message } => {
                let actual = conn
                    .recv_within(MESSAGE_DEADLINE)
                    .await
                    .map_err(|e| format!("line {line}: expected {message}, but {e}"))?;
                matches(message, &actual, "", &mut captures)
                    .map_err(|e| format!("line {line}: {e}"))?;
            }
        }
    }
    // Nothing else may come: wait until every request finished, then look.
    fixture.slow.release();
    let left = tokio::time::timeout(MESSAGE_DEADLINE, conn.settle())
        .await
        .map_err(|_| "the server did not become idle after the script".to_owned())?;
    if !left.is_empty() {
        let left: Vec<String> = left.iter().map(Value::to_string).collect();
        return Err(format!(
            "unexpected messages after the script:\n    {}",
            left.join("\n    ")
        ));
    }
    Ok(())
}

fn case_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/protocol")
}

#[tokio::test]
async fn every_protocol_case_passes() {
    let dir = case_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    files.sort();
    let mut failures = Vec::new();
    let mut ran = 0;
    for file in &files {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if file.extension().and_then(|e| e.to_str()) != Some(EXTENSION) {
            failures.push(format!(
                "{name}: not a .{EXTENSION} case (every file in this folder is run)"
            ));
            continue;
        }
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{name}: unreadable: {e}"));
                continue;
            }
        };
        let outcome = match parse_case(&text) {
            Err(e) => Err(format!("malformed case: {e}")),
            Ok(case) => run_case(&case).await,
        };
        ran += 1;
        if let Err(e) = outcome {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(
        ran >= 10,
        "only {ran} protocol cases found in {}",
        dir.display()
    );
    assert!(
        failures.is_empty(),
        "{} of {} protocol cases failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

// ---- the runner itself --------------------------------------------------------------------

#[test]
fn malformed_cases_are_rejected() {
    let cases = [
        ("no marker", "header only\n-> {}\n"),
        ("empty header", "\n-- script --\n-> {}\n<- {}\n"),
        ("nothing sent", "h\n-- script --\n<- {}\n"),
        ("nothing expected", "h\n-- script --\n-> {}\n"),
        ("bad expected JSON", "h\n-- script --\n-> {}\n<- {oops\n"),
        ("stray text", "h\n-- script --\nhello\n-> {}\n<- {}\n"),
        (
            "unknown section",
            "h\n-- script --\n-> {}\n<- {}\n-- other --\n",
        ),
        ("empty message", "h\n-- script --\n->\n<- {}\n"),
    ];
    for (what, text) in cases {
        assert!(parse_case(text).is_err(), "{what}: accepted");
    }
}

#[test]
fn a_case_parses_into_steps_with_continuations() {
    let case = parse_case(
        "Checks ping.\nTwo lines.\n-- script --\n# c\n-> {\"a\":\n   1}\n\n<- {\"b\": 2}\n",
    )
    .expect("a valid case");
    assert_eq!(case.header, "Checks ping.\nTwo lines.");
    assert_eq!(
        case.steps,
        vec![
            Step::Send {
                line: 5,
                text: "{\"a\":\n   1}".into()
            },
            Step::Expect {
                line: 8,
                message: serde_json::json!({"b": 2})
            },
        ]
    );
}

#[test]
fn matching_is_exact_except_for_placeholders() {
    use serde_json::json;
    let mut caps = BTreeMap::new();
    let ok =
        |e: Value, a: Value, caps: &mut BTreeMap<String, Value>| matches(&e, &a, "", caps).is_ok();
    assert!(ok(json!({"a": 1}), json!({"a": 1.0}), &mut caps));
    assert!(!ok(json!({"a": 1}), json!({"a": 2}), &mut caps));
    assert!(!ok(json!({"a": 1}), json!({"a": 1, "b": 2}), &mut caps));
    assert!(!ok(json!({"a": 1, "b": 2}), json!({"a": 1}), &mut caps));
    assert!(!ok(json!([1, 2]), json!([1, 2, 3]), &mut caps));
    assert!(!ok(json!("1"), json!(1), &mut caps));
    assert!(ok(json!({"a": "<any>"}), json!({"a": [1]}), &mut caps));
    assert!(!ok(json!({"a": "<any>"}), json!({}), &mut caps));
    assert!(ok(json!("<string>"), json!("x"), &mut caps));
    assert!(!ok(json!("<string>"), json!(3), &mut caps));
    assert!(ok(json!("<number>"), json!(3), &mut caps));
    assert!(ok(
        json!("<contains:lo W>"),
        json!("Hello World"),
        &mut caps
    ));
    assert!(!ok(
        json!("<contains:xyz>"),
        json!("Hello World"),
        &mut caps
    ));
    assert!(matches(&json!("<bogus>"), &json!(1), "", &mut caps).is_err());
    assert!(ok(
        json!({"id": "<capture:q>"}),
        json!({"id": 42}),
        &mut caps
    ));
    assert_eq!(
        substitute(r#"{"id":${q}}"#, &caps).as_deref(),
        Ok(r#"{"id":42}"#)
    );
    assert!(substitute("${nope}", &caps).is_err());
}
