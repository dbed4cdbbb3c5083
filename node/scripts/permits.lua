-- permits: the permit count of a semaphore, stored on first use, so that
-- two Clients that disagree on it find out (see semaphore.go).
--
-- KEYS[1]  the semaphore's permit count (a string, no expiry)
-- KEYS[2]  the node's marker (see guard.lua)
-- ARGV[1]  the caller's count: a decimal string without leading zeros
-- ARGV[2]  restart guard in milliseconds (see guard.lua; "0": off)
--
-- Reply: the stored count, a decimal string (ARGV[1] when it was absent).
-- Errors: WRONGTYPE when KEYS[1] is not a string; QUARANTINED (see
--         guard.lua): a node that lost its data lately may have lost the
--         count too.
local refused = guard(KEYS[2], ARGV[2])
if refused then
  return refused
end
local stored = redis.call('GET', KEYS[1])
if stored == false then
  redis.call('SET', KEYS[1], ARGV[1])
  return ARGV[1]
end
return stored
