//! The config file against the real `vellum serve` definitions: every flag is a key.

use super::*;

/// A value each kind of flag accepts (by its value name), other than its default; a new
/// kind of value needs a line here, and the test says so.
fn sample(arg: &Arg) -> toml::Value {
    if !arg.get_action().takes_values() {
        return toml::Value::Boolean(true);
    }
    let name = arg
        .get_value_names()
        .and_then(|n| n.first())
        .map(|n| n.to_string())
        .unwrap_or_default();
    let s = match name.as_str() {
        "ADDR" => "127.0.0.1:9464",
        "AUDIENCE" => "https://mcp.example/mcp",
        "BYTES" => "1000",
        "BYTES_PER_SEC" => "77",
        "DURATION" => "3s",
        "ID" => "client",
        "ISSUER" => "https://issuer.example",
        "LEVEL|off" => "debug",
        "METHOD=N/s" => "tools/call=3/s",
        "MODE" => "required",
        "N" => "7",
        "N/s" => "5/s",
        "NAME" => "svc",
        "NAME=N/s" => "search=2/s",
        "ORIGIN" => "https://app.example",
        "HOST" => "mcp.example.com",
        "PATH" | "FILE" => "/tmp/vellum-config-test",
        "PEM" => "/tmp/vellum-config-test.pem",
        "PREFIX" => "/ops",
        "SCOPE" if arg.get_long() == Some("cache-scope") => "private",
        "SCOPE" => "read",
        "SECONDS" => "30",
        "SECRET" => "0123456789abcdef0123456789abcdef",
        "TOOL=SCOPE" => "delete=files:write",
        "URL" => "https://x.example/",
        "VERSION[,VERSION...]" => "2026-07-28,2025-11-25",
        "memory[:BYTES]|redis://HOST:PORT|redis-cluster://HOST:PORT[,HOST:PORT...]" => {
            "memory:1000"
        }
        n if n.starts_with("memory|redis://") => "memory",
        n if n.starts_with("redis://") => "redis://127.0.0.1:6379",
        "SERVER" => "everything",
        "ADDR|CIDR" => "10.0.0.0/8",
        "BITS" => "56",
        "HEADER" => "forwarded",
        other => panic!(
            "no sample value for --{} (value name {other:?}): add one to config/tests.rs",
            arg.get_long().unwrap_or_default()
        ),
    };
    match arg.get_action() {
        ArgAction::Append => toml::Value::Array(vec![toml::Value::String(s.into())]),
        _ => toml::Value::String(s.into()),
    }
}

/// Keys a key needs beside it (clap's `requires`).
fn companions(key: &str) -> &'static [(&'static str, &'static str)] {
    match key {
        "tls-cert" => &[("tls-key", "/tmp/k.pem")],
        "tls-key" => &[("tls-cert", "/tmp/c.pem")],
        "rate-burst" => &[("rate-limit", "5/s")],
        "bench-wait-redis" => &[("bench-wait-http", "http://127.0.0.1:1/")],
        "bench-wait-http" => &[("bench-wait-redis", "redis://127.0.0.1:1")],
        "auth-client-id" => &[("auth-introspection-url", "https://as.example/introspect")],
        "auth-client-secret" => &[
            ("auth-client-id", "c"),
            ("auth-introspection-url", "https://as.example/introspect"),
        ],
        _ => &[],
    }
}

