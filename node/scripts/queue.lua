-- queue: the waiters of a lock and the handoff to the first of them. This
-- file (after guard.lua, for node_now and guard) is put in front of every
-- script that queues waiters or frees the lock (acquire_queued.lua,
-- release.lua, leave.lua, force.lua; inspect.lua and acquire_read.lua
-- read the queue).
--
-- Keys of one lock, all in one hash slot:
--   lock   hash: field "owner" = owner id, one field per hold id; a lock
--          handed to a waiter that has not claimed it yet has the field
--          "handed" instead of holds
--   queue  ZSET owner -> ticket: every node orders the waiters by the
--          ticket the client chose once, so all nodes agree on the first
--   alive  ZSET owner -> heartbeat deadline (node time, ms)
--   wake   HASH owner -> the channel its notices go to (its client's)
--
-- A script names them in a table q = {lock, queue, alive, wake}; one that
-- hands the lock on (calls hand) adds marker, the node's marker key, and
-- guard_ms, the restart guard in ms (see guard.lua).
--
-- The handoff: when the lock is freed and a waiter heads the queue, the
-- lock is not freed but given to that waiter (owner = it, "handed"), and
-- only that waiter is told. No one else can take it in between. The
-- waiter claims it with its next acquire (acquire_queued.lua), whose
-- validity, as any grant's, counts from that acquire's own start: a
-- handed lock grants nothing by itself.
--
-- But its notice does: a waiter that hears one from a quorum of nodes
-- takes its lease from them without a claim round (adopt.go), so each
-- notice counts as its node's grant. A node that may not vote (the guard
-- in guard.lua refuses it: it may have forgotten a lease, so a lock it
-- finds free may be held) hands the lock to no one and tells no one: the
-- lock is freed as usual and the waiter stays queued; its acquire is
-- refused until the node votes again, and then takes the free lock.

-- has_waiters: whether anyone is queued. The queue, alive and wake keys
-- always have the same members (enqueue, evict and dequeue change all
-- three), so without the queue key there is nothing to evict or dequeue.
local function has_waiters(q)
  return redis.call('EXISTS', q.queue) == 1
end

-- fingerprint names an owner in replies and notices: enough to recognise
-- one's own id, useless for releasing someone else's lock.
local function fingerprint(owner)
  return string.sub(redis.sha1hex(owner), 1, 16)
end

-- lengthen sets key's life to at least ms (never shortens it: waiters with
-- a longer heartbeat may be queued).
local function lengthen(key, ms)
  if redis.call('PTTL', key) < ms then
    redis.call('PEXPIRE', key, ms)
  end
end

local function evict(q, now)
  local dead = redis.call('ZRANGEBYSCORE', q.alive, '-inf', now)
  if #dead > 0 then
    redis.call('ZREM', q.alive, unpack(dead))
    redis.call('ZREM', q.queue, unpack(dead))
    redis.call('HDEL', q.wake, unpack(dead))
  end
end

local function dequeue(q, owner)
  redis.call('ZREM', q.queue, owner)
  redis.call('ZREM', q.alive, owner)
  redis.call('HDEL', q.wake, owner)
end

-- enqueue queues owner with ticket (a waiter keeps its first ticket) and
-- refreshes its heartbeat deadline; the queue outlives no waiter by much.
-- hold is the id of the call that queues it, span how long a lock handed
-- to it is kept at most (see the top of this file).
local function enqueue(q, now, owner, ticket, lifetime, channel, hold, span)
  redis.call('ZADD', q.queue, 'NX', ticket, owner)
  redis.call('ZADD', q.alive, now + lifetime, owner)
  redis.call('HSET', q.wake, owner, '\1' .. hold .. ' ' .. span .. ' ' .. channel)
  -- The three keys have the same members, so they are made and emptied
  -- together and lengthened together: the queue's life speaks for all
  -- three. They are lengthened to twice the lifetime once less than one is
  -- left (or none is set), so most heartbeats cost one PTTL, not six calls.
  if redis.call('PTTL', q.queue) < lifetime then
    lengthen(q.queue, 2 * lifetime)
    lengthen(q.alive, 2 * lifetime)
    lengthen(q.wake, 2 * lifetime)
  end
end

-- hand gives the free lock (the caller deleted it, or found it free) to
-- the queue's first live waiter, until min(its span, its heartbeat
-- deadline), and tells that waiter alone (payload "<id> <fingerprint>
-- <hold>", hold as in its wake entry). An entry without a hold (older
-- clients) gets at most window ms and a notice "<id> <fingerprint>". It
-- returns the fingerprint, or '' when no one waits. When the first waiter
-- is except (a waiter putting its own failed attempt back), or when the
-- node may not vote (guard(q.marker, q.guard_ms) refuses: see the top of
-- this file), the lock stays free: that waiter tries again. Waiters whose
-- heartbeat lapsed are evicted all the same.
local function hand(q, window, id, except)
  local now, head, deadline
  while true do
    head = redis.call('ZRANGE', q.queue, 0, 0)[1]
    if head == nil then
      return ''
    end
    now = node_now()
    deadline = tonumber(redis.call('ZSCORE', q.alive, head))
    if deadline and deadline > now then
      break
    end
    -- The first waiter's heartbeat lapsed: evict every such waiter (the
    -- first among them), and look again.
    evict(q, now)
    dequeue(q, head)
  end
  if head == except or guard(q.marker, q.guard_ms) then
    return ''
  end
  local channel = redis.call('HGET', q.wake, head)
  local named, span = '1', window
  if channel then
    local h, ms, ch = string.match(channel, '^\1(%S+) (%d+) (.*)$')
    if h then
      named, span, channel = h, tonumber(ms), ch
    end
  end
  dequeue(q, head)
  redis.call('HSET', q.lock, 'owner', head, 'handed', named)
  redis.call('PEXPIRE', q.lock, math.max(1, math.min(span, deadline - now)))
  local who = fingerprint(head)
  if channel then
    local notice = id .. ' ' .. who
    if named ~= '1' then
      notice = notice .. ' ' .. named
    end
    redis.call('PUBLISH', channel, notice)
  end
  return who
end
