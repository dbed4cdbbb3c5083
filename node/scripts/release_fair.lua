-- release_fair: release.lua for a fair lock. The notice names the new head
-- of the queue (after evicting waiters whose heartbeat lapsed), so that
-- only it wakes.
--
-- KEYS[1]  lock hash (see acquire.lua)
-- KEYS[2]  released holds (see release.lua)
-- KEYS[3]  queue (see acquire_fair.lua)
-- KEYS[4]  alive (see acquire_fair.lua)
-- ARGV[1]  owner id
-- ARGV[2]  hold id
-- ARGV[3]  release channel; payload "<hold id> <head fingerprint>", the
--          fingerprint empty when no one waits
-- ARGV[4]  tombstone lifetime in milliseconds, or "0" (see release.lua)
-- ARGV[5]  optional: the owner's ticket, to put it back in the queue (the
--          undo of a failed attempt by a waiter that will try again: the
--          grant took it off this node's queue, and without its place here
--          the nodes would name different heads and split their votes)
-- ARGV[6]  with ARGV[5]: the queue timeout in milliseconds
--
-- Reply: as release.lua, except that deleting the lock replies
--        {2, head fingerprint} (empty when no one waits), so that the
--        releasing client can wake a head of its own without waiting for
--        the notice.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local life = tonumber(ARGV[4])
if life > 0 then
  -- As release.lua: whether or not the hold is here now.
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  redis.call('ZADD', KEYS[2], now + life, ARGV[2])
  if redis.call('PTTL', KEYS[2]) < life then
    redis.call('PEXPIRE', KEYS[2], life)
  end
end
if ARGV[5] then
  local timeout = tonumber(ARGV[6])
  redis.call('ZADD', KEYS[3], 'NX', ARGV[5], ARGV[1])
  redis.call('ZADD', KEYS[4], now + timeout, ARGV[1])
  redis.call('PEXPIRE', KEYS[3], 2 * timeout)
  redis.call('PEXPIRE', KEYS[4], 2 * timeout)
end
local fields = redis.call('HMGET', KEYS[1], 'owner', ARGV[2])
local holder, held = fields[1], fields[2]
if holder == false or holder ~= ARGV[1] or held == false then
  if holder ~= false and holder ~= ARGV[1] then
    return -1
  end
  return 0
end
if redis.call('HLEN', KEYS[1]) > 2 then
  redis.call('HDEL', KEYS[1], ARGV[2])
  return 1
end
redis.call('DEL', KEYS[1])
local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
if #dead > 0 then
  redis.call('ZREM', KEYS[4], unpack(dead))
  redis.call('ZREM', KEYS[3], unpack(dead))
end
local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
local who = ''
if head ~= nil then
  who = string.sub(redis.sha1hex(head), 1, 16)
end
redis.call('PUBLISH', ARGV[3], ARGV[2] .. ' ' .. who)
return {2, who}
