// TypeScript SDK peer for the Vellum benchmark: hello_world over Streamable HTTP, stateful
// sessions with SSE answers (the SDK's default), following the SDK's documented express
// pattern: one McpServer + StreamableHTTPServerTransport per session, kept in a map.
//
// usage: node server.mjs [--addr 127.0.0.1:PORT]     endpoint: /mcp
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

function parseAddr(argv) {
  const i = argv.indexOf('--addr');
  const addr = i >= 0 ? argv[i + 1] : '127.0.0.1:8000';
  const colon = addr.lastIndexOf(':');
  return { host: addr.slice(0, colon), port: Number(addr.slice(colon + 1)) };
}

function newServer() {
  const server = new McpServer({ name: 'ts-peer', version: '0.1.0' });
  server.registerTool(
    'hello_world',
    { description: 'Say hello to a user', inputSchema: { user_name: z.string() } },
    async ({ user_name }) => ({ content: [{ type: 'text', text: `Hello World, ${user_name}` }] }),
  );
  return server;
}

const { host, port } = parseAddr(process.argv);
const app = createMcpExpressApp({ host });
const transports = new Map();

function rejectSession(res, status, message) {
  res.status(status).json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });
}

app.post('/mcp', async (req, res) => {
  const sid = req.headers['mcp-session-id'];
  let transport = sid ? transports.get(sid) : undefined;
  if (!transport) {
    if (sid) return rejectSession(res, 404, 'Session not found');
    if (!isInitializeRequest(req.body)) return rejectSession(res, 400, 'No valid session id');
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => transports.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) transports.delete(transport.sessionId);
    };
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
});

// GET (standalone SSE stream) and DELETE (end of session) go to the session's transport.
const bySession = async (req, res) => {
  const transport = transports.get(req.headers['mcp-session-id']);
  if (!transport) return rejectSession(res, 404, 'Session not found');
  await transport.handleRequest(req, res);
};
app.get('/mcp', bySession);
app.delete('/mcp', bySession);

app.listen(port, host, (err) => {
  if (err) {
    console.error(err);
    process.exit(1);
  }
});
