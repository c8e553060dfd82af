//! `vellum serve --config FILE` (and `vellum proxy --config FILE`, which serves with the same
//! flags): a TOML file of flags. Each key is a flag of the command without its `--` (`addr = "0.0.0.0:8000"`, `stateless = true`, `trusted-origin =
//! ["https://a.example"]`), read from the flag definitions themselves, so a new flag is a key
//! the moment it exists. The file's keys become command-line arguments behind the real ones
//! and clap parses them as it parses flags: one set of value parsers, conflicts and
//! requirements. A flag given on the command line, or by its environment variable,
//! overrides the file's key (a repeatable flag replaces the file's list, and a flag
//! conflicting with a key drops the key). An unknown key is an error that names it.
//!
//! `--print-config` prints the effective configuration in the same format: every key with its
//! value and where it came from, secrets masked.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command, CommandFactory, FromArgMatches};

/// The subcommands whose flags a config file holds: those that serve over HTTP.
const SERVE: &str = "serve";
const PROXY: &str = "proxy";
const CONFIGURED: [&str; 2] = [SERVE, PROXY];
/// The flags that are not keys: the file itself, and what prints it.
const NOT_KEYS: [&str; 3] = ["config", "print-config", "help"];
/// What a secret's value prints as.
const MASK: &str = "***";

/// The parsed command line, and the effective configuration of `serve` or `proxy` when
/// `--print-config` asked for it.
pub(crate) struct Parsed<C> {
    pub(crate) cli: C,
    pub(crate) effective: Option<String>,
}

/// Parses `argv` as `C`, with `serve --config FILE` (or `proxy`'s) read into the arguments
/// first.
/// A `clap::Error` (help, version, a bad flag) is the caller's to print; other errors are
/// about the file.
pub(crate) fn parse<C: CommandFactory + FromArgMatches>(
    argv: Vec<OsString>,
) -> Result<Parsed<C>, ConfigError> {
    let cmd = C::command();
    let (argv, from_file) = with_config_file(&cmd, argv)?;
    let matches = cmd.clone().try_get_matches_from(argv)?;
    let cli = C::from_arg_matches(&matches)?;
    let effective = match matches.subcommand() {
        Some((name, m)) if CONFIGURED.contains(&name) && m.get_flag("print_config") => {
            let sub = cmd
                .find_subcommand(name)
                .ok_or_else(|| ConfigError::Other(anyhow::anyhow!("no {name} command")))?;
            Some(render(sub, m, &from_file))
        }
        _ => None,
    };
    Ok(Parsed { cli, effective })
}

/// Why the command line could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    /// A flag (or a file key, parsed as its flag) that clap refused; also help and version.
    #[error(transparent)]
    Clap(#[from] clap::Error),
    /// The config file: unreadable, not TOML, an unknown key, a value of the wrong kind.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// `argv` with the keys of `serve --config FILE` (or `proxy`'s) appended as flags (those the command line
/// does not override), and the ids of the arguments that came from the file.
fn with_config_file(
    cmd: &Command,
    mut argv: Vec<OsString>,
) -> Result<(Vec<OsString>, BTreeSet<String>), ConfigError> {
    // A first look, tolerant of errors: a requirement the file meets must not fail it.
    let Ok(probe) = cmd.clone().ignore_errors(true).try_get_matches_from(&argv) else {
        return Ok((argv, BTreeSet::new()));
    };
    let Some((name, given)) = probe.subcommand().filter(|(n, _)| CONFIGURED.contains(n)) else {
        return Ok((argv, BTreeSet::new()));
    };
    let Some(path) = given.get_raw("config").and_then(|mut v| v.next()) else {
        return Ok((argv, BTreeSet::new()));
    };
    let path = PathBuf::from(path);
    let serve = cmd
        .find_subcommand(name)
        .ok_or_else(|| anyhow::anyhow!("no {name} command"))?;
    let table = read(&path)?;
    let (args, ids) =
        file_args(serve, &table, given).with_context(|| path.display().to_string())?;
    argv.extend(args);
    Ok((argv, ids))
}

/// The file as a TOML table.
fn read(path: &Path) -> anyhow::Result<toml::Table> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the config file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("{} is not valid TOML", path.display()))
}

/// The arguments of `table`'s keys that `given` (the command line) leaves to the file, and
/// their ids.
fn file_args(
    serve: &Command,
    table: &toml::Table,
    given: &ArgMatches,
) -> anyhow::Result<(Vec<OsString>, BTreeSet<String>)> {
    let overriding: Vec<&Arg> = serve
        .get_arguments()
        .filter(|a| {
            matches!(
                given.value_source(a.get_id().as_str()),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            )
        })
        .collect();
    let (mut out, mut ids) = (Vec::new(), BTreeSet::new());
    for (key, value) in table {
        let arg = key_arg(serve, key)?;
        let overridden = overriding.iter().any(|o| {
            o.get_id() == arg.get_id()
                || serve.get_arg_conflicts_with(o).contains(&arg)
                || serve.get_arg_conflicts_with(arg).contains(o)
        });
        if overridden {
            continue;
        }
        out.extend(values(arg, key, value)?);
        ids.insert(arg.get_id().to_string());
    }
    Ok((out, ids))
}

