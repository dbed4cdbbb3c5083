-- guard: a node that lost its data does not grant for a while. This file
-- is put in front of every script whose answer counts as a vote
-- (acquire.lua, acquire_queued.lua, renew.lua, fence_read.lua) and of
-- queue.lua.
--
-- The marker key (one per node; on a Redis Cluster node one per slot)
-- holds the node time in milliseconds since which the node's data is
-- complete. A script that finds it missing creates it with the node's
-- time now: the node lost its data (a restart without persistence,
-- FLUSHALL, a failover to an empty replica) or is new, and a node cannot
-- tell which. A lease granted before the loss may still be valid for up
-- to the longest TTL in use, and the node no longer knows of it, so it
-- refuses to vote until guard ms have passed since the marker was made.
-- "0" in the marker: complete since forever (set by whoever knows the
-- node never held a lock). A node restarted with its data keeps its
-- marker and is not held back.

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

-- guard returns nil when the node may vote, or the error reply
-- "QUARANTINED <since> <until>" (node times in ms) when it lost its data
-- less than guard ms ago ("0": the guard is off, the marker is kept).
local function guard(marker, guard_ms)
  local since = redis.call('GET', marker)
  if since == false then
    since = node_now()
    redis.call('SET', marker, since)
  else
    since = tonumber(since)
    if since == nil then
      return redis.error_reply('ERR redlock: the node marker is not a time')
    end
  end
  local guard_for = tonumber(guard_ms)
  if guard_for > 0 and since > 0 and node_now() < since + guard_for then
    return redis.error_reply(string.format('QUARANTINED %d %d', since, since + guard_for))
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
