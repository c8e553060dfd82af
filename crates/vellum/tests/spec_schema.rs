//! What the server emits, validated against the official JSON Schema of each protocol
//! version, and the official 2026-07-28 examples parsed as our Rust types.
//!
//! The schemas live outside the repository: `VELLUM_SPEC_SCHEMA_DIR` (set by
//! `scripts/test.sh`), else `<workspace>/../shared/spec-schema`. The tests that need them are
//! `#[ignore]`d with that reason, so a plain `cargo test` lists them as ignored rather than
//! passing them vacuously; `scripts/test.sh` runs them (`--ignored`) when the schemas are
//! there, says at its start and in its last line that they were skipped when they are not,
//! and under `CI=true` fails instead. Run by hand, a test without the schemas fails, saying
//! where it looked.
//!
//! Each version's scenario runs real requests through [`vellum::transport::Connection`] (and,
//! for 2026-07-28, a few through HTTP) and validates every message that comes back against
//! the envelope definition (`JSONRPCResponse`, `JSONRPCNotification`, ...), the union
//! (`ServerResult`, `ServerNotification`, `ServerRequest`) and the specific definition of its
//! method or error code. Each scenario then checks that the definitions it was meant to
//! reach were all reached.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use reqwest::StatusCode;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use vellum::protocol::{
    CallToolParams, CallToolResult, CancelledParams, ClientCapabilities, CompleteParams,
    CompleteResult, ContentBlock, CreateMessageParams, CreateMessageResult, DiscoverResult,
    ElicitParams, ElicitResult, EmptyResult, ErrorObject, GetPromptParams, GetPromptResult,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListRootsResult,
    ListToolsResult, LoggingMessageParams, Message, ModelPreferences, NotificationParams,
    PaginatedParams, Payload, ProgressParams, ReadResourceParams, ReadResourceResult, Resource,
    ResourceContents, ResourceUpdatedParams, Root, SamplingContent, SamplingMessage,
    ServerCapabilities, SubscriptionsAcknowledgedParams, SubscriptionsListenParams, Tool,
};
use vellum::transport::http::StreamableHttpOptions;

use vellum_testkit::conn::Conn;
use vellum_testkit::fixture::test_server;
use vellum_testkit::http::TestHttpServer;

const VERSIONS: [&str; 4] = ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];
const MODERN: &str = "2026-07-28";

// ---- the schemas ---------------------------------------------------------------------------

fn schema_path() -> PathBuf {
    match std::env::var_os("VELLUM_SPEC_SCHEMA_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/spec-schema"),
    }
}

fn schema_dir() -> PathBuf {
    let dir = schema_path();
    if !dir.join(MODERN).join("schema.json").is_file() {
        panic!(
            "\n\nTHE OFFICIAL MCP JSON SCHEMAS ARE MISSING: no {}/{MODERN}/schema.json.\n\
             Set VELLUM_SPEC_SCHEMA_DIR to the spec-schema folder (one sub-folder per protocol \
             version with schema.json, and 2026-07-28/examples/), or run `bash scripts/test.sh`.\n\n",
            dir.display()
        );
    }
    dir
}

/// One version's schema document, with compiled validators per definition.
struct Schema {
    version: &'static str,
    doc: Value,
    /// `definitions` (draft-07) or `$defs` (2020-12).
    defs_key: &'static str,
    validators: HashMap<String, jsonschema::Validator>,
    /// Every definition something was validated against.
    reached: BTreeSet<String>,
    /// Failures of [`check_inline`].
    inline_errors: Vec<String>,
}

impl Schema {
    fn load(version: &'static str) -> Schema {
        let path = schema_dir().join(version).join("schema.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let doc: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        let defs_key = if doc.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        assert!(
            doc[defs_key].as_object().is_some_and(|d| d.len() > 50),
            "{}: no definitions",
            path.display()
        );
        Schema {
            version,
            doc,
            defs_key,
            validators: HashMap::new(),
            reached: BTreeSet::new(),
            inline_errors: Vec::new(),
        }
    }

    fn has(&self, def: &str) -> bool {
        self.doc[self.defs_key].get(def).is_some()
    }

    fn definition(&self, def: &str) -> &Value {
        &self.doc[self.defs_key][def]
    }

