-- leave: a waiter gives up its place (after queue.lua). A lock handed to
-- it naming one of its attempts, and not claimed, goes on to the next
-- waiter; a free lock goes to the
-- new first waiter, so that it does not wait for a release that already
-- happened.
--
-- KEYS[1]  lock, KEYS[2] queue, KEYS[3] alive, KEYS[4] wake (see queue.lua)
-- KEYS[5]  the node's marker, ARGV[5] restart guard in ms (see guard.lua):
--          a node the guard keeps from voting hands the lock to no one
--          (see hand in queue.lua)
-- ARGV[1]  owner id
-- ARGV[2]  notice id (unique)
-- ARGV[3]  handoff window in milliseconds
-- ARGV[4]  the id of the leaving call: a lock handed to the owner naming
--          an attempt of another call of the same owner (which may have
--          taken its lease from the notices) is not passed on
-- ARGV[6]  optional: "hold": ARGV[4] is one hold, not a call, and only a
--          lock handed naming that very hold is passed on (the leave after
--          the release of a lease: the call may still be waiting, and its
--          later attempts may have taken a lease from the notices)
--
-- Reply: 1 when the waiter was queued here or had the lock handed to it,
--        0 when neither.
local q = {lock = KEYS[1], queue = KEYS[2], alive = KEYS[3], wake = KEYS[4], marker = KEYS[5], guard_ms = ARGV[5]}
local owner = ARGV[1]
local removed = redis.call('ZREM', q.queue, owner)
dequeue(q, owner)
local fields = redis.call('HMGET', q.lock, 'owner', 'handed')
local named = fields[2]
local mine
if ARGV[6] == 'hold' then
  mine = named == ARGV[4]
else
  mine = named == '1' or attempt_of(named or '') == ARGV[4]
end
if fields[1] == owner and named and mine then
  redis.call('DEL', q.lock)
  hand(q, tonumber(ARGV[3]), ARGV[2], nil)
  return 1
end
if removed == 1 and redis.call('EXISTS', q.lock) == 0 then
  hand(q, tonumber(ARGV[3]), ARGV[2], nil)
end
return removed
