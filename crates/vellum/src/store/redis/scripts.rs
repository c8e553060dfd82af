//! The Lua scripts behind the Redis stores: each operation is one round trip and atomic.
//!
//! Every key of a session shares the prefix `<prefix>:{<session>}` (a hash tag), so a
//! session's keys live in one slot. Keys are derived inside the scripts from that prefix,
//! which each script takes first and declares as its key (see `Call`): on a Redis Cluster
//! the script runs on the node owning that slot and touches no other (a key of another slot
//! fails with CROSSSLOT there, which the cluster tests would show).

use std::sync::LazyLock;

use redis::Script;

/// Opens a stream: ARGV = base, owner instance, requests (JSON), ttl ms, max streams,
/// whether the session record must exist ('1' when sessions are stored here too). Returns
/// the new stream id, or -1 when the session is gone.
///
/// Stream ids never go below the node's clock in milliseconds: after a failover to a
/// replica that had not yet received the latest `next`, a new stream still gets an id no
/// stream had before (a client resuming a lost stream is refused instead of being handed
/// another stream's events).
pub(in crate::store) static OPEN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local base, ttl = ARGV[1], ARGV[4]
if ARGV[6] == '1' and redis.call('EXISTS', base .. ':session') == 0 then return -1 end
local n = redis.call('INCR', base .. ':next')
local t = redis.call('TIME')
local floor = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if n < floor then
  n = floor
  redis.call('SET', base .. ':next', string.format('%.0f', n))
end
local meta = base .. ':m:' .. n
redis.call('HSET', meta, 'owner', ARGV[2], 'requests', ARGV[3], 'seq', 0)
redis.call('RPUSH', base .. ':streams', n)
while redis.call('LLEN', base .. ':streams') > tonumber(ARGV[5]) do
  local old = redis.call('LPOP', base .. ':streams')
  redis.call('DEL', base .. ':s:' .. old, base .. ':m:' .. old)
end
redis.call('PEXPIRE', base .. ':next', ttl)
redis.call('PEXPIRE', base .. ':streams', ttl)
redis.call('PEXPIRE', meta, ttl)
return n
"#,
    )
});

/// Appends: ARGV = base, stream, message, ttl ms, max events, whether the session record
/// must exist, the seq the writer expects ('0': any). Returns the seq, or -1 for an unknown
/// stream or session (the standalone stream `0` of a live session always exists).
///
/// With an expected seq: when the stream already has that event with this very message, it
/// is a retry of an append that landed (its answer lost), and nothing is added; when the
/// stream is behind it (a failover lost the writer's latest events), the seq jumps to it, so
/// no id is ever given out twice.
pub(in crate::store) static APPEND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local base, stream, ttl = ARGV[1], ARGV[2], ARGV[4]
local meta, s = base .. ':m:' .. stream, base .. ':s:' .. stream
if ARGV[6] == '1' and redis.call('EXISTS', base .. ':session') == 0 then return -1 end
if stream ~= '0' and redis.call('EXISTS', meta) == 0 then return -1 end
local want = tonumber(ARGV[7] or '0')
if want > 0 then
  local cur = tonumber(redis.call('HGET', meta, 'seq') or '0')
  if cur >= want then
    local e = redis.call('XRANGE', s, '0-' .. want, '0-' .. want)
    if #e == 1 and e[1][2][2] == ARGV[3] then return want end
  elseif cur < want - 1 then
    redis.call('HSET', meta, 'seq', want - 1)
  end
end
local seq = redis.call('HINCRBY', meta, 'seq', 1)
redis.call('XADD', s, 'MAXLEN', '~', ARGV[5], '0-' .. seq, 'm', ARGV[3])
redis.call('PEXPIRE', s, ttl)
redis.call('PEXPIRE', meta, ttl)
return seq
"#,
    )
});

/// Replays: ARGV = base, stream, after seq. Returns `{0, seq1, msg1, …}`, `{-1}` for an
/// unknown stream or an id past a finished stream's end, `{-2}` when events after `after`
/// were trimmed or lost (a hole in the sequence). An id past the end of a stream still being written is an empty replay:
/// after a failover lost the latest events, the writer goes on past them (see `APPEND`).
pub(in crate::store) static REPLAY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local base, stream = ARGV[1], ARGV[2]
local after = tonumber(ARGV[3])
local last = redis.call('HGET', base .. ':m:' .. stream, 'seq')
if not last then
  if stream == '0' and after == 0 then return {0} end
  return {-1}
end
last = tonumber(last)
if after > last then
  if redis.call('HEXISTS', base .. ':m:' .. stream, 'done') == 1 then return {-1} end
  return {0}
end
local entries = redis.call('XRANGE', base .. ':s:' .. stream, '0-' .. (after + 1), '+')
if after < last then
  if #entries == 0 then return {-2} end
  local first = tonumber(string.match(entries[1][1], '%-(%d+)$'))
  if first ~= after + 1 then return {-2} end
end
local out = {0}
local want = after + 1
for _, e in ipairs(entries) do
  local seq = tonumber(string.match(e[1], '%-(%d+)$'))
  -- A hole: events a failover lost (the writer went on past them). Never a partial replay.
  if seq ~= want then return {-2} end
  want = seq + 1
  out[#out + 1] = seq
  out[#out + 1] = e[2][2]
end
return out
"#,
    )
});

/// The state of a followed stream: ARGV = base, stream. Returns `{done, writer instance,
/// requests JSON}` (writer `''` when the stream is unknown, which counts as alive: its
/// heartbeat is in another slot, so the caller checks it with a command of its own).
pub(in crate::store) static STATUS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local meta = ARGV[1] .. ':m:' .. ARGV[2]
local v = redis.call('HMGET', meta, 'done', 'owner', 'requests')
if not v[2] then return {1, '', '[]'} end
return {v[1] and 1 or 0, v[2], v[3] or '[]'}
"#,
    )
});

/// Drops a session's events (and, with ARGV[2] = '1', its record): ARGV = base, all.
pub(in crate::store) static DROP: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local base = ARGV[1]
local ids = redis.call('LRANGE', base .. ':streams', 0, -1)
for _, id in ipairs(ids) do
  redis.call('DEL', base .. ':s:' .. id, base .. ':m:' .. id)
end
redis.call('DEL', base .. ':s:0', base .. ':m:0', base .. ':streams', base .. ':next')
if ARGV[2] == '1' then
  return redis.call('DEL', base .. ':session')
end
return 1
"#,
    )
});

/// Renews a session's keys: ARGV = base, ttl ms. Returns 0 when the session is gone.
pub(in crate::store) static TOUCH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local base, ttl = ARGV[1], ARGV[2]
if redis.call('PEXPIRE', base .. ':session', ttl) == 0 then return 0 end
local ids = redis.call('LRANGE', base .. ':streams', 0, -1)
for _, id in ipairs(ids) do
  redis.call('PEXPIRE', base .. ':s:' .. id, ttl)
  redis.call('PEXPIRE', base .. ':m:' .. id, ttl)
end
for _, k in ipairs({':s:0', ':m:0', ':streams', ':next'}) do
  redis.call('PEXPIRE', base .. k, ttl)
end
return 1
"#,
    )
});

/// Marks a stream complete, if it still exists: ARGV = base, stream.
pub(in crate::store) static CLOSE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local meta = ARGV[1] .. ':m:' .. ARGV[2]
if redis.call('EXISTS', meta) == 0 then return 0 end
redis.call('HSET', meta, 'done', 1)
return 1
"#,
    )
});