    /// Validates `instance` against definition `def` (the whole document is the root, so
    /// every `$ref` resolves).
    fn check(&mut self, def: &str, instance: &Value) -> Result<(), String> {
        assert!(self.has(def), "{}: no definition {def}", self.version);
        if !self.validators.contains_key(def) {
            let mut root = self.doc.clone();
            root["$ref"] = Value::String(format!("#/{}/{def}", self.defs_key));
            let v = jsonschema::options()
                .should_validate_formats(true)
                .build(&root)
                .unwrap_or_else(|e| panic!("{}: {def} does not compile: {e}", self.version));
            self.validators.insert(def.to_owned(), v);
        }
        self.reached.insert(def.to_owned());
        let v = &self.validators[def];
        let errors: Vec<String> = v
            .iter_errors(instance)
            .take(5)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} {def}: {}\n      instance: {instance}",
                self.version,
                errors.join("; ")
            ))
        }
    }
}

// ---- validating what the server emits -----------------------------------------------------

/// The result definition of each method's success.
fn result_def(method: &str, result: &Value) -> &'static str {
    match method {
        "initialize" => "InitializeResult",
        "ping" | "logging/setLevel" => "EmptyResult",
        "tools/list" => "ListToolsResult",
        "tools/call" if result["resultType"] == "input_required" => "InputRequiredResult",
        "tools/call" => "CallToolResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "completion/complete" => "CompleteResult",
        "server/discover" => "DiscoverResult",
        other => panic!("no result definition known for {other}"),
    }
}

/// The 2026-07-28 definition of an error code, when it has one.
fn modern_error_def(code: i64) -> Option<&'static str> {
    Some(match code {
        -32700 => "ParseError",
        -32600 => "InvalidRequestError",
        -32601 => "MethodNotFoundError",
        -32602 => "InvalidParamsError",
        -32603 => "InternalError",
        -32020 => "HeaderMismatchError",
        -32021 => "MissingRequiredClientCapabilityError",
        -32022 => "UnsupportedProtocolVersionError",
        _ => return None,
    })
}

/// Validates one server message. `method` is the method of the request it answers.
fn validate(schema: &mut Schema, message: &Value, method: Option<&str>) -> Vec<String> {
    let mut errors = Vec::new();
    let mut check = |schema: &mut Schema, def: &str, v: &Value| {
        if let Err(e) = schema.check(def, v) {
            errors.push(e);
        }
    };
    let modern = schema.version == MODERN;
    let has_id = message.get("id").is_some();
    // 2025-03-26 and 2025-06-18 require an id in every error response, but an error about a
    // request whose id could not be read has none to give (later versions make `id`
    // optional for exactly this): for those, only the error object is checked (below).
    let idless_error = message.get("error").is_some() && !has_id;
    if !idless_error || schema.has("JSONRPCErrorResponse") {
        check(schema, "JSONRPCMessage", message);
    }
    if let Some(m) = message.get("method").and_then(Value::as_str) {
        if has_id {
            check(schema, "JSONRPCRequest", message);
            check(schema, "ServerRequest", message);
            match m {
                "elicitation/create" => check(schema, "ElicitRequest", message),
                other => panic!("the server sent an unexpected request {other}"),
            }
        } else {
            check(schema, "JSONRPCNotification", message);
            check(schema, "ServerNotification", message);
            match m {
                "notifications/progress" => check(schema, "ProgressNotification", message),
                "notifications/message" => check(schema, "LoggingMessageNotification", message),
                other => panic!("the server sent an unexpected notification {other}"),
            }
        }
    } else if let Some(result) = message.get("result") {
        let method = method.expect("a response answers a request we sent");
        let envelope = if schema.has("JSONRPCResultResponse") {
            "JSONRPCResultResponse"
        } else {
            "JSONRPCResponse"
        };
        check(schema, envelope, message);
        check(schema, "ServerResult", result);
        let def = result_def(method, result);
        check(schema, def, result);
        if modern {
            // 2026-07-28 also defines whole responses per method.
            let response_def = format!("{}Response", def.replace("InputRequired", "CallTool"));
            if schema.has(&response_def) {
                check(schema, &response_def, message);
            }
        }
    } else if let Some(error) = message.get("error") {
        let envelope = if schema.has("JSONRPCErrorResponse") {
            "JSONRPCErrorResponse"
        } else {
            "JSONRPCError"
        };
        if has_id || schema.has("JSONRPCErrorResponse") {
            check(schema, envelope, message);
        } else {
            let error_schema = schema.definition("JSONRPCError")["properties"]["error"].clone();
            check_inline(schema, &error_schema, error);
        }
        let code = error["code"].as_i64().unwrap_or_default();
        if modern && let Some(def) = modern_error_def(code) {
            // Some are defined as error objects, some as whole responses.
            let whole = schema.definition(def)["properties"].get("error").is_some();
            check(schema, def, if whole { message } else { error });
        }
    } else {
        errors.push(format!("not a JSON-RPC message: {message}"));
    }
    errors
}

