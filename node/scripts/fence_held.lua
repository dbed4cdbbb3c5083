-- fence_held: the write-back of a grant's fencing token (see fencing.go):
-- raise the fencing counter to at least the token, never lower it, and
-- only while the hold still holds the lock on this node (a hold field, or
-- the lock handed to the owner naming the hold: a lease adopted from the
-- handoff notices, see queue.lua). That check is what makes reading the
-- counter at vote time safe: a write-back accepted here came before this
-- hold left the lock here, so before any other owner's vote here, which
-- reads the raised counter (without it tokens go backwards:
-- model/fencing.pml, NOOWNER and UNCHECKEDREAD). Compared as decimal
-- strings, as in fence.lua.
--
-- KEYS[1]  fence counter
-- KEYS[2]  lock hash (see acquire.lua)
-- ARGV[1]  token: a decimal string without leading zeros
-- ARGV[2]  hold id
--
-- Reply: {1, counter}  accepted; counter = the counter after the call, a
--                      decimal string (the token, or a higher one)
--        {0}           the hold does not hold the lock here (released,
--                      expired, handed on, or never granted here, or the
--                      node lost it): nothing changed
-- Errors: WRONGTYPE when KEYS[1] is not a string or KEYS[2] not a hash.
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 and redis.call('HGET', KEYS[2], 'handed') ~= ARGV[2] then
  redis.call('GET', KEYS[1]) -- a counter of another type still fails the call
  return {0}
end
local current = redis.call('GET', KEYS[1])
local token = ARGV[1]
if current == false or #current < #token or (#current == #token and current < token) then
  redis.call('SET', KEYS[1], token)
  return {1, token}
end
return {1, current}
