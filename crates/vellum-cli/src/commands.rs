//! The client commands: `tools`, `resources`, `prompts`, `ping`. Each connects, makes its
//! calls, prints a readable answer (or exact JSON with `--json`) and closes the session.

use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::{Map, Value};
use vellum::client::{CallOptions, Client};
use vellum::protocol::{CallToolParams, Tool};

use crate::output::{content_text, resource_text, short, table};
use crate::target::Target;

/// `vellum tools …`
#[derive(Debug, Subcommand)]
pub(crate) enum ToolsCommand {
    /// List the server's tools.
    List(ListArgs),
    /// Call a tool: `vellum tools call URL NAME key=value … [--json-args '{…}']`.
    Call(CallArgs),
}

/// `vellum resources …`
#[derive(Debug, Subcommand)]
pub(crate) enum ResourcesCommand {
    /// List the server's resources.
    List(ListArgs),
    /// List the server's resource templates.
    Templates(ListArgs),
    /// Read a resource and print its contents.
    Read(ReadArgs),
}

/// `vellum prompts …`
#[derive(Debug, Subcommand)]
pub(crate) enum PromptsCommand {
    /// List the server's prompts.
    List(ListArgs),
    /// Get a prompt with arguments: `vellum prompts get URL NAME key=value …`.
    Get(GetArgs),
}

/// Flags of the list commands and `ping`.
#[derive(Debug, Args)]
#[command(
    override_usage = "vellum <COMMAND> [OPTIONS] <URL>\n       vellum <COMMAND> [OPTIONS] --stdio <COMMAND>"
)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    target: Target,
    /// The server's Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp.
    #[arg(
        value_name = "URL",
        required_unless_present = "stdio",
        conflicts_with = "stdio"
    )]
    url: Option<String>,
}

impl ListArgs {
    fn into_target(self) -> Target {
        let mut t = self.target;
        t.url = self.url;
        t
    }
}

/// Flags of `tools call`.
#[derive(Debug, Args)]
#[command(
    override_usage = "vellum tools call [OPTIONS] <URL> <TOOL> [KEY=VALUE]...\n       \
                            vellum tools call [OPTIONS] --stdio <COMMAND> <TOOL> [KEY=VALUE]..."
)]
pub(crate) struct CallArgs {
    #[command(flatten)]
    target: Target,
    /// The server's URL (left out with --stdio), the tool's name, then its arguments as
    /// key=value. A value is text when the tool's schema says the argument is a string, and
    /// JSON otherwise when it parses (n=3, flag=true, list=`[1,2]`); key:=JSON always means
    /// JSON.
    #[arg(value_name = "URL TOOL KEY=VALUE", required = true, num_args = 1..)]
    words: Vec<String>,
    /// All arguments as one JSON object (key=value arguments override its keys).
    #[arg(long, value_name = "JSON")]
    json_args: Option<String>,
}

/// Flags of `resources read`.
#[derive(Debug, Args)]
#[command(
    override_usage = "vellum resources read [OPTIONS] <URL> <URI>\n       \
                            vellum resources read [OPTIONS] --stdio <COMMAND> <URI>"
)]
pub(crate) struct ReadArgs {
    #[command(flatten)]
    target: Target,
    /// The server's URL (left out with --stdio), then the resource's URI.
    #[arg(value_name = "URL URI", required = true, num_args = 1..=2)]
    words: Vec<String>,
}

/// Flags of `prompts get`.
#[derive(Debug, Args)]
#[command(
    override_usage = "vellum prompts get [OPTIONS] <URL> <PROMPT> [KEY=VALUE]...\n       \
                            vellum prompts get [OPTIONS] --stdio <COMMAND> <PROMPT> [KEY=VALUE]..."
)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    target: Target,
    /// The server's URL (left out with --stdio), the prompt's name, then its arguments as
    /// key=value (prompt arguments are always text).
    #[arg(value_name = "URL PROMPT KEY=VALUE", required = true, num_args = 1..)]
    words: Vec<String>,
}

/// Flags of `ping`.
pub(crate) type PingArgs = ListArgs;

/// Splits the positional words after the URL into the name and the rest.
fn name_and_rest(
    target: &mut Target,
    words: Vec<String>,
    what: &str,
) -> anyhow::Result<(String, Vec<String>)> {
    let mut rest = target.take_url(words)?;
    if rest.is_empty() {
        bail!("give the {what} after the server");
    }
    let name = rest.remove(0);
    Ok((name, rest))
}

fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// Runs `body` with a connected client and always closes the session.
async fn with_client<F, Fut>(target: &Target, body: F) -> anyhow::Result<()>
where
    F: FnOnce(Client, crate::target::Feedback) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let (client, feedback) = target.connect().await?;
    let result = body(client.clone(), feedback).await;
    client.close().await;
    result
}