/// Validates against a sub-schema that has no definition of its own (it is self-contained).
fn check_inline(schema: &mut Schema, sub: &Value, instance: &Value) {
    let v = jsonschema::validator_for(sub).expect("the sub-schema compiles");
    schema.reached.insert("JSONRPCError".into());
    if !v.is_valid(instance) {
        schema
            .inline_errors
            .push(format!("{}: {instance} breaks {sub}", schema.version));
    }
}

/// Sends a request, answers any elicitation with a name, validates every message until
/// the response; returns the response.
async fn exchange(
    conn: &mut Conn,
    schema: &mut Schema,
    errors: &mut Vec<String>,
    request: Value,
) -> Value {
    let id = request["id"].clone();
    let method = request["method"].as_str().map(str::to_owned);
    conn.send(&request).await;
    loop {
        let m = conn.recv().await;
        let is_request = m.get("method").is_some() && m.get("id").is_some();
        let is_response = m.get("id") == Some(&id) && m.get("method").is_none();
        let msg_method = if is_response { method.as_deref() } else { None };
        errors.extend(validate(schema, &m, msg_method));
        if is_request {
            conn.send(&json!({"jsonrpc": "2.0", "id": m["id"],
                "result": {"action": "accept", "content": {"name": "Bob"}}}))
                .await;
        }
        if is_response {
            return m;
        }
    }
}

/// Sends raw text that draws one error, and validates it.
async fn raw_error(conn: &mut Conn, schema: &mut Schema, errors: &mut Vec<String>, text: &str) {
    conn.send_raw(text).await;
    let m = conn.recv().await;
    assert!(m.get("error").is_some(), "{text:?} drew {m}");
    errors.extend(validate(schema, &m, None));
}

/// The requests every version's scenario sends (params get `_meta` added in 2026-07-28).
fn scenario_requests(version: &str) -> Vec<(&'static str, Value)> {
    let mut r = vec![
        ("tools/list", json!({})),
        (
            "tools/call",
            json!({"name": "hello_world", "arguments": {"user_name": "Alice"}}),
        ),
        (
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
        ),
        ("tools/call", json!({"name": "fail", "arguments": {}})),
        (
            "tools/call",
            json!({"name": "hello_world", "arguments": {}}),
        ),
        ("tools/call", json!({"name": "nope", "arguments": {}})),
        (
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 2}, "_meta": {"progressToken": "t"}}),
        ),
        (
            "tools/call",
            json!({"name": "log", "arguments": {"message": "m"}}),
        ),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "test://greeting"})),
        ("resources/read", json!({"uri": "test://items/7"})),
        ("resources/read", json!({"uri": "test://missing"})),
        ("prompts/list", json!({})),
        (
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ann"}}),
        ),
        ("prompts/get", json!({"name": "greet"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"},
                   "argument": {"name": "name", "value": "B"}}),
        ),
        ("no/such/method", json!({})),
    ];
    if version != "2025-03-26" {
        // Elicitation exists from 2025-06-18 on.
        r.push(("tools/call", json!({"name": "ask", "arguments": {}})));
    }
    if version == MODERN {
        r.push(("server/discover", json!({})));
    } else {
        r.push(("ping", json!({})));
        r.push(("logging/setLevel", json!({"level": "debug"})));
        // Log again now that the level allows it.
        r.push((
            "tools/call",
            json!({"name": "log", "arguments": {"message": "m"}}),
        ));
    }
    r
}

fn modern_meta(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "vellum-tests", "version": "0.0.0"},
        "io.modelcontextprotocol/logLevel": "debug"
    });
    if let (Value::Object(m), Value::Object(e)) = (&mut meta, extra) {
        m.extend(e);
    }
    meta
}

/// The definitions each version's scenario must reach.
fn must_reach(version: &str) -> Vec<&'static str> {
    let mut d = vec![
        "JSONRPCMessage",
        "JSONRPCNotification",
        "ServerResult",
        "ServerNotification",
        "ListToolsResult",
        "CallToolResult",
        "ListResourcesResult",
        "ListResourceTemplatesResult",
        "ReadResourceResult",
        "ListPromptsResult",
        "GetPromptResult",
        "CompleteResult",
        "ProgressNotification",
        "LoggingMessageNotification",
    ];
    match version {
        "2025-03-26" => d.extend([
            "InitializeResult",
            "EmptyResult",
            "JSONRPCResponse",
            "JSONRPCError",
        ]),
        "2025-06-18" => d.extend([
            "InitializeResult",
            "EmptyResult",
            "JSONRPCResponse",
            "JSONRPCError",
            "JSONRPCRequest",
            "ServerRequest",
            "ElicitRequest",
        ]),
        "2025-11-25" => d.extend([
            "InitializeResult",
            "EmptyResult",
            "JSONRPCResultResponse",
            "JSONRPCErrorResponse",
            "JSONRPCRequest",
            "ServerRequest",
            "ElicitRequest",
        ]),
        _ => d.extend([
            "JSONRPCResultResponse",
            "JSONRPCErrorResponse",
            "DiscoverResult",
            "DiscoverResultResponse",
            "InputRequiredResult",
            "CallToolResultResponse",
            "ListToolsResultResponse",
            "ReadResourceResultResponse",
            "ParseError",
            "InvalidRequestError",
            "MethodNotFoundError",
            "InvalidParamsError",
            "UnsupportedProtocolVersionError",
            "HeaderMismatchError",
        ]),
    }
    d
}

