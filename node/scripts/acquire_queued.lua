-- acquire_queued: the acquire of a waiter (after queue.lua). Take the lock
-- when it is free (fair: and this owner heads the queue, or no one waits),
-- claim it when it was handed to this owner, or re-enter it; otherwise
-- queue the owner and refresh its heartbeat. Unless it is refused, waiters
-- whose heartbeat deadline passed are evicted first.
--
-- KEYS[1]  lock (see queue.lua)
-- KEYS[2]  released holds (see acquire.lua)
-- KEYS[3]  queue, KEYS[4] alive, KEYS[5] wake (see queue.lua)
-- ARGV[1]  owner id
-- ARGV[2]  hold id
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  ticket (this waiter's score in the queue)
-- ARGV[5]  heartbeat lifetime in milliseconds: evicted unless it calls
--          again within it
-- ARGV[6]  the channel this waiter's notices go to
-- ARGV[7]  "1": fair (a free lock goes to the queue's first waiter);
--          "0": plain (a newcomer takes a free lock)
-- ARGV[8]  handoff window in milliseconds (see hand in queue.lua)
-- KEYS[6]  the node's marker, ARGV[9] restart guard in ms (see guard.lua)
-- ARGV[10] how long a lock handed to this waiter is kept at most, in
--          milliseconds (its span: see queue.lua)
-- KEYS[7]  optional: the fencing counter (as KEYS[4] of acquire.lua)
-- ARGV[11] the request's deadline (as ARGV[5] of acquire.lua)
-- ARGV[12] "1": this waiter yields (its attempts reach too few nodes to
--          win: engine/cutoff.go): it takes the lock as above, but
--          takes no place in the queue, and leaves the place it had
--
-- Reply (then the node's seconds and microseconds: timed in guard.lua):
--        {1, holds}         granted (as acquire.lua); a claimed handoff is 1
--        {1, holds, counter, seconds, microseconds}
--                           granted, KEYS[7] given (as acquire.lua)
--        {2}                this hold was released already (as acquire.lua)
--        {3}                arrived after its deadline (as acquire.lua)
--        {0, pttl, who}     refused: another owner holds it (pttl >= -1,
--                           who = its fingerprint), or it was free but
--                           another waiter heads the queue and now has it
--                           (pttl = -2, who = that waiter's fingerprint)
--        QUARANTINED error (see guard.lua): nothing changed
-- Errors: WRONGTYPE when KEYS[7] is not a string (nothing changed).
local refused = guard(KEYS[6], ARGV[9])
if refused then
  return refused
end
if too_late(ARGV[11]) then
  return timed({3})
end
local counter = fence_at(KEYS[7])
local q = {lock = KEYS[1], queue = KEYS[3], alive = KEYS[4], wake = KEYS[5], marker = KEYS[6], guard_ms = ARGV[9]}
local owner, hold, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
-- wait queues this waiter (or refreshes its place), unless it yields.
local function wait()
  if ARGV[12] == '1' then
    dequeue(q, owner)
  else
    enqueue(q, node_now(), owner, ARGV[4], tonumber(ARGV[5]), ARGV[6], hold, ARGV[10])
  end
end
if redis.call('ZSCORE', KEYS[2], hold) then
  return timed({2})
end
local fields = redis.call('HMGET', q.lock, 'owner', 'handed')
local holder, handed = fields[1], fields[2]
if holder ~= false and holder ~= owner then
  -- Refused: the others' heartbeats do not matter here (hand evicts).
  wait()
  return timed({0, redis.call('PTTL', q.lock), fingerprint(holder)})
end
local waiting = has_waiters(q)
if waiting then
  evict(q, node_now())
end
local holds = 1
local rule
if handed then
  -- Handed to this owner (see handed_rule in guard.lua).
  rule = handed_rule(handed, hold)
  if rule == 'stale' then
    return timed({0, redis.call('PTTL', q.lock), fingerprint(holder)})
  elseif rule == 'keep' then
    redis.call('HDEL', q.lock, 'handed')
    redis.call('HSET', q.lock, handed, 1)
  end
end
if holder == false then
  if redis.call('EXISTS', q.lock) == 1 then
    return redis.error_reply('ERR redlock: key is a hash that is not a lock')
  end
  if ARGV[7] == '1' and waiting then
    -- Fair: the first waiter's (this one's, if its ticket is the first;
    -- with no one queued, this one's). One that yields is never first.
    wait()
    local head = redis.call('ZRANGE', q.queue, 0, 0)[1]
    if head ~= owner and head ~= nil then
      return timed({0, -2, hand(q, tonumber(ARGV[8]), hold, nil)})
    end
  end
  redis.call('HSET', q.lock, 'owner', owner, hold, 1)
  redis.call('PEXPIRE', q.lock, ttl)
elseif rule == 'claim' then
  -- Handed to this owner: claim it for this hold, for a full ttl from now.
  redis.call('DEL', q.lock)
  redis.call('HSET', q.lock, 'owner', owner, hold, 1)
  redis.call('PEXPIRE', q.lock, ttl)
else
  redis.call('HSET', q.lock, hold, 1)
  -- Never shorten the key's life: an outer hold may have asked for longer.
  if redis.call('PTTL', q.lock) < ttl then
    redis.call('PEXPIRE', q.lock, ttl)
  end
  holds = redis.call('HLEN', q.lock) - 1
end
if waiting then
  dequeue(q, owner)
end
return timed(fenced({1, holds}, counter))
