"""A small stdio MCP server (2025-11-25, no SDK) for the gateway tests: it behaves, and
misbehaves, on request, and says on stderr what it saw, so a test reading the proxy's log
knows what reached the child.

Usage: python3 child.py [--mute]      (--mute: never answers anything, to test start timeouts)

stderr lines the tests look for:
  initialized by NAME with CAPABILITIES_JSON
  cancelled ID
  answer ID RESULT_JSON
Tools: echo {text}, pid, slow {seconds}, die, garbage, huge {bytes}, progress {steps},
log {text}, changed, ask {method}, ask_then_cancel.
"""

import json
import os
import sys
import threading

MUTE = "--mute" in sys.argv[1:]
out_lock = threading.Lock()
# Requests of ours waiting for the client's answer: id -> (event, slot).
asked = {}
# Our tools/call requests being served: id -> threading.Event set on cancellation.
running = {}
next_id = [0]


def say(line):
    print(line, file=sys.stderr, flush=True)


def send(message):
    with out_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def result(rid, value):
    send({"jsonrpc": "2.0", "id": rid, "result": value})


def text(rid, t):
    result(rid, {"content": [{"type": "text", "text": t}]})


def ask(method, params, timeout=30):
    """Sends a request to the client and waits for its answer."""
    next_id[0] += 1
    qid = "q%d" % next_id[0]
    done = threading.Event()
    slot = {}
    asked[qid] = (done, slot)
    send({"jsonrpc": "2.0", "id": qid, "method": method, "params": params})
    done.wait(timeout)
    return qid, slot.get("answer")


TOOLS = [
    {"name": n, "inputSchema": {"type": "object"}}
    for n in ["echo", "pid", "slow", "die", "garbage", "huge", "progress", "log", "changed",
              "ask", "ask_then_cancel"]
]


def call(rid, name, args, meta):
    cancelled = running[rid]
    if name == "echo":
        text(rid, "echo: %s" % args.get("text", ""))
    elif name == "pid":
        text(rid, str(os.getpid()))
    elif name == "slow":
        if cancelled.wait(float(args.get("seconds", 30))):
            return  # the cancellation was reported when it came
        text(rid, "slow done")
    elif name == "die":
        sys.stdout.flush()
        os._exit(3)
    elif name == "garbage":
        with out_lock:
            sys.stdout.write("this is not JSON-RPC\n")
            sys.stdout.flush()
    elif name == "huge":
        with out_lock:
            sys.stdout.write("x" * int(args.get("bytes", 1 << 20)) + "\n")
            sys.stdout.flush()
    elif name == "progress":
        token = meta.get("progressToken")
        for i in range(1, int(args.get("steps", 3)) + 1):
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": i, "total": 3}})
        text(rid, "progress done")
    elif name == "log":
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "logger": "child", "data": args.get("text", "")}})
        text(rid, "logged")
    elif name == "changed":
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}})
        text(rid, "changed")
    elif name == "ask":
        method = args.get("method", "roots/list")
        params = {}
        if method == "elicitation/create":
            params = {"message": "Your name?", "requestedSchema": {
                "type": "object", "properties": {"name": {"type": "string"}}}}
        elif method == "sampling/createMessage":
            params = {"messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
                      "maxTokens": 10}
        qid, answer = ask(method, params)
        say("answer %s %s" % (qid, json.dumps(answer, sort_keys=True)))
        text(rid, "answered: %s" % json.dumps(answer, sort_keys=True))
    elif name == "ask_then_cancel":
        # Asks, waits a little for an answer that does not come, and gives up.
        next_id[0] += 1
        qid = "q%d" % next_id[0]
        done = threading.Event()
        asked[qid] = (done, {})
        send({"jsonrpc": "2.0", "id": qid, "method": "roots/list", "params": {}})
        if done.wait(float(args.get("patience", 0.3))):
            text(rid, "answered before I gave up")
            return
        asked.pop(qid, None)
        send({"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": qid, "reason": "changed my mind"}})
        text(rid, "gave up on %s" % qid)
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Unknown tool: " + name}})


def serve(rid, fn):
    try:
        fn()
    finally:
        running.pop(rid, None)


def handle(m):
    method = m.get("method")
    rid = m.get("id")
    params = m.get("params") or {}
    if method is None:
        # An answer to one of our questions.
        if rid in asked:
            done, slot = asked.pop(rid)
            slot["answer"] = m.get("result", m.get("error"))
            done.set()
        return
    if rid is None:
        if method == "notifications/cancelled":
            target = params.get("requestId")
            ev = running.get(target)
            if ev is not None:
                say("cancelled %s" % json.dumps(target))
                ev.set()
        return
    if method == "initialize":
        info = params.get("clientInfo", {})
        say("initialized by %s with %s" % (info.get("name"), json.dumps(params.get("capabilities"), sort_keys=True)))
        result(rid, {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": {"name": "gateway-test-child", "version": "1.0"},
            "instructions": "a test child",
        })
    elif method == "ping":
        result(rid, {})
    elif method == "tools/list":
        result(rid, {"tools": TOOLS})
    elif method == "logging/setLevel":
        result(rid, {})
    elif method == "tools/call":
        running[rid] = threading.Event()
        meta = params.get("_meta") or {}
        t = threading.Thread(target=serve, args=(rid, lambda: call(rid, params.get("name"), params.get("arguments") or {}, meta)), daemon=True)
        t.start()
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found: %s" % method}})


def main():
    for line in sys.stdin:
        if MUTE or not line.strip():
            continue
        handle(json.loads(line))


if __name__ == "__main__":
    main()