async fn run_version(version: &'static str) -> Vec<String> {
    let mut schema = Schema::load(version);
    let fixture = test_server();
    let mut conn = Conn::new(fixture.server.clone());
    let mut errors = Vec::new();
    let modern = version == MODERN;

    if !modern {
        let caps = if version == "2025-03-26" {
            json!({})
        } else {
            json!({"elicitation": {}})
        };
        exchange(
            &mut conn,
            &mut schema,
            &mut errors,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": caps,
                "clientInfo": {"name": "vellum-tests", "version": "0.0.0"}}}),
        )
        .await;
        conn.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }

    for (i, (method, params)) in scenario_requests(version).into_iter().enumerate() {
        let mut params = params;
        if modern {
            let extra = params.get("_meta").cloned().unwrap_or(json!({}));
            params["_meta"] = modern_meta(extra);
        }
        let id = i64::try_from(i).expect("few requests") + 1;
        exchange(
            &mut conn,
            &mut schema,
            &mut errors,
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .await;
    }

    // Modern MRTR: the retry with the answer completes the call.
    if modern {
        let mut params = json!({"name": "ask", "arguments": {},
            "inputResponses": {"1": {"action": "accept", "content": {"name": "Bob"}}}});
        params["_meta"] = modern_meta(json!({}));
        let r = exchange(
            &mut conn,
            &mut schema,
            &mut errors,
            json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call", "params": params}),
        )
        .await;
        assert_eq!(r["result"]["content"][0]["text"], "Hello, Bob", "{r}");

        // Unsupported version and missing capabilities.
        exchange(
            &mut conn,
            &mut schema,
            &mut errors,
            json!({"jsonrpc": "2.0", "id": 901,
            "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2099-01-01",
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .await;
        exchange(
            &mut conn,
            &mut schema,
            &mut errors,
            json!({"jsonrpc": "2.0", "id": 902,
            "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN}}}),
        )
        .await;
    }

    raw_error(&mut conn, &mut schema, &mut errors, "{not json").await;
    raw_error(
        &mut conn,
        &mut schema,
        &mut errors,
        r#"{"jsonrpc":"1.0","id":77,"method":"ping"}"#,
    )
    .await;
    raw_error(&mut conn, &mut schema, &mut errors, "[1]").await;

    if modern {
        errors.extend(modern_over_http(&mut schema, &fixture.server).await);
    }

    errors.append(&mut schema.inline_errors);
    let left = conn.settle().await;
    assert!(left.is_empty(), "{version}: unexpected messages {left:?}");
    for def in must_reach(version) {
        if !schema.reached.contains(def) {
            errors.push(format!("{version}: the scenario never reached {def}"));
        }
    }
    errors
}

/// 2026-07-28 over HTTP: a call, and the header checks only HTTP has.
async fn modern_over_http(schema: &mut Schema, server: &vellum::server::Server) -> Vec<String> {
    let srv = TestHttpServer::start(server.clone(), StreamableHttpOptions::default()).await;
    let mut c = srv.client();
    let mut errors = Vec::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "hello_world", "arguments": {"user_name": "Alice"},
        "_meta": modern_meta(json!({}))}});

    // Without MCP-Protocol-Version: a header mismatch, 400.
    let a = c.post(&body).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.text());
    assert_eq!(a.messages[0]["error"]["code"], -32020, "{}", a.text());
    errors.extend(validate(schema, &a.messages[0], Some("tools/call")));

    // With the version and the mirror headers (SEP-2243): served.
    c.protocol_version = Some(MODERN.into());
    let a = c
        .send(
            c.builder(reqwest::Method::POST)
                .header("mcp-method", "tools/call")
                .header("mcp-name", "hello_world")
                .body(body.to_string()),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());
    for m in &a.messages {
        errors.extend(validate(schema, m, Some("tools/call")));
    }
    assert_eq!(
        a.response(&json!(1))["result"]["content"][0]["text"],
        "Hello World, Alice"
    );
    srv.stop().await;
    errors
}

async fn assert_matches_schema(version: &'static str) {
    let errors = run_version(version).await;
    assert!(errors.is_empty(), "\n{}", errors.join("\n"));
}

#[tokio::test]
#[ignore = "needs the official JSON Schemas (../shared/spec-schema): scripts/test.sh runs it"]
async fn legacy_2025_03_26_messages_match_the_schema() {
    schema_dir();
    assert_matches_schema("2025-03-26").await;
}

#[tokio::test]
#[ignore = "needs the official JSON Schemas (../shared/spec-schema): scripts/test.sh runs it"]
async fn legacy_2025_06_18_messages_match_the_schema() {
    schema_dir();
    assert_matches_schema("2025-06-18").await;
}

#[tokio::test]
#[ignore = "needs the official JSON Schemas (../shared/spec-schema): scripts/test.sh runs it"]
async fn legacy_2025_11_25_messages_match_the_schema() {
    schema_dir();
    assert_matches_schema("2025-11-25").await;
}

#[tokio::test]
#[ignore = "needs the official JSON Schemas (../shared/spec-schema): scripts/test.sh runs it"]
async fn modern_2026_07_28_messages_match_the_schema() {
    schema_dir();
    assert_matches_schema("2026-07-28").await;
}

#[test]
#[ignore = "needs the official JSON Schemas (../shared/spec-schema): scripts/test.sh runs it"]
fn the_validator_rejects_what_the_schema_forbids() {
    schema_dir();
    // A guard against a setup that accepts everything.
    for version in VERSIONS {
        let mut s = Schema::load(version);
        assert!(
            s.check("CallToolResult", &json!({"content": "not a list"}))
                .is_err()
        );
        assert!(
            s.check("ListToolsResult", &json!({"tools": [{"name": 3}]}))
                .is_err()
        );
        let mut tool = json!({"name": "t", "inputSchema": {"type": "object"}});
        if version == MODERN {
            tool = json!({"resultType": "complete", "tools": [tool], "ttlMs": 0, "cacheScope": "public"});
        } else {
            tool = json!({"tools": [tool]});
        }
        assert!(s.check("ListToolsResult", &tool).is_ok(), "{version}");
    }
}

/// Without the schemas nothing passes vacuously: the tests that need them are ignored (the
/// test binary lists them so), and `scripts/test.sh` says that it skips them and why, or
/// under `CI=true` refuses to run.
#[test]
fn a_run_without_the_schemas_says_what_it_skipped() {
    let ignored = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--list", "--ignored", "--format", "terse"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&ignored.stdout);
    assert_eq!(listed.lines().count(), 6, "{listed}");
    assert!(
        listed.contains("modern_2026_07_28_messages_match_the_schema: test"),
        "{listed}"
    );

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test.sh");
    let run = |ci: Option<&str>| {
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(&script)
            .arg("--skips")
            .env("VELLUM_SPEC_SCHEMA_DIR", "/nonexistent/spec-schema")
            .env_remove("CI");
        if let Some(ci) = ci {
            cmd.env("CI", ci);
        }
        cmd.output().unwrap()
    };
    let plain = run(None);
    let said = String::from_utf8_lossy(&plain.stdout);
    assert!(plain.status.success(), "{said}");
    assert!(
        said.contains("SKIPPED 1: spec_schema's 6 schema tests")
            && said.contains("/nonexistent/spec-schema"),
        "{said}"
    );
    let ci = run(Some("true"));
    assert!(!ci.status.success(), "CI=true must not skip them");
    assert!(
        String::from_utf8_lossy(&ci.stderr).contains("CI runs every test"),
        "{}",
        String::from_utf8_lossy(&ci.stderr)
    );
}

#[test]
fn a_round_trip_that_loses_a_field_is_caught() {
    let tool = json!({"name": "t", "inputSchema": {"type": "object"}, "notInOurType": 1});
    assert!(typed::<Tool>(&tool, false).is_err());
    let tool = json!({"name": "t", "inputSchema": {"type": "object"}, "title": "T"});
    assert!(typed::<Tool>(&tool, false).is_ok());
    assert!(check_example("NoSuchType", &tool).is_none());
    assert!(
        check_example(
            "TextContent",
            &json!({"type": "image", "data": "", "mimeType": "x"})
        )
        .is_some_and(|r| r.is_err())
    );
}

// ---- the official 2026-07-28 examples as our types --------------------------------------

/// Keys of a result that the era's framing adds around our result types (see
/// `server::dispatch`), so a round trip through the type does not keep them.
const FRAMING: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

/// Equal as JSON values, with numbers compared by value.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_json(v, w))
        }
        _ => a == b,
    }
}

