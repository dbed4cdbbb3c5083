-- inspect: one node's view of a lock, read-only (after queue.lua, for
-- fingerprint). It changes nothing and does not vote.
--
-- KEYS[1]  lock (see queue.lua)
-- KEYS[2]  queue (see queue.lua)
-- KEYS[3]  fence counter (see fence.lua)
--
-- Reply:  {holder, holds, handed, pttl, waiting, fence}
--   holder   fingerprint of the owner holding or handed the lock; '' when
--            the lock is free here
--   holds    that owner's hold count (0 when free, or handed and not
--            claimed yet)
--   handed   1 when the lock was handed to a waiter that has not claimed
--            it, else 0
--   pttl     the lock's remaining milliseconds (-2: free, -1: no expiry)
--   waiting  how many waiters are queued
--   fence    the fencing counter, a decimal string ('0' when absent)
-- Errors: WRONGTYPE when a key holds another type; "not a lock" when the
--         lock key is a hash without an owner.
local fields = redis.call('HGETALL', KEYS[1])
local owner, holds, handed = nil, 0, 0
for i = 1, #fields, 2 do
  local field = fields[i]
  if field == 'owner' then
    owner = fields[i + 1]
  elseif field == 'handed' then
    handed = 1
  else
    holds = holds + 1
  end
end
if #fields > 0 and owner == nil then
  return redis.error_reply('ERR redlock: key is a hash that is not a lock')
end
local holder = ''
if owner then
  holder = fingerprint(owner)
end
return {holder, holds, handed, redis.call('PTTL', KEYS[1]), redis.call('ZCARD', KEYS[2]),
  redis.call('GET', KEYS[3]) or '0'}
