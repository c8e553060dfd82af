"""Interop check: the official MCP Python SDK client (PyPI `mcp`) against a Vellum server.

Usage: python client.py URL MODE [TOOL ARGS_JSON EXPECTED]     (MODE: legacy | auto | 2026-07-28)

Connects in MODE, checks the negotiated era, lists the tools, calls `hello_world` with
user_name "Alice" (or TOOL with ARGS_JSON, expecting the text EXPECTED) and prints the text.
Any mismatch is printed on stderr with exit code 1.
"""

import sys

import anyio
from mcp.client.client import Client


async def main(url: str, mode: str, tool: str, args: dict, expected: str) -> int:
    failures = []
    with anyio.fail_after(30):
        async with Client(url, mode=mode) as client:
            version = client.protocol_version
            modern = version >= "2026-07-28"
            if (mode == "legacy") == modern:
                failures.append(f"mode {mode} negotiated {version}")
            tools = await client.list_tools()
            names = [t.name for t in tools.tools]
            if tool not in names:
                failures.append(f"{tool} missing from {names}")
            result = await client.call_tool(tool, args)
            texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
            if result.is_error or texts != [expected]:
                failures.append(f"unexpected result {result}")
            for t in texts:
                print(t)
            print(f"protocol {version}", file=sys.stderr)
    for f in failures:
        print(f"MISMATCH {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    url, mode = sys.argv[1], sys.argv[2]
    tool, args, expected = "hello_world", {"user_name": "Alice"}, "Hello World, Alice"
    if len(sys.argv) > 3:
        import json

        tool, args, expected = sys.argv[3], json.loads(sys.argv[4]), sys.argv[5]
    sys.exit(anyio.run(main, url, mode, tool, args, expected))
