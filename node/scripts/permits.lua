-- permits: the permit count of a semaphore, stored on first use, so that
-- two Clients that disagree on it find out (see semaphore.go). The count
-- lives while it is used: every call keeps it for at least ARGV[3] ms from
-- now (never shortens its life), and once no Client has called for that
-- long it expires, so a name that is no longer used leaves nothing behind.
--
-- KEYS[1]  the semaphore's permit count (a string)
-- KEYS[2]  the node's marker (see guard.lua)
-- ARGV[1]  the caller's count: a decimal string without leading zeros
-- ARGV[2]  restart guard in milliseconds (see guard.lua; "0": off)
-- ARGV[3]  how long to keep the count at least, in milliseconds: the
--          caller's permits are valid no longer than that after its call
--          began (see Semaphore.check)
--
-- Reply: the stored count, a decimal string (ARGV[1] when it was absent).
--        Another count is left as it is, and its life too.
-- Errors: WRONGTYPE when KEYS[1] is not a string; QUARANTINED (see
--         guard.lua): a node that lost its data lately may have lost the
--         count too.
local refused = guard(KEYS[2], ARGV[2])
if refused then
  return refused
end
local life = tonumber(ARGV[3])
local stored = redis.call('GET', KEYS[1])
if stored == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', life)
  return ARGV[1]
end
-- A count stored without expiry (by an older version) gets one here.
if stored == ARGV[1] and redis.call('PTTL', KEYS[1]) < life then
  redis.call('PEXPIRE', KEYS[1], life)
end
return stored