fn without_framing(v: &Value) -> Value {
    let mut v = v.clone();
    if let Value::Object(m) = &mut v {
        for k in FRAMING {
            m.remove(k);
        }
    }
    v
}

/// Parses `v` as `T` and checks that serializing it back loses nothing.
fn typed<T: DeserializeOwned + Serialize>(v: &Value, framing: bool) -> Result<(), String> {
    let parsed: T =
        serde_json::from_value(v.clone()).map_err(|e| format!("does not parse: {e}"))?;
    let back = serde_json::to_value(&parsed).map_err(|e| format!("does not serialize: {e}"))?;
    let want = if framing {
        without_framing(v)
    } else {
        v.clone()
    };
    if same_json(&want, &back) {
        Ok(())
    } else {
        Err(format!(
            "round trip changed it:\n      want {want}\n      got  {back}"
        ))
    }
}

fn decode(v: &Value) -> Result<Message, String> {
    let bytes = bytes::Bytes::from(v.to_string());
    match vellum::protocol::decode(&bytes).map_err(|e| format!("does not decode: {e}"))? {
        Payload::Single(m) => Ok(m),
        Payload::Batch(_) => Err("decodes as a batch".into()),
    }
}

fn params_of(v: &Value) -> Value {
    v.get("params").cloned().unwrap_or_else(|| json!({}))
}

