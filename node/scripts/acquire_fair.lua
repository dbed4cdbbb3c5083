-- acquire_fair: take the lock only when it is free and this owner heads
-- the queue (or the queue is empty); otherwise queue up and refresh this
-- waiter's heartbeat. Waiters whose heartbeat deadline passed are evicted
-- first. Every node orders the queue by the ticket the client chose once,
-- so all nodes agree on the head.
--
-- KEYS[1]  lock hash (see acquire.lua)
-- KEYS[2]  released holds (see acquire.lua)
-- KEYS[3]  queue: ZSET owner -> ticket
-- KEYS[4]  alive: ZSET owner -> heartbeat deadline (node time, ms)
-- ARGV[1]  owner id
-- ARGV[2]  hold id
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  ticket (this waiter's score in the queue)
-- ARGV[5]  queue timeout in milliseconds
-- ARGV[6]  release channel: when the lock is free but another waiter heads
--          the queue, that waiter is told (payload "<hold id> <its
--          fingerprint>"): it may have been passed over by a release notice
--          that named a waiter queued after it, whose ticket was later but
--          whose enqueue reached the nodes first
--
-- Reply: {1, holds}         granted (as acquire.lua)
--        {2}                this hold was released already (as acquire.lua)
--        {0, pttl, who}     refused: another owner holds it (pttl >= -1,
--                           who = its fingerprint), or it is free but
--                           another waiter heads the queue (pttl = -2,
--                           who = that waiter's fingerprint)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local timeout = tonumber(ARGV[5])
local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
if #dead > 0 then
  redis.call('ZREM', KEYS[4], unpack(dead))
  redis.call('ZREM', KEYS[3], unpack(dead))
end

local function fingerprint(owner)
  return string.sub(redis.sha1hex(owner), 1, 16)
end

local function enqueue()
  redis.call('ZADD', KEYS[3], 'NX', ARGV[4], ARGV[1])
  redis.call('ZADD', KEYS[4], now + timeout, ARGV[1])
  -- The queue outlives no waiter by much: crashed waiters leave no keys.
  redis.call('PEXPIRE', KEYS[3], 2 * timeout)
  redis.call('PEXPIRE', KEYS[4], 2 * timeout)
end

if redis.call('ZSCORE', KEYS[2], ARGV[2]) then
  return {2}
end
local holder = redis.call('HGET', KEYS[1], 'owner')
if holder ~= false and holder ~= ARGV[1] then
  enqueue()
  return {0, redis.call('PTTL', KEYS[1]), fingerprint(holder)}
end
local ttl = tonumber(ARGV[3])
local holds = 1
if holder == false then
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return redis.error_reply('ERR redlock: key is a hash that is not a lock')
  end
  local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if head ~= nil and head ~= ARGV[1] then
    enqueue()
    redis.call('PUBLISH', ARGV[6], ARGV[2] .. ' ' .. fingerprint(head))
    return {0, -2, fingerprint(head)}
  end
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  redis.call('HSET', KEYS[1], ARGV[2], 1)
  if redis.call('PTTL', KEYS[1]) < ttl then
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  holds = redis.call('HLEN', KEYS[1]) - 1
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return {1, holds}
