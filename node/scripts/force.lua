-- force: remove every hold of a lock, whoever's they are (an operator's
-- ForceUnlock; after queue.lua). The hold ids are recorded as released, so
-- that their owner's renewals (and any late acquire of them) are refused
-- and its lease is lost; the lock goes to the first live waiter, as a
-- release would give it. A lock handed to a waiter naming a hold counts
-- that hold (the waiter may hold the lease from the notices); one handed
-- by an older client (no hold named) is left to that waiter.
--
-- A handing ends, but the key is not freed before it would have lapsed:
-- the waiter may still take its lease from notices on their way (queue.lua),
-- valid until then, and nothing can reach it to say the handing ended. So
-- the key stays, held by the forced owner (ARGV[5], which no client's
-- owner can be), with its expiry, and goes to no one; then it is free.
--
-- KEYS[1]  lock, KEYS[2] released holds, KEYS[3] queue, KEYS[4] alive,
--          KEYS[5] wake (see queue.lua and release.lua)
-- KEYS[6]  fence counter (see fence.lua)
-- KEYS[7]  the node's marker, ARGV[4] restart guard in ms (see guard.lua):
--          a node the guard keeps from voting hands the lock to no one
--          (see hand in queue.lua); the holds are removed all the same
-- ARGV[1]  how long to record the released holds, in ms: at least the
--          lock's remaining time here is used
-- ARGV[2]  handoff window in milliseconds (see hand in queue.lua)
-- ARGV[3]  the notice's id
-- ARGV[5]  the forced owner (node.ForcedOwner)
--
-- Reply:  {removed, who, fence}
--   removed  how many holds were removed (0: free, or only handed)
--   who      fingerprint of the waiter the lock went to ('' none)
--   fence    the fencing counter, a decimal string ('0' when absent)
-- Errors: WRONGTYPE; "not a lock" (see inspect.lua).
local q = {lock = KEYS[1], queue = KEYS[3], alive = KEYS[4], wake = KEYS[5], marker = KEYS[7], guard_ms = ARGV[4]}
local fence = redis.call('GET', KEYS[6]) or '0'
local fields = redis.call('HGETALL', q.lock)
local owner, holds, handing = nil, {}, false
for i = 1, #fields, 2 do
  local field = fields[i]
  if field == 'owner' then
    owner = fields[i + 1]
  elseif field ~= 'handed' then
    holds[#holds + 1] = field
  elseif fields[i + 1] ~= '1' then
    -- Handed naming a hold: the waiter may have taken its lease from the
    -- notices, with that hold. Removed as one.
    holds[#holds + 1] = fields[i + 1]
    handing = true
  end
end
if #fields > 0 and owner == nil then
  return redis.error_reply('ERR redlock: key is a hash that is not a lock')
end
if #holds == 0 then
  return {0, '', fence}
end
local life = math.max(tonumber(ARGV[1]), redis.call('PTTL', q.lock), 1)
local now = node_now()
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
for _, hold in ipairs(holds) do
  redis.call('ZADD', KEYS[2], now + life, hold)
end
lengthen(KEYS[2], life)
local left = redis.call('PTTL', q.lock)
redis.call('DEL', q.lock)
if handing then
  redis.call('HSET', q.lock, 'owner', ARGV[5])
  redis.call('PEXPIRE', q.lock, left > 0 and left or life)
  return {#holds, '', fence}
end
return {#holds, hand(q, tonumber(ARGV[2]), ARGV[3], nil), fence}