/// A request of `method` whose params are `P`.
fn request<P: DeserializeOwned + Serialize>(v: &Value, method: &str) -> Result<(), String> {
    match decode(v)? {
        Message::Request(r) if r.method == method => typed::<P>(&params_of(v), false),
        other => Err(format!("expected a {method} request, decoded {other:?}")),
    }
}

/// A notification of `method` whose params are `P`.
fn notification<P: DeserializeOwned + Serialize>(v: &Value, method: &str) -> Result<(), String> {
    match decode(v)? {
        Message::Notification(n) if n.method == method => typed::<P>(&params_of(v), false),
        other => Err(format!(
            "expected a {method} notification, decoded {other:?}"
        )),
    }
}

/// A success response whose result is `R`.
fn result_response<R: DeserializeOwned + Serialize>(v: &Value) -> Result<(), String> {
    match decode(v)? {
        Message::Response(r) if r.outcome.is_ok() => typed::<R>(&v["result"], true),
        other => Err(format!("expected a result response, decoded {other:?}")),
    }
}

/// An error response with this code.
fn error_response(v: &Value, code: i64) -> Result<(), String> {
    match decode(v)? {
        Message::Response(r) => match r.outcome {
            Err(e) if e.code == code => typed::<ErrorObject>(&v["error"], false),
            other => Err(format!("expected error {code}, got {other:?}")),
        },
        other => Err(format!("expected an error response, decoded {other:?}")),
    }
}

/// An error object with this code.
fn error_object(v: &Value, code: i64) -> Result<(), String> {
    typed::<ErrorObject>(v, false)?;
    (v["code"] == code)
        .then_some(())
        .ok_or_else(|| format!("expected code {code}"))
}

/// A content block of this `type`.
fn content(v: &Value, kind: &str) -> Result<(), String> {
    (v["type"] == kind)
        .then_some(())
        .ok_or_else(|| format!("not a {kind} block"))?;
    typed::<ContentBlock>(v, false)
}

/// A sampling content block of this `type`.
fn sampling_content(v: &Value, kind: &str) -> Result<(), String> {
    (v["type"] == kind)
        .then_some(())
        .ok_or_else(|| format!("not a {kind} block"))?;
    typed::<SamplingContent>(v, false)
}

