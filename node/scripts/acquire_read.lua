-- acquire_read: take a read hold of a read-write lock (after queue.lua).
-- Every reader holds the lock under one shared owner value (ARGV[1], the
-- reader marker, which no writer's owner id can equal), each with a hold
-- field of its own, so renew.lua and release.lua treat read holds as holds
-- of that one owner: the key is held by the readers, or by one writer, or
-- free. A writer's acquire (acquire.lua, acquire_queued.lua) refuses a key
-- the readers hold, and queues; the last reader's release hands the lock
-- to the first queued writer (hand in queue.lua).
--
-- Writer preference: a reader that is not re-entering is refused while a
-- live writer waits in the queue, so a stream of readers cannot starve a
-- writer (readers arriving after a waiting writer wait for it). A reader
-- that re-enters (a read hold inside its own read hold) is not refused for
-- that: refusing it would deadlock (the writer waits for the outer hold).
--
-- KEYS[1]  lock, KEYS[2] released holds, KEYS[3] queue, KEYS[4] alive,
--          KEYS[5] wake (see queue.lua, acquire.lua)
-- KEYS[6]  the node's marker (see guard.lua)
-- ARGV[1]  the reader marker (the readers' shared owner)
-- ARGV[2]  hold id
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  "1": re-entering (a read hold inside a read hold); "0": not
-- ARGV[5]  restart guard in milliseconds (see guard.lua; "0": off)
-- ARGV[6]  the request's deadline (as ARGV[5] of acquire.lua)
--
-- Reply (then the node's seconds and microseconds: timed in guard.lua):
--        {1, holds}        granted; holds = the read holds on this node
--        {0, pttl, who}    a writer holds it (or it was handed to one):
--                          pttl >= -1 and who = its fingerprint; or a
--                          writer waits: pttl = -2, who = that writer's
--        {2}               this hold was released already: not granted
--        {3}               arrived after its deadline (as acquire.lua)
-- Errors: WRONGTYPE, "not a lock", QUARANTINED (as acquire.lua).
local refused = guard(KEYS[6], ARGV[5])
if refused then
  return refused
end
if too_late(ARGV[6]) then
  return timed({3})
end
local q = {lock = KEYS[1], queue = KEYS[3], alive = KEYS[4], wake = KEYS[5]}
local readers, hold, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local holder = redis.call('HGET', q.lock, 'owner')
if holder ~= false and holder ~= readers then
  return timed({0, redis.call('PTTL', q.lock), fingerprint(holder)})
end
if redis.call('ZSCORE', KEYS[2], hold) then
  return timed({2})
end
if holder == false and redis.call('EXISTS', q.lock) == 1 then
  return redis.error_reply('ERR redlock: key is a hash that is not a lock')
end
if ARGV[4] ~= '1' and has_waiters(q) then
  evict(q, node_now())
  local head = redis.call('ZRANGE', q.queue, 0, 0)[1]
  if head then
    return timed({0, -2, fingerprint(head)})
  end
end
redis.call('HSET', q.lock, 'owner', readers, hold, 1)
-- Never shorten the key's life: another reader may have asked for longer.
if redis.call('PTTL', q.lock) < ttl then
  redis.call('PEXPIRE', q.lock, ttl)
end
return timed({1, redis.call('HLEN', q.lock) - 1})
