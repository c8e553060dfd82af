// The seed's attacks in a real browser. Headless Chromium (Debian's /usr/bin/chromium) loads
// a page from another origin on loopback whose script fetch()es the MCP endpoint of a real
// `vellum serve`:
//  - a foreign page is refused (cross-origin protection on, CORS off);
//  - a trusted origin with --cors is served and can read Mcp-Session-Id;
//  - an untrusted origin stays refused with --cors on;
//  - DNS rebinding (the page's own name re-pointed at 127.0.0.1) gets 403 from the Host
//    check, and succeeds with --disable-localhost-protection (the control showing the attack
//    is real).
// Chromium reaches nothing but loopback: every name but the test's own fails to resolve, and
// any proxied request goes to a dead proxy.
//
// Run: VELLUM_BIN=target/debug/vellum node --test tests/browser/

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const VELLUM = process.env.VELLUM_BIN ?? new URL('../../target/debug/vellum', import.meta.url).pathname;
const REBIND_HOST = 'rebind.test';

let browser;

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium (scripts/test.sh does)`);
  assert.ok(existsSync(VELLUM), `${VELLUM} is missing: cargo build -p vellum-cli, or set VELLUM_BIN`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      `--host-resolver-rules=MAP ${REBIND_HOST} 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1`,
      '--proxy-server=127.0.0.1:1',
      `--proxy-bypass-list=127.0.0.1;${REBIND_HOST}`,
    ],
  });
});

after(async () => {
  await browser?.close();
});

/** Starts `vellum serve` with `args`; resolves to { url, port, stop }. */
function serve(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(VELLUM, ['serve', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`vellum serve ${args.join(' ')} did not start: ${err}`));
    }, 30_000);
    child.stderr.on('data', (d) => {
      err += d;
      // A whole start line only: stderr may arrive in pieces.
      const m = /streamable HTTP MCP: http:\/\/(\S+)[ \r\n]/.exec(err);
      if (m) {
        clearTimeout(timer);
        const port = Number(m[1].split(':').pop());
        resolve({
          port,
          stop: () =>
            new Promise((done) => {
              child.once('exit', done);
              child.kill();
            }),
        });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`vellum serve exited (${code}): ${err}`));
    });
  });
}

/** A page server on loopback (the "other origin"); resolves to { port, close }. */
function pageServer(port = 0) {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>attacker</title><p>hello</p>');
  });
  return new Promise((resolve) => {
    server.listen(port, '127.0.0.1', () =>
      resolve({
        port: server.address().port,
        close: () => new Promise((done) => server.close(done)),
      }),
    );
  });
}

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'page', version: '1' } },
};

/** Runs the page's attack script: POST initialize, then (if that worked) call the tool. */
async function attack(page, endpoint) {
  return page.evaluate(
    async ({ endpoint, init }) => {
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      let r;
      try {
        r = await fetch(endpoint, { method: 'POST', headers, body: JSON.stringify(init) });
      } catch (e) {
        return { error: String(e) };
      }
      const out = { status: r.status, session: r.headers.get('mcp-session-id'), body: await r.text() };
      if (r.status === 200 && out.session) {
        const call = await fetch(endpoint, {
          method: 'POST',
          headers: { ...headers, 'mcp-session-id': out.session, 'mcp-protocol-version': '2025-11-25' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 2,
            method: 'tools/call',
            params: { name: 'hello_world', arguments: { user_name: 'page' } },
          }),
        });
        out.call = { status: call.status, body: await call.text() };
      }
      return out;
    },
    { endpoint, init: INIT },
  );
}

async function withPage(origin, fn) {
  const context = await browser.newContext();
  const page = await context.newPage();
  // Network-level reasons of failed requests, for the assertion messages.
  page.on('requestfailed', (r) => console.error(`request failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
  try {
    await page.goto(origin);
    return await fn(page);
  } finally {
    await context.close();
  }
}