/// Checks one example against our type for its folder; `None` if the folder has no mapping.
fn check_example(folder: &str, v: &Value) -> Option<Result<(), String>> {
    Some(match folder {
        // Content.
        "TextContent" => content(v, "text"),
        "ImageContent" => content(v, "image"),
        "AudioContent" => content(v, "audio"),
        "ResourceLink" => content(v, "resource_link"),
        "EmbeddedResource" => content(v, "resource"),
        "ToolUseContent" => sampling_content(v, "tool_use"),
        "ToolResultContent" => sampling_content(v, "tool_result"),
        "TextResourceContents" => typed::<ResourceContents>(v, false)
            .and_then(|()| v.get("text").map(|_| ()).ok_or_else(|| "no text".into())),
        "BlobResourceContents" => typed::<ResourceContents>(v, false)
            .and_then(|()| v.get("blob").map(|_| ()).ok_or_else(|| "no blob".into())),
        "SamplingMessage" => typed::<SamplingMessage>(v, false),
        "ModelPreferences" => typed::<ModelPreferences>(v, false),
        "Resource" => typed::<Resource>(v, false),
        "Root" => typed::<Root>(v, false),
        "Tool" => typed::<Tool>(v, false),
        "ClientCapabilities" => typed::<ClientCapabilities>(v, false),
        "ServerCapabilities" => typed::<ServerCapabilities>(v, false),
        // Elicitation's requested-schema properties are plain JSON objects in this SDK.
        "BooleanSchema"
        | "NumberSchema"
        | "StringSchema"
        | "TitledMultiSelectEnumSchema"
        | "TitledSingleSelectEnumSchema"
        | "UntitledMultiSelectEnumSchema"
        | "UntitledSingleSelectEnumSchema" => typed::<JsonObject>(v, false),
        // Params.
        "CallToolRequestParams" => typed::<CallToolParams>(v, false),
        "CancelledNotificationParams" => typed::<CancelledParams>(v, false),
        "CompleteRequestParams" => typed::<CompleteParams>(v, false),
        "CreateMessageRequestParams" => typed::<CreateMessageParams>(v, false),
        "ElicitRequestFormParams" => typed::<ElicitParams>(v, false).and_then(|()| {
            match serde_json::from_value::<ElicitParams>(v.clone()) {
                Ok(ElicitParams::Form(_)) => Ok(()),
                other => Err(format!("parsed as {other:?}, not a form")),
            }
        }),
        "ElicitRequestURLParams" => typed::<ElicitParams>(v, false).and_then(|()| {
            match serde_json::from_value::<ElicitParams>(v.clone()) {
                Ok(ElicitParams::Url(_)) => Ok(()),
                other => Err(format!("parsed as {other:?}, not a URL request")),
            }
        }),
        "GetPromptRequestParams" => typed::<GetPromptParams>(v, false),
        "LoggingMessageNotificationParams" => typed::<LoggingMessageParams>(v, false),
        "PaginatedRequestParams" => typed::<PaginatedParams>(v, false),
        "ProgressNotificationParams" => typed::<ProgressParams>(v, false),
        "ResourceUpdatedNotificationParams" => typed::<ResourceUpdatedParams>(v, false),
        "InputRequests" => typed::<InputRequests>(v, false),
        "InputResponses" => typed::<InputResponses>(v, false),
        // Results.
        "CallToolResult" => typed::<CallToolResult>(v, true),
        "CompleteResult" => typed::<CompleteResult>(v, true),
        "CreateMessageResult" => typed::<CreateMessageResult>(v, false),
        "DiscoverResult" => typed::<DiscoverResult>(v, true),
        "ElicitResult" => typed::<ElicitResult>(v, false),
        "GetPromptResult" => typed::<GetPromptResult>(v, true),
        "InputRequiredResult" => typed::<InputRequiredResult>(v, true),
        "ListPromptsResult" => typed::<ListPromptsResult>(v, true),
        "ListResourceTemplatesResult" => typed::<ListResourceTemplatesResult>(v, true),
        "ListResourcesResult" => typed::<ListResourcesResult>(v, true),
        "ListRootsResult" => typed::<ListRootsResult>(v, false),
        "ListToolsResult" => typed::<ListToolsResult>(v, true),
        "ReadResourceResult" => typed::<ReadResourceResult>(v, true),
        "SubscriptionsListenResult" => typed::<EmptyResult>(v, true),
        // Whole messages.
        "CallToolRequest" => request::<CallToolParams>(v, "tools/call"),
        "CompleteRequest" => request::<CompleteParams>(v, "completion/complete"),
        // In 2026-07-28 servers ask the client only inside an InputRequiredResult, where a
        // request is `{method, params}` (the ListRootsRequest example also has an id).
        "CreateMessageRequest" => typed_input_request(v, "sampling/createMessage"),
        "DiscoverRequest" => request::<PaginatedParams>(v, "server/discover"),
        "ElicitRequest" => typed_input_request(v, "elicitation/create"),
        "GetPromptRequest" => request::<GetPromptParams>(v, "prompts/get"),
        "ListPromptsRequest" => request::<PaginatedParams>(v, "prompts/list"),
        "ListResourceTemplatesRequest" => request::<PaginatedParams>(v, "resources/templates/list"),
        "ListResourcesRequest" => request::<PaginatedParams>(v, "resources/list"),
        "ListRootsRequest" => typed_input_request(v, "roots/list"),
        "ListToolsRequest" => request::<PaginatedParams>(v, "tools/list"),
        "ReadResourceRequest" => request::<ReadResourceParams>(v, "resources/read"),
        "SubscriptionsListenRequest" => {
            request::<SubscriptionsListenParams>(v, "subscriptions/listen")
        }
        "CancelledNotification" => notification::<CancelledParams>(v, "notifications/cancelled"),
        "LoggingMessageNotification" => {
            notification::<LoggingMessageParams>(v, "notifications/message")
        }
        "ProgressNotification" => notification::<ProgressParams>(v, "notifications/progress"),
        "PromptListChangedNotification" => {
            notification::<NotificationParams>(v, "notifications/prompts/list_changed")
        }
        "ResourceListChangedNotification" => {
            notification::<NotificationParams>(v, "notifications/resources/list_changed")
        }
        "ToolListChangedNotification" => {
            notification::<NotificationParams>(v, "notifications/tools/list_changed")
        }
        "ResourceUpdatedNotification" => {
            notification::<ResourceUpdatedParams>(v, "notifications/resources/updated")
        }
        "SubscriptionsAcknowledgedNotification" => notification::<SubscriptionsAcknowledgedParams>(
            v,
            "notifications/subscriptions/acknowledged",
        ),
        "CallToolResultResponse" => result_response::<CallToolResult>(v),
        "CompleteResultResponse" => result_response::<CompleteResult>(v),
        "DiscoverResultResponse" => result_response::<DiscoverResult>(v),
        "GetPromptResultResponse" => result_response::<GetPromptResult>(v),
        "ListPromptsResultResponse" => result_response::<ListPromptsResult>(v),
        "ListResourceTemplatesResultResponse" => result_response::<ListResourceTemplatesResult>(v),
        "ListResourcesResultResponse" => result_response::<ListResourcesResult>(v),
        "ListToolsResultResponse" => result_response::<ListToolsResult>(v),
        "ReadResourceResultResponse" => result_response::<ReadResourceResult>(v),
        "SubscriptionsListenResultResponse" => result_response::<EmptyResult>(v),
        // Errors.
        "HeaderMismatchError" => error_response(v, -32020),
        "MissingRequiredClientCapabilityError" => error_response(v, -32021),
        "UnsupportedProtocolVersionError" => error_response(v, -32022),
        "InternalError" => error_object(v, -32603),
        "InvalidParamsError" => error_object(v, -32602),
        "MethodNotFoundError" => error_object(v, -32601),
        "ParseError" => error_object(v, -32700),
        _ => return None,
    })
}

