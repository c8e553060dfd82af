// Judges one run of the official MCP conformance suite from the checks.json files it wrote,
// for scripts/conformance.sh (server scenarios) and
// crates/vellum-cli/tests/interop_conformance_client.rs (client scenarios): one rule, one place.
//
//   node verdict.mjs --results DIR --suite SUITE --mode MODE [--partial]
//                    --scenario NAME... [--expect "KEY REASON"]...
//
// DIR holds what `conformance server|client ... -o DIR` wrote: one directory per scenario,
// `[server-]<scenario>-<ISO time>/checks.json` (client scenario names such as `auth/dpop`
// make a subdirectory). Every --scenario must have a result.
//
// A scenario passes when it has a result, no check is FAILURE or WARNING, and at least one
// of its own checks is SUCCESS: a scenario that verified nothing does not pass, and the
// suite's synthetic `wire-schema-valid` (every message it saw matched the schema) does not
// count as verifying the scenario (an extension the server does not declare SKIPs every
// check and leaves only that one).
//
// --expect lists a known failure, the key then a one-line reason:
//   SUITE/MODE/SCENARIO          the whole scenario may fail
//   SUITE/MODE/SCENARIO:CHECK    only that check may fail (FAILURE or WARNING); every other
//                                check of the scenario is still held to the rule
// MODE may hold `*`, any run of characters (`*`: every mode; `json*`: json and
// json@2026-07-28). A listed scenario or check that passes fails the run, so the list cannot
// outlive the fix; so does a key of this very MODE that names no scenario of
// this run (unless --partial: the run was narrowed with --scenario).
//
// Prints one line per scenario, then `conformance SUITE MODE: N passed, M failed[, K expected
// failures]`, where M counts what fails the run. Exit 0 when M is 0, 1 otherwise, 2 on a
// usage error.
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const opt = { scenarios: [], expect: [], partial: false };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const value = () => {
    if (i + 1 >= args.length) usage(`${a} needs a value`);
    return args[++i];
  };
  if (a === '--results') opt.results = value();
  else if (a === '--suite') opt.suite = value();
  else if (a === '--mode') opt.mode = value();
  else if (a === '--scenario') opt.scenarios.push(value());
  else if (a === '--expect') opt.expect.push(value());
  else if (a === '--partial') opt.partial = true;
  else usage(`unknown argument ${a}`);
}
if (!opt.results || !opt.suite || !opt.mode) usage('--results, --suite and --mode are required');
if (opt.scenarios.length === 0) usage('no --scenario given');

