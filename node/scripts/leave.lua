-- leave: a fair-mode waiter gives up its place. When the lock is free, the
-- new head is told (as in release_fair.lua), so it does not wait for a
-- release that already happened.
--
-- KEYS[1]  lock hash
-- KEYS[2]  queue (see acquire_fair.lua)
-- KEYS[3]  alive (see acquire_fair.lua)
-- ARGV[1]  owner id
-- ARGV[2]  notice id (unique)
-- ARGV[3]  release channel
--
-- Reply: 1 when the waiter was queued here, 0 when not.
local removed = redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if removed == 1 and redis.call('EXISTS', KEYS[1]) == 0 then
  local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if head ~= nil then
    redis.call('PUBLISH', ARGV[3], ARGV[2] .. ' ' .. string.sub(redis.sha1hex(head), 1, 16))
  end
end
return removed
