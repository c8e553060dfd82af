// Interop check: the official TypeScript SDK v2 client (@modelcontextprotocol/client) against
// a Vellum server over Streamable HTTP.
//
// Usage: node client-ts-v2.mjs URL MODE [TOOL ARGS_JSON EXPECTED]     (MODE: legacy | auto | 2026-07-28)
//
// Connects in MODE, checks the negotiated era, lists the tools, calls `hello_world` with
// user_name "Alice" (or TOOL with ARGS_JSON, expecting the text EXPECTED) and prints the
// text. Any mismatch is printed on stderr, exit code 1.

const [url, mode, toolArg, argsJson, expectedArg] = process.argv.slice(2);
const tool = toolArg ?? "hello_world";
const args = argsJson ? JSON.parse(argsJson) : { user_name: "Alice" };
const expected = expectedArg ?? "Hello World, Alice";
if (!url || !mode) {
  console.error("usage: node client-ts-v2.mjs URL legacy|auto|2026-07-28");
  process.exit(2);
}
const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");

const failures = [];
const deadline = setTimeout(() => {
  console.error("ts-v2 client: no result within 30 s");
  process.exit(1);
}, 30_000);
deadline.unref();

const negotiation = mode === "legacy" || mode === "auto" ? { mode } : { mode: { pin: mode } };
const client = new Client({ name: "vellum-interop-ts-v2", version: "0.1.0" }, { versionNegotiation: negotiation });
const transport = new StreamableHTTPClientTransport(new URL(url));
try {
  await client.connect(transport);
  const version = client.getNegotiatedProtocolVersion();
  const modern = (version ?? "") >= "2026-07-28";
  if ((mode === "legacy") === modern) failures.push(`mode ${mode} negotiated ${version}`);
  const { tools } = await client.listTools();
  if (!tools.some((t) => t.name === tool)) failures.push(`${tool} missing: ${JSON.stringify(tools)}`);
  const result = await client.callTool({ name: tool, arguments: args });
  const text = result.content?.[0]?.text;
  if (result.isError || text !== expected) failures.push(`unexpected result ${JSON.stringify(result)}`);
  if (typeof text === "string") console.log(text);
  console.error(`protocol ${version}`);
  await client.close();
} catch (e) {
  failures.push(`error: ${e?.stack ?? e}`);
}
for (const f of failures) console.error(`MISMATCH ${f}`);
process.exit(failures.length ? 1 : 0);
