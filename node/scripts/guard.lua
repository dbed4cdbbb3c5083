-- guard: a node that may have forgotten a lease does not vote until every
-- lease it may have granted has ended. This file is put in front of every
-- script whose answer counts as a vote (acquire.lua, acquire_queued.lua,
-- acquire_read.lua, renew.lua, fence_read.lua, permits.lua) and of
-- queue.lua. The rules and why they hold: docs/restart-guard.md;
-- model/guard.pml.
--
-- The marker key (one per node; on a Redis Cluster node one per slot)
-- holds "<ms> <why>": the node time since which the node's data is
-- complete, and the rule that set it; "0" or "0 <run_id>": complete since
-- forever ("0 <run_id>": declared by `redlock init` for that process).

-- node_time is the node's TIME, read once per call and only by a call that
-- needs it; node_now the same in milliseconds.
local node_time
local node_ms
local function node_now()
  if not node_ms then
    node_time = node_time or redis.call('TIME')
    node_ms = tonumber(node_time[1]) * 1000 + math.floor(tonumber(node_time[2]) / 1000)
  end
  return node_ms
end

-- timed appends the node's TIME (seconds, microseconds) to a voting
-- script's reply, a table, for the client's clock check (see
-- node/clock.go). Error replies do not go through it.
local function timed(reply)
  node_time = node_time or redis.call('TIME')
  local n = #reply
  reply[n + 1] = node_time[1]
  reply[n + 2] = node_time[2]
  return reply
end

-- int_field reads "name:<digits>" from an INFO reply.
local function int_field(info, name)
  return tonumber(string.match(info, '\n' .. name .. ':(%d+)'))
end

-- process_start: an upper bound of the start of the node's process, in
-- node ms, and its run_id (nil when LASTSAVE alone showed the start to be
-- over guard_for ago); nil when the node cannot tell (INFO refused).
-- LASTSAVE is set at start and at each save, so it is never before the
-- start; it spares the INFO call on a node up and not saved lately.
local start_ms, run_id
local function process_start(guard_for)
  if start_ms then
    return start_ms, run_id
  end
  local saved = redis.pcall('LASTSAVE')
  if type(saved) == 'number' and (saved + 1) * 1000 + guard_for <= node_now() then
    start_ms = (saved + 1) * 1000
    return start_ms, nil
  end
  local server = redis.pcall('INFO', 'server')
  local uptime = type(server) == 'string' and int_field(server, 'uptime_in_seconds')
  if not uptime then
    return nil
  end
  start_ms = math.min((math.floor(node_now() / 1000) - uptime + 1) * 1000, node_now())
  run_id = string.match(server, '\nrun_id:(%x+)')
  return start_ms, run_id
end

-- persists_every_write: the node writes an append-only file, which is
-- taken to be fsynced on every write (appendfsync always: scripts cannot
-- read the config; docs/restart-guard.md).
local function persists_every_write()
  local info = redis.pcall('INFO', 'persistence')
  return type(info) == 'string' and int_field(info, 'aof_enabled') == 1
end

-- Commands that drop keys other than by expiry or a lock script, or
-- that hide such drops (CONFIG RESETSTAT; before Redis 7 any CONFIG).
local dropping = { 'flushall', 'flushdb', 'swapdb', 'debug', 'replicaof', 'slaveof',
  'config|resetstat', 'config' }

-- dropped: why the node may have dropped keys since its process started
-- ('flushed', or 'unknown' when INFO is refused); nil when it did not.
local function dropped()
  local stats = redis.pcall('INFO', 'commandstats')
  local evictions = redis.pcall('INFO', 'stats')
  if type(stats) ~= 'string' or type(evictions) ~= 'string' then
    return 'unknown'
  end
  for _, name in ipairs(dropping) do
    local calls = tonumber(string.match(stats, '\ncmdstat_' .. name .. ':calls=(%d+)'))
    if calls and calls > 0 then
      return 'flushed'
    end
  end
  local evicted = int_field(evictions, 'evicted_keys')
  if evicted ~= 0 then
    return 'flushed'
  end
  return nil
end

-- lost_since: the marker a script makes when it finds none: the process
-- start when nothing dropped keys since ('new': anything forgotten was
-- granted before the start), else now.
local function lost_since(guard_for)
  local why = dropped()
  if why then
    return node_now(), why
  end
  local start = process_start(guard_for)
  if not start then
    return node_now(), 'unknown'
  end
  return math.min(start, node_now()), 'new'
end

local function quarantine(since, guard_for, why)
  local left = since + guard_for - node_now()
  return redis.error_reply(string.format('QUARANTINED %d %d %s %d', since, since + guard_for, why, left))
end

-- guard returns nil when the node may vote, or the error reply
-- "QUARANTINED <since> <until> <why> <left>" (node times in ms; left: ms
-- from now to until) when it may have
-- forgotten a lease ("0": the guard is off; the marker is kept).
local probing = false -- set by probe.lua: judge, but make no marker
local function guard(marker, guard_ms)
  local guard_for = tonumber(guard_ms)
  local value = redis.call('GET', marker)
  local since, tag
  if value == false then
    since, tag = lost_since(guard_for)
    if not probing then
      redis.call('SET', marker, string.format('%d %s', since, tag))
    end
  else
    since, tag = string.match(value, '^(%d+) ?(%w*)$')
    since = tonumber(since)
    if since == nil then
      return redis.error_reply('ERR redlock: the node marker is not a time')
    end
  end
  if guard_for <= 0 then
    return nil
  end
  if since > 0 and node_now() < since + guard_for then
    return quarantine(since, guard_for, tag ~= '' and tag or 'lost')
  end
  if value == false then
    return nil
  end
  -- A marker read back from a snapshot may predate grants the node forgot.
  local start, run = process_start(guard_for)
  if start and node_now() < start + guard_for and tag ~= run and not persists_every_write() then
    return quarantine(start, guard_for, 'restarted')
  end
  return nil
end

-- A lock handed to a waiter (see queue.lua) names the hold of the attempt
-- that queued it; the waiter may have taken its lease from the notices,
-- with that hold. Attempt holds are "<call id>.<n>", n counting a call's
-- attempts. handed_rule says what a request of the same owner carrying
-- hold does with a key handed naming named:
--   'claim'  the request is that hold's, or a later attempt of the same
--            call (which then took no lease from the notices): the handed
--            key becomes this hold's alone
--   'keep'   another call of the same owner (a re-entry into a lease
--            taken from the notices): the named hold is kept as a hold,
--            beside this one
--   'stale'  an earlier attempt of the same call, arriving late: refused
-- A handing by an older client names '1': any request claims it.
local function attempt_of(hold)
  local call, n = string.match(hold, '^(.+)%.(%d+)$')
  return call, tonumber(n)
end

local function handed_rule(named, hold)
  if named == '1' or named == hold then
    return 'claim'
  end
  local call, n = attempt_of(named)
  local mine, m = attempt_of(hold)
  if call == nil or call ~= mine then
    return 'keep'
  end
  if m > n then
    return 'claim'
  end
  return 'stale'
end
