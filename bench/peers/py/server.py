"""Python SDK peer for the Vellum benchmark: the benchmark's fixtures over Streamable HTTP.

Stateful sessions with SSE answers (the SDK's default), the SDK's Starlette app under plain
uvicorn (as `pip install mcp` brings it: no uvloop, no httptools). The SDK's own logging stays at its
default (INFO: a line per session opened and closed); uvicorn's access log (a line per request)
is off. The SDK's default cap of 10,000 sessions is lifted so the hold scenarios can open
10,000 sessions on top of their 10 warm-up ones.

Tools (the same on every peer, see bench/README.md): hello_world {user_name}; stream {count?}
(count progress notifications, default 10, interval_ms apart, then "streamed <count>"); blob {bytes} (a text of
exactly that many bytes); touch {} (adds or removes the tool bench_toggle and tells every
session, and every subscriptions/listen stream); and --tools N filler tools to list.

The SDK has no broadcast of a list change to legacy sessions, so the session of every tool
call is remembered and touch tells each of them, as a server with a dynamic tool set would.
`ctx.session` is a proxy built per request; the connection behind it (one per session) is
what identifies the session, and the SDK offers no public name for it.

usage: .venv/bin/python server.py [--addr 127.0.0.1:PORT] [--tools N]     endpoint: /mcp
"""

import argparse
import weakref

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

MAX_BLOB_BYTES = 16 * 1024 * 1024

mcp = MCPServer("py-peer")
# connection -> the latest request proxy of that session (which can notify its GET stream)
sessions: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
state = {"toggled": False}


def remember(ctx: Context) -> None:
    sessions[ctx.session._connection] = ctx.session


@mcp.tool()
def hello_world(user_name: str, ctx: Context) -> str:
    """Say hello to a user."""
    remember(ctx)
    return f"Hello World, {user_name}"


@mcp.tool()
async def stream(ctx: Context, count: int | None = None, interval_ms: int | None = None) -> str:
    """Send count progress notifications (default 10), interval_ms apart, then the result."""
    remember(ctx)
    n = min(10 if count is None else count, 10000)
    for i in range(1, n + 1):
        await ctx.report_progress(i, n)
        if interval_ms:
            await anyio.sleep(min(interval_ms, 1000) / 1000)
    return f"streamed {n}"


@mcp.tool()
def blob(bytes: int, ctx: Context) -> str:
    """Answer with a text of exactly `bytes` bytes."""
    remember(ctx)
    if bytes < 0 or bytes > MAX_BLOB_BYTES:
        raise ValueError(f"at most {MAX_BLOB_BYTES} bytes")
    return "x" * bytes


def bench_toggle() -> str:
    """Comes and goes with touch."""
    return "toggle"


@mcp.tool()
async def touch(ctx: Context) -> str:
    """Add or remove the tool bench_toggle."""
    remember(ctx)
    state["toggled"] = not state["toggled"]
    if state["toggled"]:
        mcp.add_tool(bench_toggle)
    else:
        mcp.remove_tool("bench_toggle")
    for conn, s in list(sessions.items()):
        try:
            await s.send_tool_list_changed()
        except Exception:  # a session that has gone away
            sessions.pop(conn, None)
    try:
        await ctx.notify_tools_changed()
    except ValueError:  # no listen support on this path
        pass
    return "added" if state["toggled"] else "removed"


def filler() -> str:
    """A tool that is only listed."""
    return "filler"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", default="127.0.0.1:8000")
    parser.add_argument("--tools", type=int, default=0)
    args = parser.parse_args()
    for i in range(args.tools):
        mcp.add_tool(filler, name=f"filler_{i:05d}")
    host, _, port = args.addr.rpartition(":")
    app = mcp.streamable_http_app(host=host, max_sessions=None)
    uvicorn.run(app, host=host, port=int(port), access_log=False, log_level="warning")


if __name__ == "__main__":
    main()
