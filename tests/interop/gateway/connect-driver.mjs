// The official TypeScript SDK's stdio client (@modelcontextprotocol/sdk) as a desktop host
// would use it, driving `vellum connect` (crates/vellum-cli/tests/gateway_connect.rs).
//
// Usage: node connect-driver.mjs VELLUM_BIN ARG...      (the arguments of `vellum connect`)
//
// Spawns `VELLUM_BIN connect ARG...` through StdioClientTransport, then takes one JSON
// command per line on stdin and prints one JSON line per command on stdout:
//   {"op":"connect"}                              -> {"ok":true,"server":…,"version":…}
//   {"op":"list"}                                 -> {"ok":true,"tools":[names]}
//   {"op":"call","name":N,"arguments":{…},"tag":T} -> {"ok":true,"tag":T,"text":…} | {"ok":false,"tag":T,"error":…}
//     ("tag" lets calls run concurrently: a call answers when it is done)
//   {"op":"close"}                                -> {"ok":true}, then exits
// The host declares elicitation; a question of the server is printed as {"asked":METHOD}
// and never answered (so a test knows a call is in flight, and holds it there).
// Every line `vellum connect` writes on stdout must be a JSON-RPC message: anything else is
// reported by the SDK's transport as an error, which this driver prints as
// {"stdout_error":…} and counts as a failure. connect's stderr goes to this process's stderr
// with a "[connect] " prefix.

import { createInterface } from "node:readline";

const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
const { ElicitRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");

const [bin, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: bin, args: ["connect", ...args], stderr: "pipe" });
transport.stderr?.on("data", (chunk) => {
  for (const line of chunk.toString().split("\n")) {
    if (line) process.stderr.write(`[connect] ${line}\n`);
  }
});
transport.onerror = (e) => console.log(JSON.stringify({ stdout_error: String(e?.message ?? e) }));
const client = new Client({ name: "ts-desktop-host", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const out = (v) => console.log(JSON.stringify(v));
client.setRequestHandler(ElicitRequestSchema, () => {
  out({ asked: "elicitation/create" });
  return new Promise(() => {});
});

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  try {
    if (cmd.op === "connect") {
      await client.connect(transport);
      const info = client.getServerVersion();
      out({ ok: true, server: info?.name, version: client.getNegotiatedProtocolVersion?.() });
    } else if (cmd.op === "list") {
      const { tools } = await client.listTools();
      out({ ok: true, tools: tools.map((t) => t.name) });
    } else if (cmd.op === "call") {
      client
        .callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, undefined, { timeout: 120_000 })
        .then((r) => out({ ok: !r.isError, tag: cmd.tag, text: r.content?.[0]?.text }))
        .catch((e) => out({ ok: false, tag: cmd.tag, error: String(e?.message ?? e) }));
    } else if (cmd.op === "close") {
      await client.close();
      out({ ok: true });
      process.exit(0);
    }
  } catch (e) {
    out({ ok: false, error: String(e?.message ?? e) });
  }
}