// MODE of a key: a name, or a pattern where `*` stands for any run of characters.
function glob(pattern) {
  const quoted = pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${quoted.join('.*')}$`);
}

function usage(why) {
  console.error(`verdict: ${why}`);
  process.exit(2);
}

// --- the expectations that apply to this suite and mode --------------------------------
const wholesale = new Map(); // scenario -> reason
const perCheck = new Map(); // scenario -> Map(check id -> reason)
const keys = []; // [key, scenario] for the stale-key check
for (const entry of opt.expect) {
  const m = /^(\S+)\s+(\S.*)$/.exec(entry.trim());
  if (!m) usage(`--expect "${entry}": give the key, then a one-line reason`);
  const [, key, reason] = m;
  const parts = /^([^/]+)\/([^/]+)\/([^:]+)(?::(.+))?$/.exec(key);
  if (!parts) usage(`--expect key ${key}: write SUITE/MODE/SCENARIO[:CHECK]`);
  const [, suite, mode, scenario, check] = parts;
  if (suite !== opt.suite || !glob(mode).test(opt.mode)) continue;
  // A key with `*` may name a scenario that only some of its modes have (extensions are not
  // on the 2026-07-28 wire, for one), so only a key for this very mode must find its scenario.
  if (!mode.includes('*')) keys.push([key, scenario]);
  if (check === undefined) {
    if (perCheck.has(scenario)) usage(`${scenario} is listed both whole and per check`);
    wholesale.set(scenario, reason);
  } else {
    if (wholesale.has(scenario)) usage(`${scenario} is listed both whole and per check`);
    if (!perCheck.has(scenario)) perCheck.set(scenario, new Map());
    perCheck.get(scenario).set(check, reason);
  }
}

// --- the results: checks.json files, keyed by scenario name ---------------------------
const STAMP = /-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
const results = new Map(); // scenario -> { dir, checks }
function walk(dir) {
  let entries = [];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name === 'checks.json') {
      const rel = path.relative(opt.results, dir).split(path.sep).join('/');
      if (!STAMP.test(rel)) continue;
      let name = rel.replace(STAMP, '');
      if (!opt.scenarios.includes(name) && name.startsWith('server-')) name = name.slice(7);
      let checks;
      try {
        checks = JSON.parse(fs.readFileSync(p, 'utf8'));
      } catch (err) {
        checks = [{ id: 'checks.json', status: 'FAILURE', errorMessage: `unreadable: ${err.message}` }];
      }
      if (!Array.isArray(checks)) checks = [];
      // A scenario run twice into one directory: the later run counts.
      const prev = results.get(name);
      if (!prev || prev.dir < rel) results.set(name, { dir: rel, checks });
    }
  }
}
walk(opt.results);

// --- judging ---------------------------------------------------------------------------
const BAD = new Set(['FAILURE', 'WARNING']);
const WIRE_SCHEMA = 'wire-schema-valid';
const SEVERITY = { FAILURE: 4, WARNING: 3, SUCCESS: 2, INFO: 1, SKIPPED: 0 };
const short = (s) => String(s ?? '').replace(/\s+/g, ' ').slice(0, 300);
let passed = 0;
let failed = 0;
let expected = 0;
const failedNames = [];
const lines = [];
const say = (tag, name, note, details = []) => {
  lines.push(`  ${tag.padEnd(5)} ${name.padEnd(46)} ${note}`);
  for (const d of details) lines.push(`      ${d}`);
};

for (const name of opt.scenarios) {
  const r = results.get(name);
  const checks = r ? r.checks : [];
  const count = (s) => checks.filter((c) => c.status === s).length;
  const ok = count('SUCCESS');
  const own = checks.filter((c) => c.status === 'SUCCESS' && c.id !== WIRE_SCHEMA).length;
  const bad = checks.filter((c) => BAD.has(c.status));
  const clean = r !== undefined && bad.length === 0 && own > 0;
  const problems = bad.map((c) => `${c.status} ${c.id}: ${short(c.errorMessage || c.description)}`);
  if (r === undefined) problems.push('no result: the scenario did not finish (see the suite output)');
  else if (own === 0 && bad.length === 0) {
    const seen = [...new Set(checks.map((c) => `${c.status} ${c.id}`))];
    const list = seen.length > 6 ? `${seen.slice(0, 6).join(', ')}, ...` : seen.join(', ');
    problems.push(`verified nothing: none of its own checks succeeded (${list || 'no checks'})`);
  }
  const tally = `${ok} ok, ${count('FAILURE')} failed, ${count('WARNING')} warnings`;
  const fail = (note, details) => {
    failed++;
    failedNames.push(name);
    say('FAIL', name, note, details);
  };

  if (wholesale.has(name)) {
    if (clean) fail(`(${ok} checks) passes, but is listed as expected to fail: drop its --expect-fail`);
    else {
      expected++;
      say('xfail', name, `(${tally}) ${wholesale.get(name)}`);
    }
  } else if (perCheck.has(name)) {
    const listed = perCheck.get(name);
    // One verdict per check id: the most severe of its occurrences.
    const verdict = new Map();
    for (const c of checks) {
      const v = verdict.get(c.id);
      if (v === undefined || (SEVERITY[c.status] ?? 0) > (SEVERITY[v] ?? 0)) verdict.set(c.id, c.status);
    }
    const unlisted = bad.filter((c) => !listed.has(c.id));
    const stillBad = [...listed.keys()].filter((id) => BAD.has(verdict.get(id)));
    // A listed check that now succeeds is stale; one that is absent or skipped is stale only
    // when nothing listed still fails (a failed prerequisite may skip the later checks).
    const stale = [...listed.keys()].filter(
      (id) => verdict.get(id) === 'SUCCESS' || (stillBad.length === 0 && !BAD.has(verdict.get(id))),
    );
    if (r === undefined || unlisted.length > 0 || own === 0) {
      const why = problems.filter((_, i) => i >= bad.length || !listed.has(bad[i].id));
      fail(`(${tally})`, why);
    } else if (stale.length > 0) {
      fail(
        `(${tally}) listed checks pass now: drop --expect-fail ${stale.map((id) => `${opt.suite}/${opt.mode}/${name}:${id}`).join(', ')}`,
      );
    } else {
      expected++;
      say('xfail', name, `(${tally}) ${stillBad.map((id) => `${id}: ${listed.get(id)}`).join('; ')}`);
    }
  } else if (clean) {
    passed++;
    say('pass', name, `(${ok} checks)`);
  } else {
    fail(`(${tally})`, problems);
  }
}

if (!opt.partial) {
  for (const [key, scenario] of keys) {
    if (!opt.scenarios.includes(scenario)) {
      failed++;
      failedNames.push(key);
      lines.push(`  FAIL  --expect-fail ${key} names no scenario of this run: drop it`);
    }
  }
}

console.log(lines.join('\n'));
if (failedNames.length > 0) console.log(`  failed: ${failedNames.join(' ')} (details under ${opt.results})`);
console.log(
  `conformance ${opt.suite} ${opt.mode}: ${passed} passed, ${failed} failed${expected > 0 ? `, ${expected} expected failures` : ''}`,
);
process.exit(failed === 0 ? 0 : 1);
