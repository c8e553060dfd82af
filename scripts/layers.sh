#!/usr/bin/env bash
# The architecture's import rules, checked: which top-level module of the `vellum` crate may
# import which (RULES below is the source of truth; docs/architecture.md draws it), that no
# import runs back up the layers (to a module above the importer's, or through the crate
# root's re-exports, which sit above every layer), and that no two files of one module
# import each other in a circle. It prints the import graph between the modules (module ->
# module, with the number of imports) and the count of imports back up the layers, which
# must be 0.
#
#   bash scripts/layers.sh               check crates/vellum/src; exit 1 on any violation
#   bash scripts/layers.sh --src DIR     check another source tree laid out the same way
#   bash scripts/layers.sh --self-test   prove the checker fails on planted violations
#
# What counts as an import: `use crate::x::…` (groups included), inline `crate::x::…` paths,
# and `super::` chains that climb out of the module to the crate root. Comments and string
# literals do not count. A module missing from RULES is an error: adding a module means
# deciding where it sits.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import os
import re
import sys
import tempfile

# Which top-level module may import which, bottom layer first. Every module may import
# itself; the crate root (lib.rs) may import everything.
RULES = {
    "sync":      set(),                          # the poison-tolerant lock helpers
    # ConfigError, what every setup step fails with: below every module that checks a
    # configuration (jose and uri_template included), so it imports nothing and any
    # module but sync may import it
    "config_error": set(),
    "protocol":  {"config_error", "sync"},       # JSON-RPC framing and MCP types, no I/O
    "store":     {"config_error", "protocol", "sync"},  # event and session stores, the bus
    "error":     {"config_error", "protocol", "store"},  # the crate's error type for calls
    # ids, waiters, cancellation (client and server)
    "peer":      {"config_error", "protocol", "error", "sync"},
    "jose":      {"config_error"},               # JWKs, thumbprints, DPoP proofs, signed JWTs
    "uri_template": {"config_error"},            # RFC 6570 templates (resource templates)
    "schema":    {"config_error", "protocol"},   # the built-in JSON Schema validator
    "skill_files": {"config_error", "protocol"},  # Agent Skills' files, checked (feature skills)
    "server":    {"config_error", "protocol", "error", "sync", "store", "peer", "schema",
                  "uri_template", "skill_files"},
    "client":    {"config_error", "protocol", "error", "sync", "store", "peer", "jose"},
    "transport": {"config_error", "protocol", "error", "sync", "store", "peer", "server",
                  "client"},
    "auth":      {"config_error", "protocol", "error", "sync", "store", "server", "transport",
                  "jose"},
    # extractors, results and routes of handler functions (what the macros expand to)
    "handler":   {"config_error", "protocol", "error", "sync", "server", "auth"},
    "otel":      {"config_error", "transport"},  # OTLP span export (the crypto provider)
    # a server whose requests another MCP server serves, through the client
    "gateway":   {"config_error", "protocol", "error", "sync", "server", "client", "transport"},
    # an in-memory client for a server's tests (feature testing): the top of the library
    "testing":   {"config_error", "protocol", "error", "server", "client", "transport", "auth"},
}
# Names the crate root re-exports, and the module they belong to (an import of them through
# the crate root runs back up the layers: import them from their module).
ROOT_REEXPORTS = {"Error": "error", "Result": "error"}
# The crate root (lib.rs and its inline modules, such as the prelude): above every layer.
ROOT = "(crate root)"
# The one recursion a module may keep: `Server` owns the handlers, and each handler's
# context reaches back to its `Server`. Files name it through the module root
# (`super::Server`); such an import is not an edge of the file graph.
KNOT = {("server", "Server")}

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


RAW = re.compile(r'(?:b|c)?r(#*)"')
WORD = re.compile(r"\w")
CHAR = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'")


