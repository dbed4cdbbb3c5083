-- leader: publish an election's leader, unless a later term is published
-- already (see election.go). Terms are compared as decimal strings, not
-- Lua numbers, which are exact only below 2^53.
--
-- KEYS[1]  the leader record: a hash {term, owner, value}, no expiry
-- ARGV[1]  term: a decimal string without leading zeros
-- ARGV[2]  owner: the fingerprint of the leader's owner id
-- ARGV[3]  value
--
-- Reply: the record's term after the call, a decimal string.
-- Errors: WRONGTYPE when KEYS[1] is not a hash.
local current = redis.call('HGET', KEYS[1], 'term')
local term = ARGV[1]
if current == false or #current < #term or (#current == #term and current < term) then
  redis.call('HSET', KEYS[1], 'term', term, 'owner', ARGV[2], 'value', ARGV[3])
  return term
end
return current
