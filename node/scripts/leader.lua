-- leader: publish an election's leader, unless a later term is published
-- already (see election.go). Terms are compared as decimal strings, not
-- Lua numbers, which are exact only below 2^53. The record lives while its
-- leader publishes it: each call that publishes or finds its own term
-- keeps it for at least ARGV[4] ms from now (never shortens its life), so
-- it expires once its leader stopped (resigned, lost or crashed) for that
-- long. Leader reads name a record only while its owner holds the lock.
--
-- KEYS[1]  the leader record: a hash {term, owner, value}
-- ARGV[1]  term: a decimal string without leading zeros
-- ARGV[2]  owner: the fingerprint of the leader's owner id
-- ARGV[3]  value
-- ARGV[4]  how long to keep the record at least, in milliseconds
--
-- Reply: the record's term after the call, a decimal string.
-- Errors: WRONGTYPE when KEYS[1] is not a hash.
local current = redis.call('HGET', KEYS[1], 'term')
local term = ARGV[1]
local life = tonumber(ARGV[4])
if current == false or #current < #term or (#current == #term and current < term) then
  redis.call('HSET', KEYS[1], 'term', term, 'owner', ARGV[2], 'value', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], life)
  return term
end
if current == term and redis.call('PTTL', KEYS[1]) < life then
  redis.call('PEXPIRE', KEYS[1], life)
end
return current
