-- guard: a node that may have forgotten a lease does not vote until every
-- lease it may have granted has ended. This file is put in front of every
-- script whose answer counts as a vote (acquire.lua, acquire_queued.lua,
-- acquire_read.lua, renew.lua, fence_read.lua, permits.lua) and of
-- queue.lua. The rules and why they hold: docs/restart-guard.md;
-- model/guard.pml.
--
-- The marker key (one per node; on a Redis Cluster node one per slot)
-- holds "<ms> <why> [<run_id>]": the node time since which the node's data
-- is complete, the rule that set it and the process that did; "0" or
-- "0 <run_id>": complete since forever ("0 <run_id>": declared by
-- `redlock init` for that process).

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

-- fence_at reads a grant's fencing counter at key (a decimal string; absent
-- reads as "0"), or nil when key is nil (the call did not ask for it). It
-- runs before the script changes anything, so that a key of another type,
-- or a string that is not a counter, fails the call with nothing taken.
local function fence_at(key)
  if key then
    local counter = redis.call('GET', key) or '0'
    if not string.match(counter, '^%d+$') or #counter > 20 then
      error({err = 'WRONGTYPE redlock: the fencing counter holds a string that is not a counter'})
    end
    return counter
  end
  return nil
end

-- fenced appends a grant's fencing counter and the node's TIME (seconds,
-- microseconds) to reply when counter is not nil: the token's read, taken
-- with the vote (see fencing.go).
local function fenced(reply, counter)
  if counter then
    node_time = node_time or redis.call('TIME')
    local n = #reply
    reply[n + 1] = counter
    reply[n + 2] = node_time[1]
    reply[n + 3] = node_time[2]
  end
  return reply
end

-- facts: what the guard asks the node past its hot path, defined by the
-- first call that needs it (defining it costs every script otherwise).
local node_facts
local function facts()
  if node_facts then
    return node_facts
  end
  local f = {}
  local function int_field(info, name)
    return tonumber(string.match(info, '\n' .. name .. ':(%d+)'))
  end
  -- f.start: an upper bound of the process start in node ms (the node
  -- knows it to the second), and its run_id; nil when INFO is refused. An
  -- uptime below zero (the clock stepped back past the start) is now.
  function f.start()
    local server = redis.pcall('INFO', 'server')
    local uptime = type(server) == 'string' and tonumber(string.match(server, '\nuptime_in_seconds:(%-?%d+)'))
    if not uptime then
      return nil
    end
    local start = math.min((math.floor(node_now() / 1000) - math.max(uptime, 0) + 1) * 1000, node_now())
    return start, string.match(server, '\nrun_id:(%x+)')
  end
  -- f.persists: the node started with an append-only file and has not
  -- rewritten it since (AOF switched on at run time rewrites it at once);
  -- it is taken to be fsynced on every write (scripts cannot read the
  -- config).
  function f.persists()
    local info = redis.pcall('INFO', 'persistence')
    return type(info) == 'string' and int_field(info, 'aof_enabled') == 1 and int_field(info, 'aof_rewrites') == 0
      and int_field(info, 'aof_rewrite_in_progress') == 0 and int_field(info, 'aof_rewrite_scheduled') == 0
  end
  -- f.cluster: a Redis Cluster node, whose slot's marker may be missing
  -- because the slot's data lived elsewhere (moved, failed over).
  function f.cluster()
    local info = redis.pcall('INFO', 'cluster')
    return type(info) ~= 'string' or int_field(info, 'cluster_enabled') ~= 0
  end
  -- f.dropped: why keys may have gone since the start other than by
  -- expiry or a lock script ('flushed'; 'unknown' when INFO is refused).
  -- CONFIG RESETSTAT would hide the others (before Redis 7: any CONFIG).
  function f.dropped()
    local stats, others = redis.pcall('INFO', 'commandstats'), redis.pcall('INFO', 'stats')
    if type(stats) ~= 'string' or type(others) ~= 'string' then
      return 'unknown'
    end
    for _, name in ipairs({ 'flushall', 'flushdb', 'swapdb', 'debug', 'replicaof', 'slaveof', 'config|resetstat', 'config' }) do
      local calls = tonumber(string.match(stats, '\ncmdstat_' .. name .. ':calls=(%d+)'))
      if calls and calls > 0 then
        return 'flushed'
      end
    end
    if int_field(others, 'evicted_keys') ~= 0 then
      return 'flushed'
    end
    return nil
  end
  function f.quarantine(since, guard_for, why)
    local left = since + guard_for - node_now()
    return redis.error_reply(string.format('QUARANTINED %d %d %s %d', since, since + guard_for, why, left))
  end
  node_facts = f
  return f
end

-- up_longer: whether the process started more than guard_for ago, by
-- LASTSAVE (set at the start and at each save: never before the start),
-- and that bound of the start.
local function up_longer(guard_for)
  local saved = redis.pcall('LASTSAVE')
  if type(saved) == 'number' and (saved + 1) * 1000 + guard_for <= node_now() then
    return true, (saved + 1) * 1000
  end
  return false
end

-- lost_since: the marker a script makes when it finds none: the process
-- start when nothing dropped keys since ('new': anything forgotten was
-- granted before the start), else now; and the process's run_id when
-- known (nil when it started over guard_for ago).
local function lost_since(guard_for)
  local why = facts().dropped() or (facts().cluster() and 'cluster')
  local up, start = up_longer(guard_for)
  local run
  if not up then
    start, run = facts().start()
  end
  if why then
    return node_now(), why, run
  end
  if not start then
    return node_now(), 'unknown'
  end
  return math.min(start, node_now()), 'new', run
end

-- guard returns nil when the node may vote, or the error reply
-- "QUARANTINED <since> <until> <why> <left>" (node times in ms; left: ms
-- from now to until) when it may have
-- forgotten a lease ("0": the guard is off; the marker is kept).
local probing = false -- set by probe.lua: judge, but make no marker
local function guard(marker, guard_ms)
  local guard_for = tonumber(guard_ms)
  local value = redis.call('GET', marker)
  local since, tag, made_by -- made_by: the run_id of the process that made it
  if value == false then
    since, tag, made_by = lost_since(guard_for)
    if not probing then
      redis.call('SET', marker, string.format('%d %s %s', since, tag, made_by or ''))
    end
  else
    local first, second
    since, first, second = string.match(value, '^(%d+) ?(%w*) ?(%w*)$')
    since = tonumber(since)
    if since == nil then
      return redis.error_reply('ERR redlock: the node marker is not a time')
    end
    if #first == 40 then
      tag, made_by = '', first -- "0 <run_id>", by redlock init
    else
      tag, made_by = first, second
    end
  end
  if guard_for <= 0 then
    return nil
  end
  if since > 0 and node_now() < since + guard_for then
    return facts().quarantine(since, guard_for, tag ~= '' and tag or 'lost')
  end
  if value == false or up_longer(guard_for) then
    return nil
  end
  -- A marker another process made (read back from a snapshot) may
  -- predate grants the node forgot.
  local start, run = facts().start()
  if start and node_now() < start + guard_for and made_by ~= run and not facts().persists() then
    return facts().quarantine(start, guard_for, 'restarted')
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
