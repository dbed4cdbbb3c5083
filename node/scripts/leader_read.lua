-- leader_read: an election's published leader (see leader.lua), read-only.
--
-- KEYS[1]  the leader record
--
-- Reply: {term, owner, value}, each nil when there is no record.
-- Errors: WRONGTYPE when KEYS[1] is not a hash.
return redis.call('HMGET', KEYS[1], 'term', 'owner', 'value')