pub(crate) async fn tools(cmd: ToolsCommand) -> anyhow::Result<()> {
    match cmd {
        ToolsCommand::List(a) => {
            let target = a.into_target();
            with_client(&target, |client, _| async move {
                let tools = client.list_all_tools().await.context("tools/list failed")?;
                if target.json {
                    return print_json(&serde_json::json!({ "tools": tools }));
                }
                if tools.is_empty() {
                    println!("(no tools)");
                    return Ok(());
                }
                let rows: Vec<Vec<String>> = tools
                    .iter()
                    .map(|t| {
                        vec![
                            t.name.clone(),
                            arguments_of(t),
                            short(t.description.as_deref()),
                        ]
                    })
                    .collect();
                table(&["NAME", "ARGUMENTS", "DESCRIPTION"], &rows);
                Ok(())
            })
            .await
        }
        ToolsCommand::Call(mut a) => {
            let (name, words) =
                name_and_rest(&mut a.target, std::mem::take(&mut a.words), "tool's name")?;
            let target = &a.target;
            with_client(target, |client, feedback| async move {
                // The schema decides whether `key=value` is text or JSON.
                let tool = match words.iter().any(|x| !x.contains(":=")) {
                    true => client
                        .list_all_tools()
                        .await
                        .ok()
                        .and_then(|ts| ts.into_iter().find(|t| t.name == name)),
                    false => None,
                };
                let arguments = tool_arguments(&words, a.json_args.as_deref(), tool.as_ref())?;
                let fb = feedback.clone();
                let params = CallToolParams {
                    name: name.clone(),
                    arguments: Some(arguments),
                    ..Default::default()
                };
                let result = client
                    .call_tool_with(
                        params,
                        CallOptions::default().on_progress(move |p| fb.progress(p)),
                    )
                    .await;
                feedback.finish();
                let result = result.with_context(|| format!("calling the tool {name:?} failed"))?;
                if target.json {
                    print_json(&result)?;
                } else {
                    for c in &result.content {
                        println!("{}", content_text(c));
                    }
                    if result.content.is_empty()
                        && let Some(s) = &result.structured_content
                    {
                        println!("{}", serde_json::to_string_pretty(s)?);
                    }
                }
                if result.is_error() {
                    bail!("the tool {name:?} reported an error");
                }
                Ok(())
            })
            .await
        }
    }
}

