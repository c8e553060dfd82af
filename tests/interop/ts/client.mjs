// Interop check: the official MCP TypeScript SDK client against a Vellum server over
// Streamable HTTP.
//
// Usage: node client.mjs URL
//
// Connects (initialize + initialized), lists the tools, checks the seed's `hello_world` tool
// is there as declared, calls it with user_name "Alice", prints the text on stdout, ends the
// session with DELETE, and exits 0. Any mismatch prints what differed on stderr and exits 1.

const TIMEOUT_MS = 30_000;

const url = process.argv[2];
if (!url) {
  console.error("usage: node client.mjs URL");
  process.exit(2);
}

let Client;
let StreamableHTTPClientTransport;
try {
  ({ Client } = await import("@modelcontextprotocol/sdk/client/index.js"));
  ({ StreamableHTTPClientTransport } = await import(
    "@modelcontextprotocol/sdk/client/streamableHttp.js"
  ));
} catch (e) {
  console.error(
    `cannot load @modelcontextprotocol/sdk (${e.message}): run \`npm ci\` in tests/interop/ts ` +
      "(bash scripts/test.sh does it)",
  );
  process.exit(3);
}

const failures = [];
function expect(what, actual, expected) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) failures.push(`${what}: expected ${e}, got ${a}`);
}

const deadline = setTimeout(() => {
  console.error(`interop client: no result within ${TIMEOUT_MS} ms`);
  process.exit(1);
}, TIMEOUT_MS);
deadline.unref();

const client = new Client({ name: "vellum-interop-ts", version: "0.1.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
try {
  await client.connect(transport);
  expect("server name", client.getServerVersion()?.name, "hello-world");
  if (!transport.sessionId) failures.push("no Mcp-Session-Id after initialize");
  if (!client.getServerCapabilities()?.tools) failures.push("the server does not advertise tools");

  const { tools } = await client.listTools();
  const hello = tools.find((t) => t.name === "hello_world");
  if (!hello) {
    failures.push(`hello_world missing from tools/list: ${JSON.stringify(tools.map((t) => t.name))}`);
  } else {
    expect("description", hello.description, "根据 user_name 返回问候语");
    expect("inputSchema.type", hello.inputSchema?.type, "object");
    expect("inputSchema.properties.user_name.type", hello.inputSchema?.properties?.user_name?.type, "string");
    expect("inputSchema.required", hello.inputSchema?.required, ["user_name"]);
  }

  const result = await client.callTool({ name: "hello_world", arguments: { user_name: "Alice" } });
  expect("isError", result.isError ?? false, false);
  expect("content", result.content, [{ type: "text", text: "Hello World, Alice" }]);
  const text = result.content?.[0]?.text;
  if (typeof text === "string") console.log(text);

  const bad = await client.callTool({ name: "hello_world", arguments: {} });
  expect("isError for missing user_name", bad.isError, true);

  await transport.terminateSession();
  await client.close();
} catch (e) {
  failures.push(`error: ${e?.stack ?? e}`);
}

if (failures.length > 0) {
  for (const f of failures) console.error(`MISMATCH ${f}`);
  process.exit(1);
}
process.exit(0);
