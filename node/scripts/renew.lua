-- renew: extend several holds at once (one call per node per batch). A hold
-- missing on this node (restarted empty) is re-created when the lock is free
-- here or already this owner's, so renewal also repairs; but not a hold that
-- was released here already (a renewal that arrives late): a release whose
-- renewals' fate was unknown leaves a tombstone, and a renewal that lands
-- after its deadline, when the tombstone may be gone, re-creates nothing.
--
-- KEYS[2i-1]     lock hash of item i (see acquire.lua)
-- KEYS[2i]       released holds of item i's lock (see release.lua)
-- ARGV[3i-2]     owner id of item i
-- ARGV[3i-1]     hold id of item i
-- ARGV[3i]       ttl in milliseconds of item i
-- KEYS[2n+1..]   the node's marker, or on a Redis Cluster shard the marker
--                of each slot the items span (renew_slots: one call per
--                shard); ARGV[#ARGV] restart guard in ms (see guard.lua)
-- ARGV[#ARGV-1]  the batch's deadline (as ARGV[5] of acquire.lua)
--
-- Reply (then the node's seconds and microseconds: timed in guard.lua):
-- one integer per item:
--         1  renewed (or re-created)
--         0  another owner holds the lock here
--        -1  the hold was released here (see release.lua, force.lua)
--        -2  the key is a hash that is not a lock
--        -3  the hold is missing and the batch arrived after its deadline:
--            not re-created
-- Errors: WRONGTYPE when a key is not a hash (the whole batch fails);
--         QUARANTINED (see guard.lua): the holds are renewed or re-created
--         all the same (the node keeps them from other owners once it
--         votes again), but the node's answer must not count.
local items = (#ARGV - 2) / 3
local quarantined = guard_all(KEYS, 2 * items + 1, ARGV[#ARGV])
local replies = {}
local late = too_late(ARGV[#ARGV - 1])
for i = 1, items do
  local key, gone, owner, hold = KEYS[2 * i - 1], KEYS[2 * i], ARGV[3 * i - 2], ARGV[3 * i - 1]
  local ttl = tonumber(ARGV[3 * i])
  local fields = redis.call('HMGET', key, 'owner', hold)
  local holder, held = fields[1], fields[2]
  if holder == false and redis.call('EXISTS', key) == 1 then
    replies[i] = -2
  elseif held == false and redis.call('ZSCORE', gone, hold) then
    replies[i] = -1
  elseif holder ~= false and holder ~= owner then
    replies[i] = 0
  elseif held == false and late then
    replies[i] = -3
  elseif held ~= false then
    -- The hold is here, this owner's: only its time moves.
    if redis.call('PTTL', key) < ttl then
      redis.call('PEXPIRE', key, ttl)
    end
    replies[i] = 1
  else
    local named = held == false and redis.call('HGET', key, 'handed')
    if named and handed_rule(named, hold) == 'claim' then
      -- Handed to this owner as a waiter (see queue.lua): the lease
      -- claims it, as its holds are re-created on a node that lost them.
      redis.call('DEL', key)
    elseif named then
      -- Handed naming another call's hold: keep that hold too.
      redis.call('HDEL', key, 'handed')
      redis.call('HSET', key, named, 1)
    end
    redis.call('HSET', key, 'owner', owner, hold, 1)
    if redis.call('PTTL', key) < ttl then
      redis.call('PEXPIRE', key, ttl)
    end
    replies[i] = 1
  end
end
if quarantined then
  return quarantined
end
return timed(replies)