/// The flag a key names; an unknown key is an error that names it.
fn key_arg<'a>(serve: &'a Command, key: &str) -> anyhow::Result<&'a Arg> {
    if let Some(arg) = keys(serve).find(|a| a.get_long() == Some(key)) {
        return Ok(arg);
    }
    let dashed = key.replace('_', "-");
    let hint = match keys(serve).any(|a| a.get_long() == Some(dashed.as_str())) {
        true => format!(" (did you mean `{dashed}`?)"),
        false => String::new(),
    };
    bail!(
        "unknown key `{key}`{hint}: the keys are the flags of `vellum {} --help` without \
         their `--`",
        serve.get_name()
    )
}

/// The arguments that are keys.
fn keys(serve: &Command) -> impl Iterator<Item = &Arg> {
    serve
        .get_arguments()
        .filter(|a| a.get_long().is_some_and(|l| !NOT_KEYS.contains(&l)))
}

/// `--key=VALUE` for each value of `value` (none for a flag set to false).
fn values(arg: &Arg, key: &str, value: &toml::Value) -> anyhow::Result<Vec<OsString>> {
    if !arg.get_action().takes_values() {
        return match value {
            toml::Value::Boolean(true) => Ok(vec![format!("--{key}").into()]),
            toml::Value::Boolean(false) => Ok(Vec::new()),
            other => bail!("key `{key}`: expected true or false, got {other}"),
        };
    }
    let items = match value {
        toml::Value::Array(items) if matches!(arg.get_action(), ArgAction::Append) => {
            items.iter().collect()
        }
        toml::Value::Array(_) => bail!("key `{key}` takes one value, not a list"),
        one => vec![one],
    };
    items
        .into_iter()
        .map(|v| scalar(key, v).map(|v| format!("--{key}={v}").into()))
        .collect()
}

/// A value as its flag would be written.
fn scalar(key: &str, value: &toml::Value) -> anyhow::Result<String> {
    Ok(match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(x) => x.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(_) | toml::Value::Table(_) => {
            bail!("key `{key}`: expected a string, a number or a boolean, got {value}")
        }
    })
}

/// The effective configuration of `serve` (or `proxy`) as a config file: every key with its value and
/// where it came from, secrets masked; keys without a value as comments.
fn render(serve: &Command, m: &ArgMatches, from_file: &BTreeSet<String>) -> String {
    let mut out = format!(
        "# vellum {}: the effective configuration (a --config file; secrets masked)\n",
        serve.get_name()
    );
    for arg in keys(serve) {
        let (id, key) = (arg.get_id().as_str(), arg.get_long().unwrap_or_default());
        let raw: Vec<String> = m
            .get_raw(id)
            .map(|v| v.map(|s| s.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        if raw.is_empty() {
            out.push_str(&format!("# {key} = (not set)\n"));
            continue;
        }
        let secret = is_secret(arg);
        let shown: Vec<toml::Value> = raw
            .iter()
            .map(|v| match secret {
                true => toml::Value::String(MASK.into()),
                false => typed(arg, &mask_url_password(v)),
            })
            .collect();
        let value = match (
            matches!(arg.get_action(), ArgAction::Append),
            shown.as_slice(),
        ) {
            (false, [one]) => one.clone(),
            _ => toml::Value::Array(shown),
        };
        let source = match m.value_source(id) {
            _ if from_file.contains(id) => "file".to_owned(),
            Some(ValueSource::CommandLine) => "command line".to_owned(),
            Some(ValueSource::EnvVariable) => match arg.get_env() {
                Some(env) => format!("environment {}", env.to_string_lossy()),
                None => "environment".to_owned(),
            },
            _ => "default".to_owned(),
        };
        out.push_str(&format!("{key} = {value}  # {source}\n"));
    }
    out
}

/// A raw value as TOML: a flag's `true`/`false` as a boolean, a whole number as an integer,
/// the rest as a string (every one reads back as the same flag value).
fn typed(arg: &Arg, raw: &str) -> toml::Value {
    if !arg.get_action().takes_values()
        && let Ok(b) = raw.parse()
    {
        return toml::Value::Boolean(b);
    }
    match raw.parse::<i64>() {
        Ok(n) if n.to_string() == raw => toml::Value::Integer(n),
        _ => toml::Value::String(raw.to_owned()),
    }
}

/// Whether the flag holds a secret: its environment value is hidden from `--help`, or its
/// name says so.
fn is_secret(arg: &Arg) -> bool {
    arg.is_hide_env_values_set() || arg.get_long().is_some_and(|l| l.ends_with("secret"))
}

/// `scheme://user:password@host…` with the password masked (`scheme://password@host`, as
/// Redis URLs may carry one, masked whole).
fn mask_url_password(value: &str) -> String {
    let Some((scheme, rest)) = value.split_once("://") else {
        return value.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return value.to_owned();
    };
    let userinfo = &rest[..at];
    let masked = match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:{MASK}"),
        None => MASK.to_owned(),
    };
    format!("{scheme}://{masked}{}", &rest[at..])
}

#[cfg(test)]
mod tests;
