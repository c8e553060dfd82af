// TypeScript SDK peer for the Vellum benchmark: the benchmark's fixtures over Streamable HTTP,
// stateful sessions with SSE answers (the SDK's default), following the SDK's documented
// express pattern: one McpServer + StreamableHTTPServerTransport per session, kept in a map.
//
// Tools (the same on every peer, see bench/README.md): hello_world {user_name}; stream
// {count?, interval_ms?} (count progress notifications, default 10, interval_ms apart, then
// "streamed <count>"); blob {bytes}
// (a text of exactly that many bytes); touch {} (adds or removes the tool bench_toggle on every
// session's server, each of which then tells its session); and --tools N filler tools.
//
// usage: node server.mjs [--addr 127.0.0.1:PORT] [--tools N]     endpoint: /mcp
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const MAX_BLOB_BYTES = 16 * 1024 * 1024;

function arg(argv, name, fallback) {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : fallback;
}

function parseAddr(addr) {
  const colon = addr.lastIndexOf(':');
  return { host: addr.slice(0, colon), port: Number(addr.slice(colon + 1)) };
}

const text = (t) => ({ content: [{ type: 'text', text: t }] });

// Every session's server, for touch; and whether bench_toggle is there now.
const servers = new Map();
let toggled = false;

function addToggle(server) {
  return server.registerTool('bench_toggle', { description: 'Comes and goes with touch' }, async () => text('toggle'));
}

function newServer(fillers) {
  const server = new McpServer({ name: 'ts-peer', version: '0.1.0' });
  server.registerTool(
    'hello_world',
    { description: 'Say hello to a user', inputSchema: { user_name: z.string() } },
    async ({ user_name }) => text(`Hello World, ${user_name}`),
  );
  server.registerTool(
    'stream',
    { description: 'Send count progress notifications (default 10), then the result', inputSchema: { count: z.number().int().optional(), interval_ms: z.number().int().optional() } },
    async ({ count, interval_ms }, extra) => {
      const n = Math.min(count ?? 10, 10000);
      const progressToken = extra._meta?.progressToken;
      if (progressToken !== undefined) {
        for (let i = 1; i <= n; i++) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: i, total: n } });
          if (interval_ms > 0) await new Promise((r) => setTimeout(r, Math.min(interval_ms, 1000)));
        }
      }
      return text(`streamed ${n}`);
    },
  );
  server.registerTool(
    'blob',
    { description: 'Answer with a text of exactly bytes bytes', inputSchema: { bytes: z.number().int().min(0).max(MAX_BLOB_BYTES) } },
    async ({ bytes }) => text('x'.repeat(bytes)),
  );
  server.registerTool('touch', { description: 'Add or remove the tool bench_toggle' }, async () => {
    toggled = !toggled;
    for (const [s, entry] of servers) {
      if (toggled) {
        entry.toggle = addToggle(s);
      } else if (entry.toggle) {
        entry.toggle.remove();
        entry.toggle = undefined;
      }
    }
    return text(toggled ? 'added' : 'removed');
  });
  for (let i = 0; i < fillers; i++) {
    const name = `filler_${String(i).padStart(5, '0')}`;
    server.registerTool(name, { description: 'A tool that is only listed' }, async () => text('filler'));
  }
  servers.set(server, { toggle: toggled ? addToggle(server) : undefined });
  return server;
}

const { host, port } = parseAddr(arg(process.argv, '--addr', '127.0.0.1:8000'));
const fillers = Number(arg(process.argv, '--tools', '0'));
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
    const server = newServer(fillers);
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => transports.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) transports.delete(transport.sessionId);
      servers.delete(server);
    };
    await server.connect(transport);
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
