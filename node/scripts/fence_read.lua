-- fence_read: the fencing counter and the node's clock, read in a round
-- that starts after the lock was granted on a quorum (see fencing.go).
--
-- KEYS[1]  fence counter (a decimal string; absent reads as "0")
-- KEYS[2]  the node's marker, ARGV[1] restart guard in ms (see guard.lua)
--
-- Reply: {counter, seconds, microseconds}, each a decimal string; the last
--        two are the node's TIME (and timed in guard.lua appends it again).
-- Errors: WRONGTYPE when KEYS[1] is not a string; QUARANTINED (see
--         guard.lua).
local refused = guard(KEYS[2], ARGV[1])
if refused then
  return refused
end
local counter = redis.call('GET', KEYS[1]) or '0'
node_time = node_time or redis.call('TIME')
return timed({counter, node_time[1], node_time[2]})
