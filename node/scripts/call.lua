-- call: one call's state, and what a voting script adds to its reply. Put
-- first in front of every script of the library (see node/functions.go).
-- A variable declared here outside a function holds one call's state:
-- new_call sets it back (node's TestLibrary_newCallResetsEveryVariable).

-- node_time is the node's TIME, read once per call and only by a call that
-- needs it; node_ms the same in milliseconds (node_now).
local node_time
local node_ms
-- node_longest: the longest guard the marker records, once the guard read
-- it; timed() answers it, and the Client lends it to every node of the set.
local node_longest
-- node_facts: what the guard asks the node past its hot path (facts.lua).
local node_facts
-- node_replication: INFO replication (text, nil when refused) and the
-- replid of a primary (replid), read once per call: a call on a Cluster
-- shard may judge many slots' markers.
local node_replication
local probing = false -- set by probe.lua: judge, but write no marker

-- new_call: an EVAL script starts afresh, but a function of the library
-- shares these with the calls before it.
local function new_call()
  node_time, node_ms, node_longest, node_facts, node_replication, probing = nil, nil, nil, nil, nil, false
end

local function node_now()
  if not node_ms then
    node_time = node_time or redis.call('TIME')
    node_ms = tonumber(node_time[1]) * 1000 + math.floor(tonumber(node_time[2]) / 1000)
  end
  return node_ms
end

-- too_late: a request's deadline (node time in ms; "0": none) has passed.
-- The client gave up on its answer by then, and a release may have come
-- before it: a late request must not take or re-create a hold (the
-- tombstone of a release outlives no deadline: see queue.go).
local function too_late(deadline)
  local at = tonumber(deadline)
  return at ~= nil and at > 0 and node_now() > at
end

-- timed appends the node's TIME (seconds, microseconds) to a voting
-- script's reply, for the client's clock check (node/clock.go), and the
-- longest guard (ms, 0 unknown). Error replies do not go through it.
local function timed(reply)
  node_time = node_time or redis.call('TIME')
  local n = #reply
  reply[n + 1] = node_time[1]
  reply[n + 2] = node_time[2]
  reply[n + 3] = node_longest or 0
  return reply
end

-- fence_at reads a grant's fencing counter at key (absent reads as "0"), or
-- nil when key is nil. It runs before the script changes anything, so that
-- a key that is not a counter fails the call with nothing taken.
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

-- fenced appends a grant's fencing counter and the node's TIME to reply
-- when counter is not nil: the token's read, taken with the vote
-- (fencing.go).
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