test('a foreign page cannot call the server (cross-origin protection, no CORS)', async () => {
  const mcp = await serve(['--addr', '127.0.0.1:0']);
  const site = await pageServer();
  try {
    const result = await withPage(`http://127.0.0.1:${site.port}/`, (page) =>
      attack(page, `http://127.0.0.1:${mcp.port}/mcp`),
    );
    assert.match(result.error ?? '', /Failed to fetch/, JSON.stringify(result));
  } finally {
    await site.close();
    await mcp.stop();
  }
});

test('a trusted origin with --cors is served and reads Mcp-Session-Id', async () => {
  const site = await pageServer();
  const origin = `http://127.0.0.1:${site.port}`;
  const mcp = await serve(['--addr', '127.0.0.1:0', '--cors', '--trusted-origin', origin]);
  try {
    const result = await withPage(`${origin}/`, (page) => attack(page, `http://127.0.0.1:${mcp.port}/mcp`));
    assert.equal(result.status, 200, JSON.stringify(result));
    assert.ok(result.session && result.session.length >= 16, `the page reads Mcp-Session-Id: ${JSON.stringify(result)}`);
    assert.equal(result.call.status, 200);
    assert.match(result.call.body, /Hello World, page/);
  } finally {
    await mcp.stop();
    await site.close();
  }
});

test('an untrusted origin stays refused with --cors on', async () => {
  const trusted = await pageServer();
  const foreign = await pageServer();
  const mcp = await serve(['--addr', '127.0.0.1:0', '--cors', '--trusted-origin', `http://127.0.0.1:${trusted.port}`]);
  try {
    const result = await withPage(`http://127.0.0.1:${foreign.port}/`, (page) =>
      attack(page, `http://127.0.0.1:${mcp.port}/mcp`),
    );
    assert.match(result.error ?? '', /Failed to fetch/, JSON.stringify(result));
  } finally {
    await mcp.stop();
    await trusted.close();
    await foreign.close();
  }
});

/**
 * DNS rebinding: the attacker's page is loaded from rebind.test:PORT; then "DNS" (here: the
 * page server leaving and vellum taking its port on 127.0.0.1) points the same origin at the
 * MCP server, so the page's requests are same-origin to it.
 */
async function rebinding(extraArgs) {
  const site = await pageServer();
  const port = site.port;
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    await page.goto(`http://${REBIND_HOST}:${port}/`);
    await site.close();
    const mcp = await serve(['--addr', `127.0.0.1:${port}`, ...extraArgs]);
    try {
      return await attack(page, `http://${REBIND_HOST}:${port}/mcp`);
    } finally {
      await mcp.stop();
    }
  } finally {
    await context.close();
  }
}

test('DNS rebinding gets 403 from the Host check', async () => {
  const result = await rebinding([]);
  assert.equal(result.status, 403, JSON.stringify(result));
  assert.equal(result.session, null);
  assert.match(result.body, /invalid Host header/);
});

test('control: without the Host check the rebinding page takes over the server', async () => {
  const result = await rebinding(['--disable-localhost-protection']);
  assert.equal(result.status, 200, JSON.stringify(result));
  assert.equal(result.call.status, 200);
  assert.match(result.call.body, /Hello World, page/);
});

test('with authorization on, a trusted page gets the 401 challenge and can read it', async () => {
  const site = await pageServer();
  const origin = `http://127.0.0.1:${site.port}`;
  const mcp = await serve([
    '--addr', '127.0.0.1:0', '--cors', '--trusted-origin', origin,
    '--auth-hs256-secret', 'a browser test secret of 32+ bytes!',
    '--auth-issuer', 'http://127.0.0.1:9/as', '--auth-audience', 'browser-test',
  ]);
  try {
    const result = await withPage(`${origin}/`, (page) =>
      page.evaluate(async (endpoint) => {
        const r = await fetch(endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: '{}',
        });
        return { status: r.status, challenge: r.headers.get('www-authenticate') };
      }, `http://127.0.0.1:${mcp.port}/mcp`),
    );
    assert.equal(result.status, 401, JSON.stringify(result));
    assert.match(result.challenge ?? '', /^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/);
  } finally {
    await mcp.stop();
    await site.close();
  }
});
