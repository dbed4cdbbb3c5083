-- fence: raise the fencing counter to at least a token, never lower it
-- (the write-back of a grant's token; see fencing.go). Compared as decimal
-- strings, not Lua numbers, which are exact only below 2^53. The counter
-- never expires, on purpose: without it a token would rest on the nodes'
-- wall clocks alone (see fencing.go), and could go backwards after any
-- quiet spell; it is the one key the library keeps for good (but the
-- node's marker).
--
-- KEYS[1]  fence counter
-- ARGV[1]  token: a decimal string without leading zeros
--
-- Reply: the counter after the call, a decimal string.
-- Errors: WRONGTYPE when KEYS[1] is not a string.
local current = redis.call('GET', KEYS[1])
local token = ARGV[1]
if current == false or #current < #token or (#current == #token and current < token) then
  redis.call('SET', KEYS[1], token)
  return token
end
return current