fn typed_input_request(v: &Value, method: &str) -> Result<(), String> {
    let mut inner = Map::new();
    inner.insert("method".into(), v["method"].clone());
    if let Some(p) = v.get("params") {
        inner.insert("params".into(), p.clone());
    }
    let inner = Value::Object(inner);
    match serde_json::from_value::<InputRequest>(inner.clone()) {
        Ok(_) if v["method"] == method => typed::<InputRequest>(&inner, false),
        Ok(other) => Err(format!("parsed as {other:?}")),
        Err(e) => Err(format!("does not parse: {e}")),
    }
}

#[test]
#[ignore = "needs the official JSON Schemas (../shared/spec-schema): scripts/test.sh runs it"]
fn official_examples_parse_as_our_types() {
    schema_dir();
    let dir = schema_dir().join(MODERN).join("examples");
    let mut schema = Schema::load(MODERN);
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    assert!(folders.len() > 50, "only {} example folders", folders.len());

    let mut failures = Vec::new();
    let mut checked: BTreeMap<String, usize> = BTreeMap::new();
    for folder in &folders {
        let name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", folder.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        files.sort();
        if files.is_empty() {
            failures.push(format!("{name}: an empty example folder"));
        }
        for file in files {
            let file_name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            let v: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    failures.push(format!("{name}/{file_name}: not JSON: {e}"));
                    continue;
                }
            };
            // The examples are valid against their own definitions (a check of this
            // test's schema setup as much as of the examples).
            if schema.has(&name)
                && let Err(e) = schema.check(&name, &v)
            {
                failures.push(format!(
                    "{name}/{file_name}: the official schema rejects it: {e}"
                ));
            }
            match check_example(&name, &v) {
                None => {
                    failures.push(format!(
                        "{name}: no Rust type is mapped to this example folder (add it to check_example)"
                    ));
                    break;
                }
                Some(Err(e)) => failures.push(format!("{name}/{file_name}: {e}")),
                Some(Ok(())) => *checked.entry(name.clone()).or_default() += 1,
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} official examples do not fit our types ({} folders):\n\n{}",
        failures.len(),
        folders.len(),
        failures.join("\n\n")
    );
    assert_eq!(checked.len(), folders.len());
}
