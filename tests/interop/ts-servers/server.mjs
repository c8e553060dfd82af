// Official TypeScript SDK servers for the Vellum client's interop tests.
//
// Usage: node server.mjs <fixture|everything> <stdio|http|sse>
//
// fixture:    a server of ours on @modelcontextprotocol/sdk's McpServer: hello_world,
//             ask_name (elicitation), sample (sampling), a resource and a prompt.
// everything: @modelcontextprotocol/server-everything's own server (createServer).
// http:       Streamable HTTP with sessions on 127.0.0.1 and an ephemeral port; the start
//             line on stderr is "streamable HTTP MCP: http://127.0.0.1:PORT/mcp".
// sse:        the deprecated 2024-11-05 HTTP+SSE transport (GET /sse names the POST
//             endpoint; a POST to /sse gets 405), same start line with /sse.
// stdio:      newline-delimited JSON-RPC on stdin/stdout.

import { randomUUID } from "node:crypto";
import http from "node:http";

const [which, transportKind] = process.argv.slice(2);
if (!["fixture", "everything"].includes(which) || !["stdio", "http", "sse"].includes(transportKind)) {
  console.error("usage: node server.mjs <fixture|everything> <stdio|http|sse>");
  process.exit(2);
}

const { McpServer, ResourceTemplate } = await import("@modelcontextprotocol/sdk/server/mcp.js");
const { z } = await import("zod");

function fixture() {
  const server = new McpServer({ name: "ts-fixture", version: "1.0.0" });
  server.registerTool(
    "hello_world",
    { description: "Greets", inputSchema: { user_name: z.string() } },
    async ({ user_name }) => ({ content: [{ type: "text", text: `Hello World, ${user_name}` }] }),
  );
  server.registerTool("ask_name", { description: "Asks the user for a name" }, async () => {
    const r = await server.server.elicitInput({
      message: "Your name?",
      requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    });
    return { content: [{ type: "text", text: `Hello, ${r.content?.name ?? r.action}` }] };
  });
  server.registerTool("sample", { description: "Asks the client's model" }, async () => {
    const r = await server.server.createMessage({
      messages: [{ role: "user", content: { type: "text", text: "2+2?" } }],
      maxTokens: 10,
    });
    return { content: [{ type: "text", text: `model ${r.model} said ${r.content.text}` }] };
  });
  server.registerResource(
    "static",
    "test://static-text",
    { mimeType: "text/plain", description: "A static text" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "static text" }] }),
  );
  server.registerResource(
    "item",
    new ResourceTemplate("test://item/{id}", { list: undefined }),
    { mimeType: "text/plain" },
    async (uri, { id }) => ({ contents: [{ uri: uri.href, text: `item ${id}` }] }),
  );
  server.registerPrompt(
    "greet",
    { description: "A greeting", argsSchema: { who: z.string() } },
    ({ who }) => ({ messages: [{ role: "user", content: { type: "text", text: `Say hi to ${who}` } }] }),
  );
  return { server, cleanup: () => {} };
}

async function make() {
  if (which === "fixture") return fixture();
  const { createServer } = await import(
    "@modelcontextprotocol/server-everything/dist/server/index.js"
  );
  return createServer();
}

if (transportKind === "stdio") {
  const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
  const { server } = await make();
  await server.connect(new StdioServerTransport());
} else if (transportKind === "sse") {
  const { SSEServerTransport } = await import("@modelcontextprotocol/sdk/server/sse.js");
  const sessions = new Map();
  const httpServer = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url, "http://127.0.0.1");
      if (req.method === "GET" && url.pathname === "/sse") {
        const transport = new SSEServerTransport("/messages", res);
        sessions.set(transport.sessionId, transport);
        res.on("close", () => sessions.delete(transport.sessionId));
        const { server } = await make();
        await server.connect(transport);
      } else if (req.method === "POST" && url.pathname === "/messages") {
        const transport = sessions.get(url.searchParams.get("sessionId"));
        if (!transport) return res.writeHead(404).end("unknown session");
        await transport.handlePostMessage(req, res);
      } else {
        res.writeHead(405, { allow: "GET" }).end("Method Not Allowed");
      }
    } catch (e) {
      console.error("request failed:", e);
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
  httpServer.listen(0, "127.0.0.1", () => {
    console.error(`streamable HTTP MCP: http://127.0.0.1:${httpServer.address().port}/sse`);
  });
} else {
  const { StreamableHTTPServerTransport } = await import(
    "@modelcontextprotocol/sdk/server/streamableHttp.js"
  );
  const sessions = new Map();
  const httpServer = http.createServer(async (req, res) => {
    try {
      const sid = req.headers["mcp-session-id"];
      let transport = sid ? sessions.get(sid) : undefined;
      if (!transport && !sid && req.method === "POST") {
        const { server } = await make();
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => sessions.set(id, transport),
        });
        transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
        await server.connect(transport);
      }
      if (!transport) {
        res.writeHead(sid ? 404 : 400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "No valid session" } }));
        return;
      }
      await transport.handleRequest(req, res);
    } catch (e) {
      console.error("request failed:", e);
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
  httpServer.listen(0, "127.0.0.1", () => {
    console.error(`streamable HTTP MCP: http://127.0.0.1:${httpServer.address().port}/mcp`);
  });
}
