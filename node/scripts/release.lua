-- release: drop one hold; the last hold deletes the lock and publishes a
-- release notice. Releasing a hold twice is harmless.
--
-- KEYS[1]  lock hash (see acquire.lua)
-- KEYS[2]  released holds: ZSET hold id -> expiry (node time, ms)
-- ARGV[1]  owner id
-- ARGV[2]  hold id
-- ARGV[3]  release channel; the notice's payload is the hold id
-- ARGV[4]  tombstone lifetime in milliseconds, or "0": when an acquire of
--          this hold may still arrive (a call's fate was unknown to the
--          client), the hold id is recorded for that long so that the late
--          acquire is refused (acquire.lua, renew.lua)
--
-- Reply:  2  hold removed, it was the last: lock deleted, notice published
--         1  hold removed, other holds of this owner remain
--         0  this hold was not there (expired, or never granted): no change
--        -1  another owner holds the lock: no change
local life = tonumber(ARGV[4])
if life > 0 then
  -- Whether or not the hold is here now: another copy of its acquire may
  -- still arrive (one sent earlier and delayed, or re-sent).
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  redis.call('ZADD', KEYS[2], now + life, ARGV[2])
  if redis.call('PTTL', KEYS[2]) < life then
    redis.call('PEXPIRE', KEYS[2], life)
  end
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
-- The owner field and this hold are all there is: the lock goes.
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[3], ARGV[2])
return 2
