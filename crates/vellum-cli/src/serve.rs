//! `vellum serve`: the demo servers, over Streamable HTTP (every option of the handler: see
//! `http_args.rs` and `http_serve.rs`) or stdio.

use anyhow::{Context as _, bail};
use clap::Args;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use vellum_demos::{DEMOS, Demo};

use crate::http_args::HttpArgs;
use crate::http_serve::Serving;

/// Parses `--server NAME` into one of [`DEMOS`], listing them all in `--help`.
#[derive(Debug, Clone, Copy)]
struct DemoParser;

impl TypedValueParser for DemoParser {
    type Value = &'static Demo;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let names = PossibleValuesParser::new(DEMOS.iter().map(|d| d.name));
        let name = names.parse_ref(cmd, arg, value)?;
        // Only a listed name gets here, so the lookup finds it.
        vellum_demos::demo(&name)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            DEMOS
                .iter()
                .map(|d| PossibleValue::new(d.name).help(d.about)),
        ))
    }
}

/// Flags of `vellum serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Serve over stdin/stdout (newline-delimited JSON-RPC) instead of HTTP, as desktop hosts
    /// launch servers; logs go to stderr.
    #[arg(long, conflicts_with_all = ["addr", "unix", "path", "protocol_versions"])]
    stdio: bool,
    /// The demo server.
    #[arg(long, value_parser = DemoParser, default_value = "hello-world")]
    server: &'static Demo,
    /// With `--server bench`: this many extra tools to list (`filler_00000`, …).
    #[arg(long, value_name = "N", default_value_t = 0)]
    bench_tools: usize,
    /// With `--server bench`: serve `hello_wait`, which reads its greeting from this Redis
    /// (`redis://HOST:PORT`, key `bench:greeting`) and then calls `--bench-wait-http` (the
    /// benchmark's `wait` scenario).
    #[arg(long, value_name = "URL", requires = "bench_wait_http")]
    bench_wait_redis: Option<String>,
    /// With `--server bench`: the URL `hello_wait` GETs once per call (with
    /// `--bench-wait-redis`).
    #[arg(long, value_name = "URL", requires = "bench_wait_redis")]
    bench_wait_http: Option<String>,
    #[command(flatten)]
    http: HttpArgs,
}

/// Builds the chosen demo server (`--bench-tools` and `--bench-wait-*` only shape the bench
/// server).
async fn build_server(args: &ServeArgs) -> anyhow::Result<vellum::server::Server> {
    let name = args.server.name;
    let wait = args
        .bench_wait_redis
        .as_deref()
        .zip(args.bench_wait_http.as_deref());
    if (args.bench_tools > 0 || wait.is_some()) && name != "bench" {
        bail!("--bench-tools and --bench-wait-* need --server bench");
    }
    let server = if name == "bench" {
        vellum_demos::bench::bench_server_with(args.bench_tools)
    } else {
        (args.server.build)()
    }
    .with_context(|| format!("cannot build the {name} server"))?;
    if let Some((redis, http)) = wait {
        // This build's reqwest has rustls without a provider of its own (Vellum's `client`
        // and `auth` features): one must be installed before the stub's client is built.
        vellum::transport::install_crypto_provider();
        let backends = vellum_demos::bench_wait::WaitBackends::connect(redis, http).await?;
        vellum_demos::bench_wait::add_hello_wait(&server, backends)?;
    }
    Ok(server)
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    args.http.announce_config();
    let server = build_server(&args).await?;
    if args.stdio {
        crate::http_serve::configure_server(&args.http, &server)?;
        eprintln!("stdio MCP: serving on stdin/stdout");
        vellum::transport::stdio::serve_stdio(server)
            .await
            .context("serving on stdio failed")?;
        return Ok(());
    }
    let serving = Serving {
        server,
        session_cap: None,
    };
    crate::http_serve::run(serving, &args.http).await
}