/// A tool's arguments for the table: names, `?` for optional ones.
fn arguments_of(tool: &Tool) -> String {
    let required: Vec<&str> = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return String::new();
    };
    props
        .keys()
        .map(|k| {
            if required.contains(&k.as_str()) {
                k.clone()
            } else {
                format!("{k}?")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Builds tool arguments from `key=value` / `key:=json` words and `--json-args`.
pub(crate) fn tool_arguments(
    words: &[String],
    json_args: Option<&str>,
    tool: Option<&Tool>,
) -> anyhow::Result<Map<String, Value>> {
    let mut out = match json_args {
        None => Map::new(),
        Some(text) => match serde_json::from_str(text).context("--json-args is not valid JSON")? {
            Value::Object(m) => m,
            _ => bail!("--json-args must be a JSON object"),
        },
    };
    let string_typed = |key: &str| {
        tool.and_then(|t| t.input_schema.get("properties"))
            .and_then(|p| p.get(key))
            .and_then(|p| p.get("type"))
            .is_some_and(|t| t == "string")
    };
    for w in words {
        if let Some((k, v)) = w.split_once(":=") {
            let value = serde_json::from_str(v)
                .with_context(|| format!("argument {w:?}: the value after := must be JSON"))?;
            out.insert(k.to_owned(), value);
        } else if let Some((k, v)) = w.split_once('=') {
            let value = if string_typed(k) {
                Value::String(v.to_owned())
            } else {
                serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_owned()))
            };
            out.insert(k.to_owned(), value);
        } else {
            bail!("argument {w:?}: expected key=value");
        }
    }
    Ok(out)
}

pub(crate) async fn resources(cmd: ResourcesCommand) -> anyhow::Result<()> {
    match cmd {
        ResourcesCommand::List(a) => {
            let target = a.into_target();
            with_client(&target, |client, _| async move {
                let list = client
                    .list_all_resources()
                    .await
                    .context("resources/list failed")?;
                if target.json {
                    return print_json(&serde_json::json!({ "resources": list }));
                }
                if list.is_empty() {
                    println!("(no resources)");
                    return Ok(());
                }
                let rows: Vec<Vec<String>> = list
                    .iter()
                    .map(|r| {
                        vec![
                            r.uri.clone(),
                            r.name.clone(),
                            r.mime_type.clone().unwrap_or_default(),
                            short(r.description.as_deref()),
                        ]
                    })
                    .collect();
                table(&["URI", "NAME", "MIME TYPE", "DESCRIPTION"], &rows);
                Ok(())
            })
            .await
        }
        ResourcesCommand::Templates(a) => {
            let target = a.into_target();
            with_client(&target, |client, _| async move {
                let list = client
                    .list_all_resource_templates()
                    .await
                    .context("resources/templates/list failed")?;
                if target.json {
                    return print_json(&serde_json::json!({ "resourceTemplates": list }));
                }
                if list.is_empty() {
                    println!("(no resource templates)");
                    return Ok(());
                }
                let rows: Vec<Vec<String>> = list
                    .iter()
                    .map(|t| {
                        vec![
                            t.uri_template.clone(),
                            t.name.clone(),
                            short(t.description.as_deref()),
                        ]
                    })
                    .collect();
                table(&["URI TEMPLATE", "NAME", "DESCRIPTION"], &rows);
                Ok(())
            })
            .await
        }
        ResourcesCommand::Read(mut a) => {
            let (uri, _) = name_and_rest(
                &mut a.target,
                std::mem::take(&mut a.words),
                "resource's URI",
            )?;
            let target = &a.target;
            with_client(target, |client, _| async move {
                let r = client
                    .read_resource(&uri)
                    .await
                    .with_context(|| format!("reading {uri:?} failed"))?;
                if target.json {
                    return print_json(&r);
                }
                for c in &r.contents {
                    println!("{}", resource_text(c));
                }
                Ok(())
            })
            .await
        }
    }
}

pub(crate) async fn prompts(cmd: PromptsCommand) -> anyhow::Result<()> {
    match cmd {
        PromptsCommand::List(a) => {
            let target = a.into_target();
            with_client(&target, |client, _| async move {
                let list = client
                    .list_all_prompts()
                    .await
                    .context("prompts/list failed")?;
                if target.json {
                    return print_json(&serde_json::json!({ "prompts": list }));
                }
                if list.is_empty() {
                    println!("(no prompts)");
                    return Ok(());
                }
                let rows: Vec<Vec<String>> = list
                    .iter()
                    .map(|p| {
                        let args = p
                            .arguments
                            .iter()
                            .flatten()
                            .map(|a| {
                                if a.required == Some(true) {
                                    a.name.clone()
                                } else {
                                    format!("{}?", a.name)
                                }
                            })
                            .collect::<Vec<_>>()
                            .join(" ");
                        vec![p.name.clone(), args, short(p.description.as_deref())]
                    })
                    .collect();
                table(&["NAME", "ARGUMENTS", "DESCRIPTION"], &rows);
                Ok(())
            })
            .await
        }
        PromptsCommand::Get(mut a) => {
            let (name, words) =
                name_and_rest(&mut a.target, std::mem::take(&mut a.words), "prompt's name")?;
            let target = &a.target;
            with_client(target, |client, _| async move {
                let mut args = Vec::new();
                for w in &words {
                    let Some((k, v)) = w.split_once('=') else {
                        bail!("argument {w:?}: expected key=value");
                    };
                    args.push((k.to_owned(), v.to_owned()));
                }
                let r = client
                    .get_prompt(&name, args)
                    .await
                    .with_context(|| format!("getting the prompt {name:?} failed"))?;
                if target.json {
                    return print_json(&r);
                }
                if let Some(d) = &r.description {
                    println!("# {d}");
                }
                for m in &r.messages {
                    let role = match m.role {
                        vellum::protocol::Role::User => "user",
                        vellum::protocol::Role::Assistant => "assistant",
                    };
                    println!("{role}: {}", content_text(&m.content));
                }
                Ok(())
            })
            .await
        }
    }
}

pub(crate) async fn ping(a: PingArgs) -> anyhow::Result<()> {
    let target = a.into_target();
    with_client(&target, |client, _| async move {
        let start = Instant::now();
        client.ping().await.context("ping failed")?;
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        let server = client
            .server_info()
            .map(|i| format!("{} {}", i.name, i.version))
            .unwrap_or_else(|| "the server".into());
        let version = client.protocol_version().unwrap_or_default();
        if target.json {
            return print_json(&serde_json::json!({
                "server": client.server_info(),
                "protocolVersion": version,
                "milliseconds": ms,
            }));
        }
        println!("{server} answered in {ms:.1} ms (protocol {version})");
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_follow_the_schema() {
        let schema = serde_json::json!({"type":"object","properties":{
            "user_name":{"type":"string"},"n":{"type":"integer"}}});
        let tool = Tool::new("t", "d").with_input_schema(schema.as_object().cloned().unwrap());
        let words: Vec<String> = ["user_name=42", "n=3", "x=[1,2]", "y=hello", "z:=\"7\""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let m = tool_arguments(&words, Some(r#"{"w": true}"#), Some(&tool)).unwrap();
        assert_eq!(
            Value::Object(m),
            serde_json::json!({
                "user_name": "42", "n": 3, "x": [1, 2], "y": "hello", "z": "7", "w": true
            })
        );
        assert!(tool_arguments(&["nokey".into()], None, None).is_err());
        assert!(tool_arguments(&[], Some("[1]"), None).is_err());
    }
}
