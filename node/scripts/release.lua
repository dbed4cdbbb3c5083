-- release: drop one hold (after queue.lua). The last hold frees the lock,
-- which goes straight to the first live waiter in the queue (see hand in
-- queue.lua); only that waiter is told. Releasing a hold twice is harmless.
--
-- KEYS[1]  lock (see queue.lua)
-- KEYS[2]  released holds: ZSET hold id -> expiry (node time, ms)
-- KEYS[3]  queue, KEYS[4] alive, KEYS[5] wake (see queue.lua)
-- ARGV[1]  owner id
-- ARGV[2]  hold id (also the notice's id)
-- ARGV[3]  handoff window in milliseconds
-- ARGV[4]  tombstone lifetime in milliseconds, or "0": when an acquire of
--          this hold may still arrive (a call's fate was unknown to the
--          client), the hold id is recorded for that long so that the late
--          acquire is refused (acquire.lua, acquire_queued.lua, renew.lua)
-- ARGV[5]  the channel of a read-write lock's waiting readers, or "": when
--          this release frees the lock and no writer waits for it (none
--          was handed it, and none is queued: a waiter undoing its own
--          attempt stays queued), the readers are told there (see
--          acquire_read.lua)
-- KEYS[6]  the node's marker, ARGV[6] restart guard in ms (see guard.lua):
--          a node the guard keeps from voting hands the lock to no one
--          (see hand in queue.lua)
-- ARGV[7]  optional: the owner's ticket, to put it back in the queue (the
--          undo of a failed attempt by a waiter that will try again: the
--          grant took it off this node's queue, and without its place here
--          the nodes would name different heads)
-- ARGV[8]  with ARGV[7]: its heartbeat lifetime in milliseconds
-- ARGV[9]  with ARGV[7]: the channel its notices go to
-- ARGV[10] with ARGV[7]: its span (see queue.lua)
--
-- A lock handed to this owner and not claimed (see queue.lua) is passed
-- on to the next waiter only by a release of the hold it names: the
-- release of the lease that took it from the notices. Any other release
-- of this owner (the undo of an attempt, sent again or late) leaves it:
-- the waiter may have taken the lease from it.
--
-- Reply:  {2, who}  hold removed, it was the last (or the lock was handed
--                   to this owner naming this hold): the lock went to the
--                   waiter whose fingerprint is who, or was deleted (who
--                   empty)
--         1  hold removed, other holds of this owner remain
--         0  this hold was not there (expired, or never granted): no
--            change, except that a lock handed to this owner and not
--            claimed goes on to the next waiter
--        -1  another owner holds the lock: no change
local q = {lock = KEYS[1], queue = KEYS[3], alive = KEYS[4], wake = KEYS[5], marker = KEYS[6], guard_ms = ARGV[6]}
local owner, hold = ARGV[1], ARGV[2]
-- freed: the lock was deleted and went to the waiter who (or to no one).
local function freed(who)
  if who == '' and ARGV[5] ~= '' and not has_waiters(q) then
    redis.call('PUBLISH', ARGV[5], hold .. ' ')
  end
  return {2, who}
end
local life = tonumber(ARGV[4])
if life > 0 then
  -- Whether or not the hold is here now: another copy of its acquire may
  -- still arrive (one sent earlier and delayed, or re-sent).
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', node_now())
  redis.call('ZADD', KEYS[2], node_now() + life, hold)
  lengthen(KEYS[2], life)
end
if ARGV[7] then
  enqueue(q, node_now(), owner, ARGV[7], tonumber(ARGV[8]), ARGV[9], hold, ARGV[10])
end
local fields = redis.call('HMGET', q.lock, 'owner', hold, 'handed')
local holder, held = fields[1], fields[2]
if holder == owner and (fields[3] == hold or fields[3] == '1') then
  -- Handed to this owner, which is done with the lock (the lease that
  -- took it from the notices, or one that holds it on other nodes, ends;
  -- a handing of an older client's, "1", goes on at any release): on to
  -- the next waiter.
  redis.call('DEL', q.lock)
  local who = hand(q, tonumber(ARGV[3]), hold, ARGV[7] and owner or nil)
  if fields[3] ~= hold then
    return 0
  end
  return freed(who)
end
if holder == false or holder ~= owner or held == false then
  if holder ~= false and holder ~= owner then
    return -1
  end
  return 0
end
if redis.call('HLEN', q.lock) > 2 then
  redis.call('HDEL', q.lock, hold)
  return 1
end
redis.call('DEL', q.lock)
return freed(hand(q, tonumber(ARGV[3]), hold, ARGV[7] and owner or nil))
