"""Python SDK peer for the Vellum benchmark: hello_world over Streamable HTTP.

Stateful sessions with SSE answers (the SDK's default), the SDK's Starlette app under plain
uvicorn (as `pip install mcp` brings it: no uvloop, no httptools). The SDK's own logging stays at its
default (INFO: a line per session opened and closed); uvicorn's access log (a line per request)
is off. The SDK's default cap of 10,000 sessions is lifted so the hold scenarios can open
10,000 sessions on top of their 10 warm-up ones.

usage: .venv/bin/python server.py [--addr 127.0.0.1:PORT]     endpoint: /mcp
"""

import argparse

import uvicorn
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("py-peer")


@mcp.tool()
def hello_world(user_name: str) -> str:
    """Say hello to a user."""
    return f"Hello World, {user_name}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", default="127.0.0.1:8000")
    args = parser.parse_args()
    host, _, port = args.addr.rpartition(":")
    app = mcp.streamable_http_app(host=host, max_sessions=None)
    uvicorn.run(app, host=host, port=int(port), access_log=False, log_level="warning")


if __name__ == "__main__":
    main()
