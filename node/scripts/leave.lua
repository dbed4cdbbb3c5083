-- leave: a waiter gives up its place (after queue.lua). A lock handed to
-- it naming one of its attempts, and not claimed, goes on to the next
-- waiter; a free lock goes to the
-- new first waiter, so that it does not wait for a release that already
-- happened.
--
-- KEYS[1]  lock, KEYS[2] queue, KEYS[3] alive, KEYS[4] wake (see queue.lua)
-- ARGV[1]  owner id
-- ARGV[2]  notice id (unique)
-- ARGV[3]  handoff window in milliseconds
-- ARGV[4]  the id of the leaving call: a lock handed to the owner naming
--          an attempt of another call of the same owner (which may have
--          taken its lease from the notices) is not passed on
--
-- Reply: 1 when the waiter was queued here or had the lock handed to it,
--        0 when neither.
local q = {lock = KEYS[1], queue = KEYS[2], alive = KEYS[3], wake = KEYS[4]}
local owner = ARGV[1]
local removed = redis.call('ZREM', q.queue, owner)
dequeue(q, owner)
local fields = redis.call('HMGET', q.lock, 'owner', 'handed')
if fields[1] == owner and fields[2] and (fields[2] == '1' or attempt_of(fields[2]) == ARGV[4]) then
  redis.call('DEL', q.lock)
  hand(q, tonumber(ARGV[3]), ARGV[2], nil)
  return 1
end
if removed == 1 and redis.call('EXISTS', q.lock) == 0 then
  hand(q, tonumber(ARGV[3]), ARGV[2], nil)
end
return removed
