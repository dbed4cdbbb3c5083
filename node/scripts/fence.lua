-- fence: raise the fence counter to at least a token granted elsewhere, so
-- that every later quorum sees it (the write-back of WithFencing).
--
-- KEYS[1]  fence counter
-- ARGV[1]  token
--
-- Reply: the counter after the call.
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local token = tonumber(ARGV[1])
if current < token then
  redis.call('SET', KEYS[1], ARGV[1])
  return token
end
return current