/// A config file of `text` (a fresh path per call).
fn file(text: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let path = std::env::temp_dir().join(format!(
        "vellum-config-{}-{}.toml",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, text).unwrap();
    path
}

fn argv(args: &[&str]) -> Vec<OsString> {
    ["vellum", "serve"]
        .iter()
        .chain(args)
        .map(OsString::from)
        .collect()
}

/// The serve matches of `args` (a config file read in), and the ids the file set.
fn matches(args: &[&str]) -> anyhow::Result<(ArgMatches, BTreeSet<String>)> {
    let cmd = crate::Cli::command();
    let (argv, ids) = with_config_file(&cmd, argv(args)).map_err(|e| match e {
        ConfigError::Other(e) => e,
        ConfigError::Clap(e) => e.into(),
    })?;
    let m = cmd.try_get_matches_from(argv)?;
    let (_, serve) = m.subcommand().unwrap();
    Ok((serve.clone(), ids))
}

fn raw(m: &ArgMatches, id: &str) -> Vec<String> {
    m.get_raw(id)
        .map(|v| v.map(|s| s.to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn every_flag_of_serve_is_a_key() {
    let cmd = crate::Cli::command();
    let serve = cmd.find_subcommand(SERVE).unwrap();
    let mut checked = 0;
    for arg in keys(serve) {
        let key = arg.get_long().unwrap();
        let value = sample(arg);
        let mut text = format!("{key} = {value}\n");
        for (k, v) in companions(key) {
            text.push_str(&format!("{k} = {:?}\n", v));
        }
        let path = file(&text);
        let (m, ids) = matches(&["--config", path.to_str().unwrap()])
            .unwrap_or_else(|e| panic!("key {key} ({text}) refused: {e}"));
        let id = arg.get_id().as_str();
        assert!(ids.contains(id), "{key}: not taken from the file");
        let want: Vec<String> = match &value {
            toml::Value::Boolean(_) => vec!["true".into()],
            toml::Value::Array(a) => a.iter().map(|v| v.as_str().unwrap().into()).collect(),
            v => vec![v.as_str().unwrap().into()],
        };
        assert_eq!(raw(&m, id), want, "{key}");
        let _ = std::fs::remove_file(path);
        checked += 1;
    }
    // The flags there are today (and more to come): the loop did not pass vacuously.
    assert!(checked >= 60, "only {checked} keys");
}

#[test]
fn flags_override_the_file() {
    let path = file(
        "addr = \"127.0.0.1:9000\"\nmax-in-flight = 3\ntrusted-origin = [\"https://a.example\", \"https://b.example\"]\njson-response = true\n",
    );
    let p = path.to_str().unwrap();
    let (m, ids) = matches(&["--config", p]).unwrap();
    assert_eq!(raw(&m, "addr"), ["127.0.0.1:9000"]);
    assert_eq!(raw(&m, "max_in_flight"), ["3"]);
    assert_eq!(
        raw(&m, "trusted_origin"),
        ["https://a.example", "https://b.example"]
    );
    assert!(m.get_flag("json_response"));
    assert!(ids.contains("addr"));

    // Before or after --config, a flag wins; a repeatable flag replaces the file's list.
    let (m, ids) = matches(&[
        "--max-in-flight",
        "9",
        "--config",
        p,
        "--trusted-origin",
        "https://c.example",
    ])
    .unwrap();
    assert_eq!(raw(&m, "max_in_flight"), ["9"]);
    assert_eq!(raw(&m, "trusted_origin"), ["https://c.example"]);
    assert_eq!(raw(&m, "addr"), ["127.0.0.1:9000"]);
    assert!(!ids.contains("max_in_flight") && !ids.contains("trusted_origin"));

    // A flag that conflicts with a key drops the key: --unix over the file's addr.
    let (m, ids) = matches(&["--config", p, "--unix", "/tmp/vellum.sock"]).unwrap();
    assert!(!ids.contains("addr"), "{ids:?}");
    assert_eq!(raw(&m, "unix"), ["/tmp/vellum.sock"]);
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_requirement_may_be_met_by_the_file() {
    let path = file("tls-key = \"/tmp/k.pem\"\n");
    let (m, _) = matches(&[
        "--config",
        path.to_str().unwrap(),
        "--tls-cert",
        "/tmp/c.pem",
    ])
    .unwrap();
    assert_eq!(raw(&m, "tls_key"), ["/tmp/k.pem"]);
    let _ = std::fs::remove_file(path);
}

#[test]
fn an_unknown_key_is_an_error_that_names_it() {
    let path = file("addr = \"127.0.0.1:0\"\nno-such-flag = 1\n");
    let e = matches(&["--config", path.to_str().unwrap()]).unwrap_err();
    let e = format!("{e:#}");
    assert!(e.contains("unknown key `no-such-flag`"), "{e}");
    assert!(e.contains(path.to_str().unwrap()), "the file is named: {e}");
    let path = file("max_body_bytes = 10\n");
    let e = matches(&["--config", path.to_str().unwrap()]).unwrap_err();
    let e = format!("{e:#}");
    assert!(e.contains("did you mean `max-body-bytes`"), "{e}");
    // The flags that are not keys.
    let path = file("config = \"other.toml\"\n");
    let e = matches(&["--config", path.to_str().unwrap()]).unwrap_err();
    let e = format!("{e:#}");
    assert!(e.contains("unknown key `config`"), "{e}");
}

#[test]
fn values_of_the_wrong_kind_are_errors() {
    for (text, want) in [
        ("stateless = \"yes\"\n", "expected true or false"),
        ("addr = [\"a\", \"b\"]\n", "takes one value"),
        (
            "max-in-flight = { n = 3 }\n",
            "expected a string, a number or a boolean",
        ),
        ("not toml at all", "not valid TOML"),
    ] {
        let path = file(text);
        let e = format!(
            "{:#}",
            matches(&["--config", path.to_str().unwrap()]).unwrap_err()
        );
        assert!(e.contains(want), "{text}: {e}");
    }
    // A value its flag refuses: clap's own message.
    let path = file("max-in-flight = \"many\"\n");
    let e = matches(&["--config", path.to_str().unwrap()]).unwrap_err();
    let e = format!("{e:#}");
    assert!(e.contains("many") && e.contains("--max-in-flight"), "{e}");
}

#[test]
fn print_config_shows_sources_and_masks_secrets() {
    let path = file(
        "auth-hs256-secret = \"0123456789abcdef0123456789abcdef\"\nredis = \"redis://:hunter2@127.0.0.1:6379\"\nmax-in-flight = 3\n",
    );
    let parsed = parse::<crate::Cli>(argv(&[
        "--config",
        path.to_str().unwrap(),
        "--print-config",
        "--stateless",
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    let text = parsed.effective.unwrap();
    assert!(!text.contains("0123456789abcdef"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.contains("auth-hs256-secret = \"***\"  # file"),
        "{text}"
    );
    assert!(
        text.contains("redis = \"redis://:***@127.0.0.1:6379\"  # file"),
        "{text}"
    );
    assert!(text.contains("max-in-flight = 3  # file"), "{text}");
    assert!(text.contains("stateless = true  # command line"), "{text}");
    assert!(
        text.contains("addr = \"127.0.0.1:8000\"  # default"),
        "{text}"
    );
    assert!(text.contains("# session-timeout = (not set)"), "{text}");
    assert!(!text.contains("print-config"), "{text}");

    // What it prints (secrets aside) is a config file giving the same configuration.
    let printed = file(&text.replace("\"***\"", "\"0123456789abcdef0123456789abcdef\""));
    let (a, _) = matches(&["--config", path.to_str().unwrap(), "--stateless"]).unwrap();
    let (b, _) = matches(&["--config", printed.to_str().unwrap()]).unwrap();
    let serve_cmd = crate::Cli::command();
    for arg in keys(serve_cmd.find_subcommand(SERVE).unwrap()) {
        let id = arg.get_id().as_str();
        if id == "redis_url" {
            continue; // its password was masked
        }
        assert_eq!(raw(&a, id), raw(&b, id), "{id}");
    }
}

#[test]
fn url_passwords_are_masked() {
    assert_eq!(
        mask_url_password("redis://user:pw@h:1/0"),
        "redis://user:***@h:1/0"
    );
    assert_eq!(
        mask_url_password("redis-cluster://:pw@h:1,h:2"),
        "redis-cluster://:***@h:1,h:2"
    );
    assert_eq!(mask_url_password("rediss://token@h:1"), "rediss://***@h:1");
    assert_eq!(mask_url_password("https://h/a@b"), "https://h/a@b");
    assert_eq!(mask_url_password("127.0.0.1:8000"), "127.0.0.1:8000");
}

#[test]
fn proxy_reads_a_config_file_of_its_own_and_the_serving_flags() {
    let path = file(
        "stdio = \"node server.js\"\nmax-children = 9\naddr = \"127.0.0.1:0\"\nrate-limit = \"5/s\"\n",
    );
    let proxy = |args: &[&str]| -> Vec<OsString> {
        ["vellum", "proxy"]
            .iter()
            .chain(args)
            .map(OsString::from)
            .collect()
    };
    // The backend the command requires comes from the file.
    let parsed = parse::<crate::Cli>(proxy(&[
        "--config",
        path.to_str().unwrap(),
        "--print-config",
        "--max-children",
        "4",
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    let text = parsed.effective.unwrap();
    assert!(text.starts_with("# vellum proxy:"), "{text}");
    assert!(
        text.contains("stdio = \"node server.js\"  # file"),
        "{text}"
    );
    assert!(text.contains("max-children = 4  # command line"), "{text}");
    assert!(text.contains("addr = \"127.0.0.1:0\"  # file"), "{text}");
    assert!(text.contains("rate-limit = \"5/s\"  # file"), "{text}");
    // A key of serve alone is not one of proxy's.
    let path = file("server = \"everything\"\nstdio = \"x\"\n");
    let e = match parse::<crate::Cli>(proxy(&["--config", path.to_str().unwrap()])) {
        Err(ConfigError::Other(e)) => format!("{e:#}"),
        Err(ConfigError::Clap(e)) => panic!("{e}"),
        Ok(_) => panic!("serve's key was taken"),
    };
    assert!(e.contains("unknown key `server`"), "{e}");
    assert!(e.contains("vellum proxy --help"), "{e}");
}