def strip(text):
    """The source with comments, string and char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "bcr" and RAW.match(text, i) and (i == 0 or not WORD.match(text, i - 1)):
            m = RAW.match(text, i)
            end = '"' + m.group(1)
            j = text.find(end, m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            m = CHAR.match(text, i)
            if m:
                out.append(" " * (m.end() - i))
                i = m.end()
            else:
                out.append(c)  # a lifetime
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


TOKEN = re.compile(rf"\$?{IDENT}|::|[{{}},;*]|\S")


def tokens(text):
    """(token, line) pairs of stripped source."""
    line, pos = 1, 0
    for m in TOKEN.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        yield m.group(0), line


class Source:
    """One file: its module path (top-level module first) and the paths it names."""

    def __init__(self, src, rel):
        self.rel = rel
        parts = rel[:-3].split("/")
        if parts[-1] in ("mod", "lib"):
            parts = parts[:-1]
        self.module = parts  # [] for lib.rs
        self.is_facade = rel.endswith("mod.rs") or rel == "lib.rs"
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            self.text = strip(f.read())

    def paths(self):
        """Every absolute path this file names: (segments, line, via_super_to_root)."""
        toks = list(tokens(self.text))
        inline = []  # (depth at which the inline module's body opened, name)
        depth = 0
        i = 0
        found = []
        while i < len(toks):
            t, line = toks[i]
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
                while inline and inline[-1][0] > depth:
                    inline.pop()
            elif t == "mod" and i + 2 < len(toks) and toks[i + 2][0] == "{":
                inline.append((depth + 1, toks[i + 1][0]))
            elif t in ("crate", "super", "self") and i + 1 < len(toks) and toks[i + 1][0] == "::":
                prev = toks[i - 1][0] if i else ""
                if prev != "::":
                    here = self.module + [name for _, name in inline]
                    i = self._path(toks, i, here, line, found)
                    continue
            i += 1
        return found

    def _path(self, toks, i, here, line, found):
        base, climbed = [], False
        t = toks[i][0]
        if t == "crate":
            base, i = [], i + 2
        else:
            base = list(here)
            if t == "self":
                i += 2
            while i < len(toks) and toks[i][0] == "super" and toks[i + 1][0] == "::":
                if not base:
                    found.append((["<above the crate root>"], line, True))
                    return i + 2
                base.pop()
                i += 2
            climbed = not base
        return self._rest(toks, i, base, line, found, climbed)

    def _rest(self, toks, i, base, line, found, climbed):
        segs = list(base)
        while i < len(toks):
            t = toks[i][0]
            if t == "{":
                i += 1
                while i < len(toks) and toks[i][0] != "}":
                    if toks[i][0] == ",":
                        i += 1
                        continue
                    if toks[i][0] == "self":
                        found.append((segs, line, climbed))
                        i += 1
                        continue
                    if toks[i][0] == "super":
                        # `super` inside a group is relative to the group's path.
                        i = self._path_from(toks, i, segs, line, found)
                        continue
                    j = self._rest(toks, i, segs, line, found, climbed)
                    i = j if j > i else i + 1  # `as NAME` and other tokens: step over
                return i + 1
            if re.fullmatch(IDENT, t) and t != "as":
                segs.append(t)
                if i + 1 < len(toks) and toks[i + 1][0] == "::":
                    i += 2
                    continue
                i += 1
                break
            if t == "*":
                i += 1
            break
        found.append((segs, line, climbed))
        return i

    def _path_from(self, toks, i, base, line, found):
        base = list(base)
        while i < len(toks) and toks[i][0] == "super" and toks[i + 1][0] == "::":
            base.pop() if base else None
            i += 2
        return self._rest(toks, i, base, line, found, not base)


def facade_exports(sources):
    """For each directory module: re-exported name -> the child module it comes from."""
    exports = {}
    pat = re.compile(rf"\bpub(?:\s*\([^)]*\))?\s+use\s+({IDENT})\s*::\s*(\{{[^}}]*\}}|{IDENT})")
    for s in sources.values():
        if not s.is_facade or not s.module:
            continue
        names = {}
        for m in pat.finditer(s.text):
            child, items = m.group(1), m.group(2).strip("{}")
            for item in items.split(","):
                item = item.strip()
                if not item:
                    continue
                name = item.split(" as ")[-1].strip().split("::")[-1]
                names[name] = child
        exports[tuple(s.module)] = names
    return exports


def reach(module):
    """Every module `module` may import, directly or through the layers it may import."""
    seen, todo = set(), list(RULES.get(module, ()))
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(RULES.get(m, ()))
    return seen


def check(src, graph=None, ups=None):
    """The violations in the tree at `src`. `graph` (a dict) receives the import counts
    between modules, `ups` (a list) the imports that run back up the layers (also among the
    violations)."""
    graph = {} if graph is None else graph
    ups = [] if ups is None else ups
    sources = {}
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith(".rs"):
                rel = os.path.relpath(os.path.join(root, f), src).replace(os.sep, "/")
                sources[rel] = Source(src, rel)
    modules = {tuple(s.module): rel for rel, s in sources.items()}
    exports = facade_exports(sources)
    problems = []

    for a, allowed in RULES.items():
        for b in allowed:
            if b not in RULES:
                problems.append(f"RULES: {a} may import {b}, which has no rule of its own")
    seen, order = set(), []

    def visit(m, stack):
        if m in stack:
            problems.append("RULES: the layers form a circle: " + " -> ".join(stack[stack.index(m):] + [m]))
            return
        if m in seen:
            return
        seen.add(m)
        for n in RULES.get(m, ()):
            visit(n, stack + [m])

    for m in RULES:
        visit(m, [])

    edges = {}
    for rel, s in sorted(sources.items()):
        top = s.module[0] if s.module else None
        if top is not None and top not in RULES:
            problems.append(f"{rel}: module `{top}` has no rule in scripts/layers.sh (decide which layers it may import)")
            continue
        for segs, line, climbed in s.paths():
            if not segs:
                continue
            target = segs[0]
            if target == "<above the crate root>":
                problems.append(f"{rel}:{line}: `super::` climbs above the crate root")
                continue
            # The graph's node for the target: its module, or the crate root for an item of
            # lib.rs (a re-export, an inline module such as the prelude).
            node = target if (target,) in modules or target in RULES else ROOT
            here = top if top is not None else ROOT
            if node != here:
                graph[(here, node)] = graph.get((here, node), 0) + 1
            if top is not None and node != top and (node == ROOT or top in reach(node)):
                if node == ROOT:
                    home = ROOT_REEXPORTS.get(target)
                    fix = f" (import it from `crate::{home}`)" if home else ""
                    why = f"imports `crate::{'::'.join(segs)}` through the crate root{fix}"
                else:
                    why = f"imports `{node}`, a layer above it"
                up = f"{rel}:{line}: runs back up the layers: `{top}` {why}"
                ups.append(up)
                problems.append(up)
            target = ROOT_REEXPORTS.get(target, target)
            if top is None:
                continue  # the crate root may import anything
            if target != top:
                how = "super:: out of the module to" if climbed else "imports"
                if target not in RULES:
                    problems.append(f"{rel}:{line}: `{top}` {how} `crate::{segs[0]}`, which is no module of the rule table")
                elif target not in RULES[top]:
                    problems.append(f"{rel}:{line}: `{top}` {how} `{target}` (allowed: {', '.join(sorted(RULES[top])) or 'nothing'})")
                continue
            if s.is_facade:
                continue  # a module root declares and re-exports its files
            # An edge of the file graph inside the module: the longest path that names a file.
            k = len(segs)
            while k and tuple(segs[:k]) not in modules:
                k -= 1
            dest = tuple(segs[:k])
            if k < len(segs) and dest in exports and segs[k] in exports[dest]:
                if (dest[0], segs[k]) in KNOT and len(dest) == 1:
                    continue
                dest = dest + (exports[dest][segs[k]],)
            if dest not in modules or sources[modules[dest]].is_facade:
                continue
            if modules[dest] != rel and not tuple(s.module[: len(dest)]) == dest:
                edges.setdefault(rel, {}).setdefault(modules[dest], line)

    # Circles between files of one module.
    state, stack = {}, []

    def walk(f):
        state[f] = 1
        stack.append(f)
        for g in sorted(edges.get(f, {})):
            if state.get(g) == 1:
                cyc = stack[stack.index(g):] + [g]
                problems.append("circle between files: " + " -> ".join(
                    f"{x}" + (f":{edges[x][y]}" if y else "") for x, y in zip(cyc, cyc[1:] + [None])))
            elif g not in state:
                walk(g)
        stack.pop()
        state[f] = 2

    for f in sorted(edges):
        if f not in state:
            walk(f)
    return problems


def self_test():
    """Plants each kind of violation in a small tree and checks that each is caught, and
    that a clean tree with the same traps (comments, strings, inline modules) passes."""
    clean = {
        "lib.rs": "pub mod protocol; pub mod server; pub mod store; pub mod transport;\nuse crate::server::S;\n",
        "protocol/mod.rs": "mod wire;\npub use wire::Msg;\n",
        "protocol/wire.rs": "use crate::sync::lock;\n// use crate::server::Server;\n"
                            "const DOC: &str = \"crate::transport::x\";\nconst R: &str = r#\"crate::auth::y\"#;\n"
                            "fn f<'a>(c: &'a char) -> char { let _ = '{'; *c }\n"
                            "pub struct Msg;\n",
        "sync.rs": "pub fn lock() {}\n",
        "error.rs": "use crate::protocol::Msg;\n",
        "store/mod.rs": "use crate::{protocol::Msg, sync::lock};\n",
        "server/mod.rs": "mod server;\nmod a;\nmod b;\npub use server::Server;\n",
        "server/server.rs": "use super::a::A;\npub struct Server;\n",
        "server/a.rs": "use super::b::B;\nuse crate::store;\npub struct A;\n"
                       "#[cfg(test)]\nmod tests {\n    use super::super::b::B;\n    use super::*;\n}\n",
        "server/b.rs": "use super::Server; // the knot\nuse crate::error::Error;\npub struct B;\n",
        "transport/mod.rs": "pub mod http;\n",
        "transport/http/mod.rs": "mod handler;\n",
        "transport/http/handler.rs": "use super::super::super::server::Server;\nuse crate::server::b::B;\n",
    }
    planted = {
        "protocol/bad_use.rs": ("use crate::server::Server;\n", "`protocol` imports `server`"),
        "protocol/bad_inline.rs": ("fn f() { crate::transport::http::serve(); }\n", "`protocol` imports `transport`"),
        "store/bad_group.rs": ("use crate::{protocol::Msg, server::{a::A, b::B}};\n", "`store` imports `server`"),
        "server/bad_super.rs": ("fn f() { super::super::auth::check(); }\n", "`server` super:: out of the module to `auth`"),
        "server/deep/mod.rs": ("mod bad;\n", None),
        "server/deep/bad.rs": ("use super::super::super::transport::T;\n", "`server` super:: out of the module to `transport`"),
        "transport/bad_auth.rs": ("use crate::auth::Principal;\n", "`transport` imports `auth`"),
        "server/c1.rs": ("use super::c2::X;\npub struct Y;\n", "circle between files: server/c1.rs"),
        "server/c2.rs": ("use super::c1::Y;\npub struct X;\n", None),
        "shiny/mod.rs": ("pub struct New;\n", "module `shiny` has no rule"),
        "server/facade.rs": ("use super::Hidden;\npub struct F;\n", "circle between files: server/facade.rs"),
        "server/hidden.rs": ("use super::facade::F;\npub struct Hidden;\n", None),
        "server/root_reexport.rs": ("use crate::prelude::X;\n", "which is no module of the rule table"),
        # Allowed by the rule table (the crate root re-exports `error`'s type), and still an
        # import back up the layers: the one kind only the up-count catches.
        "transport/root_error.rs": ("fn f() -> crate::Error { todo() }\n", "through the crate root (import it from `crate::error`)"),
        "store/up_direct.rs": ("use crate::error::Error;\n", "`error`, a layer above it"),
    }
    # The planted imports that run back up the layers (the others are sideways or broken).
    planted_ups = {"protocol/bad_use.rs", "protocol/bad_inline.rs", "store/bad_group.rs",
                   "server/bad_super.rs", "server/deep/bad.rs", "transport/bad_auth.rs",
                   "server/root_reexport.rs", "transport/root_error.rs", "store/up_direct.rs"}
    failures = []
    with tempfile.TemporaryDirectory() as d:
        def write(files):
            for rel, text in files.items():
                p = os.path.join(d, rel)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "w", encoding="utf-8") as f:
                    f.write(text)

        write(clean)
        graph, ups = {}, []
        problems = check(d, graph, ups)
        if problems:
            failures.append("the clean tree was refused:\n  " + "\n  ".join(problems))
        if graph.get(("server", "error")) != 1 or graph.get((ROOT, "server")) != 1:
            failures.append(f"the clean tree's import graph is wrong: {graph}")
        write({rel: text for rel, (text, _) in planted.items()})
        with open(os.path.join(d, "server/mod.rs"), "a", encoding="utf-8") as f:
            f.write("mod facade;\nmod hidden;\npub use hidden::Hidden;\n")
        ups = []
        problems = check(d, None, ups)
        for rel in sorted(planted_ups):
            if not any(u.startswith(rel + ":") for u in ups):
                failures.append(f"not counted as an import back up the layers: {rel}")
        unplanted = [u for u in ups if u.split(":")[0] not in planted_ups]
        if unplanted:
            failures.append("counted as imports back up the layers, but not planted as such:\n  " + "\n  ".join(unplanted))
        for rel, (_, expect) in planted.items():
            if expect and not any(expect in p and rel.split("/")[0] in p for p in problems):
                failures.append(f"not caught: {rel} ({expect})")
        if len(problems) < sum(1 for _, e in planted.values() if e):
            failures.append(f"only {len(problems)} problems reported:\n  " + "\n  ".join(problems))
    if failures:
        print("layers self-test FAILED:\n" + "\n".join(failures))
        return 1
    print(f"layers self-test: {sum(1 for _, e in planted.values() if e)} planted violations caught "
          f"({len(planted_ups)} of them imports back up the layers, each counted), the clean tree passes")
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    src = "crates/vellum/src"
    if len(argv) == 2 and argv[0] == "--src":
        src = argv[1]
    elif argv:
        print(__doc__ if False else "usage: layers.sh [--src DIR | --self-test]")
        return 2
    graph, ups = {}, []
    problems = check(src, graph, ups)
    print(f"import graph of {src} (module -> module: imports):")
    for here in sorted({a for a, _ in graph}, key=lambda m: (m == ROOT, m)):
        edges = sorted((b, n) for (a, b), n in graph.items() if a == here)
        print(f"  {here:<12} -> " + ", ".join(f"{b} {n}" for b, n in edges))
    print(f"imports back up the layers: {len(ups)}")
    for p in problems:
        print(p)
    if problems:
        print(f"layers: {len(problems)} violation(s) in {src}")
        return 1
    print(f"layers: {src} follows the rule table")
    return 0


sys.exit(main(sys.argv[1:]))
PY
