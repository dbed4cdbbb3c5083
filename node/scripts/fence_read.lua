-- fence_read: the fencing counter and the node's clock, read in a round
-- that starts after the lock was granted on a quorum (see fencing.go).
--
-- KEYS[1]  fence counter (a decimal string; absent reads as "0")
--
-- Reply: {counter, seconds, microseconds}, each a decimal string; the last
--        two are the node's TIME.
-- Errors: WRONGTYPE when KEYS[1] is not a string.
local counter = redis.call('GET', KEYS[1]) or '0'
local time = redis.call('TIME')
return {counter, time[1], time[2]}
