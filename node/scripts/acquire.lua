-- acquire: take the lock for one hold, or re-enter it for the same owner.
-- Re-sending the same hold id is harmless (the hold is a hash field), and a
-- hold that was released before its acquire arrived (the request was
-- delayed on its way, or re-sent by a client library) is refused.
--
-- KEYS[1]  lock hash: field "owner" = owner id, one field per hold id (a
--          lock handed to a waiter has the field "handed": see queue.lua)
-- KEYS[2]  released holds: ZSET hold id -> expiry (see release.lua)
-- ARGV[1]  owner id
-- ARGV[2]  hold id
-- KEYS[3]  the node's marker (see guard.lua)
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  restart guard in milliseconds (see guard.lua; "0": off)
-- KEYS[4]  optional: the fencing counter; given, a grant answers it too
-- ARGV[5]  the request's deadline, node time in ms ("0": none; see
--          too_late in call.lua)
--
-- Reply (then the node's seconds and microseconds: timed in guard.lua):
--        {1, holds}          granted; holds = this owner's hold count
--        {1, holds, counter, seconds, microseconds}
--                            granted, KEYS[4] given: the fencing counter
--                            (decimal string, absent: "0") and the node's
--                            TIME, read with the vote (see fencing.go)
--        {0, pttl, holder}   another owner holds it; pttl = its remaining
--                            milliseconds (-1: no expiry set), holder = a
--                            fingerprint of the owner (not the id itself,
--                            which would let the reader release the lock)
--        {2}                 this hold was released already: not granted
--        {3}                 the request arrived after its deadline:
--                            nothing changed
-- Errors: WRONGTYPE when KEYS[1] is not a hash or KEYS[4] not a string; "not a lock" when it is a
--         hash without an owner; QUARANTINED (see guard.lua).
local refused = guard(KEYS[3], ARGV[4])
if refused then
  return refused
end
if too_late(ARGV[5]) then
  return timed({3})
end
local counter = fence_at(KEYS[4])
local holder = redis.call('HGET', KEYS[1], 'owner')
if holder ~= false and holder ~= ARGV[1] then
  return timed({0, redis.call('PTTL', KEYS[1]), string.sub(redis.sha1hex(holder), 1, 16)})
end
if redis.call('ZSCORE', KEYS[2], ARGV[2]) then
  return timed({2})
end
local ttl = tonumber(ARGV[3])
local holds = 1
local rule
if holder ~= false then
  -- Handed to this owner (see handed_rule in guard.lua)?
  local named = redis.call('HGET', KEYS[1], 'handed')
  if named then
    rule = handed_rule(named, ARGV[2])
    if rule == 'stale' then
      return timed({0, redis.call('PTTL', KEYS[1]), string.sub(redis.sha1hex(holder), 1, 16)})
    elseif rule == 'keep' then
      redis.call('HDEL', KEYS[1], 'handed')
      redis.call('HSET', KEYS[1], named, 1)
    end
  end
end
if holder == false then
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return redis.error_reply('ERR redlock: key is a hash that is not a lock')
  end
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ttl)
elseif rule == 'claim' then
  -- Handed to this owner: claim it for this hold.
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  redis.call('HSET', KEYS[1], ARGV[2], 1)
  -- Never shorten the key's life: an outer hold may have asked for longer.
  if redis.call('PTTL', KEYS[1]) < ttl then
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  holds = redis.call('HLEN', KEYS[1]) - 1
end
return timed(fenced({1, holds}, counter))
