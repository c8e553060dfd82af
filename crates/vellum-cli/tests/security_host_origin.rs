//! The hostile Host / Origin / `Sec-Fetch-Site` matrix against a real `vellum serve`, each row
//! with the status `docs/http-status.md` documents (403 with a JSON-RPC -32600 body for every
//! refusal; the request served otherwise).

// Test helpers outside #[test] functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use vellum_testkit::process::{ServerProcess, vellum_serve};
use vellum_testkit::raw::{INIT, build, send};

/// One row: method, headers (`{host}` is replaced by the server's host:port), expected status.
struct Row {
    what: &'static str,
    method: &'static str,
    headers: &'static [(&'static str, &'static str)],
    status: u16,
}

const fn row(
    what: &'static str,
    method: &'static str,
    headers: &'static [(&'static str, &'static str)],
    status: u16,
) -> Row {
    Row {
        what,
        method,
        headers,
        status,
    }
}

fn run(s: &ServerProcess, rows: &[Row]) {
    let host = s.host();
    let port = s.addr().port().to_string();
    let mut failures = Vec::new();
    for r in rows {
        let mut headers: Vec<(String, String)> = vec![
            ("content-type".into(), "application/json".into()),
            (
                "accept".into(),
                "application/json, text/event-stream".into(),
            ),
        ];
        if !r.headers.iter().any(|(k, _)| *k == "host" || *k == "-host") {
            headers.push(("host".into(), host.clone()));
        }
        for (k, v) in r.headers {
            if *k == "-host" {
                continue; // No Host header at all.
            }
            headers.push((
                k.to_string(),
                v.replace("{host}", &host).replace("{port}", &port),
            ));
        }
        let hs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let body = (r.method == "POST").then_some(INIT);
        let resp = send(s, &build(r.method, "/mcp", &hs, body));
        if resp.status != r.status {
            failures.push(format!(
                "{}: got {} ({}), want {}",
                r.what,
                resp.status,
                resp.text(),
                r.status
            ));
            continue;
        }
        if resp.status == 403 {
            let v = resp.json();
            if v["error"]["code"] != -32600 || v["jsonrpc"] != "2.0" {
                failures.push(format!("{}: 403 body {}", r.what, resp.text()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "rows with the wrong status:\n{}",
        failures.join("\n")
    );
}

#[test]
fn default_policy() {
    let s = vellum_serve(&[]);
    run(
        &s,
        &[
            row("plain client", "POST", &[], 200),
            row("localhost", "POST", &[("host", "localhost:{port}")], 200),
            row(
                "LOCALHOST upper case",
                "POST",
                &[("host", "LOCALHOST:{port}")],
                200,
            ),
            row("[::1]", "POST", &[("host", "[::1]:{port}")], 200),
            row("127.1.2.3", "POST", &[("host", "127.1.2.3:{port}")], 200),
            // DNS rebinding: the page's own name, pointing at 127.0.0.1.
            row(
                "rebinding host",
                "POST",
                &[("host", "evil.example:{port}")],
                403,
            ),
            row(
                "rebinding host without port",
                "POST",
                &[("host", "evil.example")],
                403,
            ),
            row(
                "localhost subdomain",
                "POST",
                &[("host", "localhost.evil.example")],
                403,
            ),
            row(
                "127.0.0.1 prefix",
                "POST",
                &[("host", "127.0.0.1.evil.example")],
                403,
            ),
            row("0.0.0.0", "POST", &[("host", "0.0.0.0:{port}")], 403),
            row(
                "private address",
                "POST",
                &[("host", "10.0.0.1:{port}")],
                403,
            ),
            row(
                "rebinding with a matching origin",
                "POST",
                &[
                    ("host", "evil.example:{port}"),
                    ("origin", "http://evil.example:{port}"),
                ],
                403,
            ),
            row(
                "rebinding GET",
                "GET",
                &[("host", "evil.example:{port}")],
                403,
            ),
            row(
                "rebinding DELETE",
                "DELETE",
                &[("host", "evil.example:{port}")],
                403,
            ),
            // Origin.
            row("same origin", "POST", &[("origin", "http://{host}")], 200),
            row(
                "foreign origin",
                "POST",
                &[("origin", "http://evil.example")],
                403,
            ),
            row(
                "foreign origin, same port",
                "POST",
                &[("origin", "http://evil.example:{port}")],
                403,
            ),
            row(
                "localhost origin for a 127.0.0.1 host",
                "POST",
                &[("origin", "http://localhost:{port}")],
                403,
            ),
            row("null origin", "POST", &[("origin", "null")], 403),
            row(
                "origin with a path",
                "POST",
                &[("origin", "http://{host}/x")],
                403,
            ),
            row(
                "foreign origin on GET",
                "GET",
                &[("origin", "http://evil.example")],
                403,
            ),
            row(
                "foreign origin on DELETE",
                "DELETE",
                &[("origin", "http://evil.example")],
                403,
            ),
            // Sec-Fetch-Site.
            row(
                "cross-site fetch",
                "POST",
                &[("sec-fetch-site", "cross-site")],
                403,
            ),
            row(
                "same-site fetch",
                "POST",
                &[("sec-fetch-site", "same-site")],
                403,
            ),
            row(
                "unknown fetch site",
                "POST",
                &[("sec-fetch-site", "bogus")],
                403,
            ),
            row(
                "same-origin fetch",
                "POST",
                &[("sec-fetch-site", "same-origin")],
                200,
            ),
            row(
                "user-initiated fetch",
                "POST",
                &[("sec-fetch-site", "none")],
                200,
            ),
            row(
                "same-origin fetch with same origin",
                "POST",
                &[
                    ("sec-fetch-site", "same-origin"),
                    ("origin", "http://{host}"),
                ],
                200,
            ),
            row(
                "cross-site fetch with a forged same origin",
                "POST",
                &[
                    ("sec-fetch-site", "cross-site"),
                    ("origin", "http://{host}"),
                ],
                403,
            ),
            // Safe methods skip Sec-Fetch-Site (a GET without a session is then a 400).
            row(
                "cross-site GET",
                "GET",
                &[
                    ("sec-fetch-site", "cross-site"),
                    ("accept", "text/event-stream"),
                ],
                400,
            ),
        ],
    );
}

#[test]
fn trusted_origin() {
    let s = vellum_serve(&["--trusted-origin", "http://app.test:3000"]);
    run(
        &s,
        &[
            row(
                "trusted, cross-site",
                "POST",
                &[
                    ("origin", "http://app.test:3000"),
                    ("sec-fetch-site", "cross-site"),
                ],
                200,
            ),
            row(
                "trusted, other case",
                "POST",
                &[("origin", "http://APP.test:3000")],
                200,
            ),
            row(
                "trusted host, other port",
                "POST",
                &[("origin", "http://app.test:3001")],
                403,
            ),
            row(
                "trusted host, other scheme",
                "POST",
                &[("origin", "https://app.test:3000")],
                403,
            ),
            row(
                "untrusted",
                "POST",
                &[("origin", "http://evil.example")],
                403,
            ),
            // Trusting an origin does not lift the Host check.
            row(
                "trusted origin, rebinding host",
                "POST",
                &[
                    ("origin", "http://app.test:3000"),
                    ("host", "evil.example:{port}"),
                ],
                403,
            ),
        ],
    );
}

#[test]
fn protections_turned_off() {
    let s = vellum_serve(&["--no-cross-origin-protection"]);
    run(
        &s,
        &[
            row(
                "cross-site fetch",
                "POST",
                &[("sec-fetch-site", "cross-site")],
                200,
            ),
            // The spec's rule holds in every mode: a present foreign Origin is refused.
            row(
                "foreign origin",
                "POST",
                &[("origin", "http://evil.example")],
                403,
            ),
            row(
                "rebinding host",
                "POST",
                &[("host", "evil.example:{port}")],
                403,
            ),
        ],
    );
    let s = vellum_serve(&["--disable-localhost-protection"]);
    run(
        &s,
        &[
            row("any host", "POST", &[("host", "evil.example:{port}")], 200),
            row(
                "foreign origin",
                "POST",
                &[("origin", "http://evil.example")],
                403,
            ),
        ],
    );
}
