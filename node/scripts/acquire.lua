-- acquire: take the lock for one hold, or re-enter it for the same owner.
-- Re-sending the same hold id is harmless (the hold is a hash field).
--
-- KEYS[1]  lock hash: field "owner" = owner id, one field per hold id
-- KEYS[2]  fence counter (incremented only when ARGV[4] == "1")
-- ARGV[1]  owner id
-- ARGV[2]  hold id
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  "1" to increment the fence counter, "0" not to
--
-- Reply: {1, holds, fence}  granted; holds = this owner's hold count,
--                           fence = the counter after INCR, or 0
--        {0, pttl, holder}  another owner holds it; pttl = its remaining
--                           milliseconds (-1: no expiry set), holder = a
--                           fingerprint of the owner (not the id itself,
--                           which would let the reader release the lock)
-- Errors: WRONGTYPE when KEYS[1] is not a hash; "not a lock" when it is a
--         hash without an owner.
local holder = redis.call('HGET', KEYS[1], 'owner')
if holder ~= false and holder ~= ARGV[1] then
  return {0, redis.call('PTTL', KEYS[1]), string.sub(redis.sha1hex(holder), 1, 16)}
end
local ttl = tonumber(ARGV[3])
local holds = 1
if holder == false then
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return redis.error_reply('ERR redlock: key is a hash that is not a lock')
  end
  -- Free: the common case takes four commands.
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  redis.call('HSET', KEYS[1], ARGV[2], 1)
  -- Never shorten the key's life: an outer hold may have asked for longer.
  if redis.call('PTTL', KEYS[1]) < ttl then
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  holds = redis.call('HLEN', KEYS[1]) - 1
end
local fence = 0
if ARGV[4] == '1' then
  fence = redis.call('INCR', KEYS[2])
end
return {1, holds, fence}
