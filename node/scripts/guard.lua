-- guard: a node that may have forgotten a lease does not vote until every
-- lease it may have granted has ended. This file is put in front of every
-- script whose answer counts as a vote (acquire.lua, acquire_queued.lua,
-- acquire_read.lua, renew.lua, fence_read.lua, permits.lua) and of
-- queue.lua. The rules and why they hold: docs/restart-guard.md;
-- model/guard.pml.
--
-- The marker key (one per node; on a Redis Cluster node one per slot)
-- holds "<since> <why> <replid> <longest> <voted>": the node time (ms)
-- since which the node's data is complete (0: since forever, as declared
-- by `redlock init`), the rule that set it, the replication id of the
-- data it was stamped on (a restart or a promotion changes it), the
-- longest guard any call asked here (ms), and when the node last voted.

-- node_time is the node's TIME, read once per call and only by a call that
-- needs it; node_now the same in milliseconds.
local node_time
local node_ms
local function node_now()
  if not node_ms then
    node_time = node_time or redis.call('TIME')
    node_ms = tonumber(node_time[1]) * 1000 + math.floor(tonumber(node_time[2]) / 1000)
  end
  return node_ms
end

-- node_longest is the longest guard the node's marker records, once the
-- guard read it: timed() answers it, and the Client lends it to every
-- node of the set (a node that lost its marker lost the record too).
local node_longest

-- timed appends the node's TIME (seconds, microseconds) to a voting
-- script's reply, a table, for the client's clock check (see
-- node/clock.go), and the longest guard (ms, 0 unknown). Error replies do
-- not go through it.
local function timed(reply)
  node_time = node_time or redis.call('TIME')
  local n = #reply
  reply[n + 1] = node_time[1]
  reply[n + 2] = node_time[2]
  reply[n + 3] = node_longest or 0
  return reply
end

-- fence_at reads a grant's fencing counter at key (a decimal string; absent
-- reads as "0"), or nil when key is nil (the call did not ask for it). It
-- runs before the script changes anything, so that a key of another type,
-- or a string that is not a counter, fails the call with nothing taken.
local function fence_at(key)
  if key then
    local counter = redis.call('GET', key) or '0'
    if not string.match(counter, '^%d+$') or #counter > 20 then
      error({err = 'WRONGTYPE redlock: the fencing counter holds a string that is not a counter'})
    end
    return counter
  end
  return nil
end

-- fenced appends a grant's fencing counter and the node's TIME (seconds,
-- microseconds) to reply when counter is not nil: the token's read, taken
-- with the vote (see fencing.go).
local function fenced(reply, counter)
  if counter then
    node_time = node_time or redis.call('TIME')
    local n = #reply
    reply[n + 1] = counter
    reply[n + 2] = node_time[1]
    reply[n + 3] = node_time[2]
  end
  return reply
end

-- facts: what the guard asks the node past its hot path, defined by the
-- first call that needs it (defining it costs every script otherwise).
local node_facts
local probing = false -- set by probe.lua: judge, but write no marker

-- new_call sets every variable above back to what a call starts with: an
-- EVAL script starts afresh, but a function of the library (see
-- node/functions.go) shares them with the calls before it. A variable
-- added above belongs here too (node's TestLibrary_newCallResetsEveryVariable).
local function new_call()
  node_time, node_ms, node_longest, node_facts, probing = nil, nil, nil, nil, false
end
local function facts()
  if node_facts then
    return node_facts
  end
  local f = {}
  local function int_field(info, name)
    return tonumber(string.match(info, '\n' .. name .. ':(%-?%d+)'))
  end
  local sections = {} -- each INFO section read once per call
  local function info(section)
    if sections[section] == nil then
      local text = redis.pcall('INFO', section)
      -- A section without a single field (a proxy that blanks it) says
      -- nothing happened only by hiding it: read as refused.
      sections[section] = type(text) == 'string' and string.find(text, '\n[%w_|%-]+:') ~= nil and text or false
    end
    return sections[section] or nil
  end
  local function called(stats, names)
    for _, name in ipairs(names) do
      local calls = tonumber(string.match(stats, '\ncmdstat_' .. name .. ':calls=(%d+)'))
      if calls and calls > 0 then
        return true
      end
    end
    return false
  end
  -- f.start: an upper bound of the process start in node ms (the node
  -- knows it to the second); nil when INFO is refused. An uptime below
  -- zero (the clock stepped back past the start) is now.
  function f.start()
    local server = info('server') or ''
    local uptime = int_field(server, 'uptime_in_seconds')
    if not uptime then
      return nil
    end
    local start = math.min((math.floor(node_now() / 1000) - math.max(uptime, 0) + 1) * 1000, node_now())
    return start, string.match(server, '\nrun_id:(%x+)')
  end
  -- f.persists: the node started with an append-only file and has not
  -- rewritten it since (AOF switched on at run time rewrites it at once).
  -- Scripts cannot read appendfsync: the client tells ("a", see
  -- node/guard.go readFsync).
  function f.persists()
    local text = info('persistence')
    return text ~= nil and int_field(text, 'aof_enabled') == 1 and int_field(text, 'aof_rewrites') == 0
      and int_field(text, 'aof_rewrite_in_progress') == 0 and int_field(text, 'aof_rewrite_scheduled') == 0
  end
  -- f.cluster: a Redis Cluster node, whose slot's marker may be missing
  -- because the slot's data lived elsewhere, and whose replicas take over
  -- without a command.
  function f.cluster()
    local text = info('cluster')
    return text == nil or int_field(text, 'cluster_enabled') ~= 0
  end
  -- f.slots_came: a Cluster node may serve a slot whose data lived
  -- elsewhere since its start: promoted (replid2 set: failover, or data
  -- loaded from disk), or slots assigned or imported by command. Without
  -- these, a slot it serves without a marker never had one here.
  function f.slots_came(replid2)
    local stats = info('commandstats')
    return stats == nil or (replid2 or '') ~= string.rep('0', 40)
      or called(stats, { 'cluster|setslot', 'cluster|addslots', 'cluster|addslotsrange', 'cluster|delslots',
        'cluster|delslotsrange', 'cluster|failover', 'cluster|reset', 'cluster|replicate', 'restore',
        'restore-asking' })
  end
  -- f.promoted: the node's role may have changed since its start
  -- (REPLICAOF, FAILOVER, a Cluster failover; CONFIG RESETSTAT, before
  -- Redis 7 any CONFIG, would hide them): it may lack writes its old
  -- primary acknowledged.
  -- continued: the node's data continues an earlier history under a new
  -- id (master_replid2 is set), as after a restart from a snapshot or a
  -- promotion; then a sync served since the start may be the PSYNC of a
  -- primary's FAILOVER, which promotes without a command on this node.
  function f.promoted(stats, continued)
    stats = stats or info('commandstats')
    return stats == nil or called(stats, { 'replicaof', 'slaveof', 'failover', 'config|resetstat', 'config' })
      or (continued and called(stats, { 'psync', 'sync' }))
  end
  -- f.dropped: why keys may have gone since the start other than by
  -- expiry or a lock script; nil when none did.
  function f.dropped()
    local stats, others = info('commandstats'), info('stats')
    if stats == nil or others == nil then
      return 'unknown'
    elseif called(stats, { 'flushall', 'flushdb', 'swapdb', 'debug', 'config|resetstat', 'config' })
      or int_field(others, 'evicted_keys') ~= 0 then
      return 'flushed'
    elseif f.promoted(stats) then
      return 'failover'
    end
    return nil
  end
  -- f.evicts: the memory policy when it may evict a lock key while the
  -- marker (no TTL) stays ('unknown' when INFO is refused); nil when the
  -- node never evicts.
  function f.evicts()
    local text = info('memory')
    if text == nil then
      return 'unknown'
    end
    local policy = string.match(text, '\nmaxmemory_policy:(%S+)')
    if int_field(text, 'maxmemory') == 0 or policy == 'noeviction' then
      return nil
    end
    return policy or 'unknown'
  end
  -- f.moved: since and why for a marker stamped on other data. A
  -- promotion counts from now, when it is first seen (never before it
  -- happened); a restart from the start (a marker read back from a
  -- snapshot may predate grants the node forgot), unless the process
  -- made the marker (an older version's run_id) or keeps every write.
  -- unsure: an append-only file this call cannot judge (the client has
  -- not read appendfsync): refuse, but leave the verdict to another call.
  function f.moved(since, why, stamp, stamped_by, now, fsynced, replid2)
    local start, run = f.start()
    if stamp == run or (stamped_by == run and replid2 == string.rep('0', 40)) then
      -- This process stamped it, and was never promoted: the id changed
      -- with its backlog (a first replica, or the backlog freed).
      return since, why
    elseif start == nil or f.promoted(nil, replid2 ~= string.rep('0', 40)) or f.cluster() then
      return math.max(since, now), start and 'failover' or 'unknown'
    elseif since >= start then
      return since, why
    elseif f.persists() then
      if fsynced then
        return since, why
      end
      return start, 'restarted', true
    end
    return start, 'restarted'
  end
  -- f.blind: the guard without INFO, by the user's choice: a missing
  -- marker counts from now, a marker is trusted as it is.
  function f.blind(marker, value, guard_for)
    local since, why = node_now(), 'unknown'
    if value then
      local stamp, longest, voted, run, evicted
      since, why, stamp, longest, voted, run, evicted = f.parse(value)
      if since == nil then
        return redis.error_reply('ERR redlock: the node marker is not a time')
      elseif guard_for > longest then
        f.stamp(marker, since, why, (stamp or '') ~= '' and stamp or '0', guard_for, voted, run, evicted)
      end
      guard_for = math.max(guard_for, longest)
    else
      f.stamp(marker, since, why, '0', guard_for, 0)
    end
    if since > 0 and node_now() < since + guard_for then
      return f.quarantine(since, guard_for, why)
    end
    return nil
  end
  function f.quarantine(since, guard_for, why)
    local left = since + guard_for - node_now()
    return redis.error_reply(string.format('QUARANTINED %d %d %s %d', since, since + guard_for, why, left))
  end
  function f.stamp(marker, since, why, replid, longest, voted, run, evicted)
    if not probing then
      redis.call('SET', marker, string.format('%d %s %s %d %d %d %s', since, why, replid, longest, voted,
        evicted or 0, run or '0'))
    end
  end
  -- f.evictions: the keys the process has evicted since its start (or
  -- since CONFIG RESETSTAT, which counts as a role change); 0 unknown.
  function f.evictions()
    return int_field(info('stats') or '', 'evicted_keys') or 0
  end
  -- f.parse reads a marker of this version or an older one ("<ms> <why>
  -- <run_id>", "0 <run_id>", "0"): since, why, stamp (a replid or an
  -- older marker's run_id), longest, voted, the run_id of the process
  -- that stamped it, and the evictions it had counted; nil since when
  -- unreadable.
  function f.parse(value)
    local since, why, stamp, longest, voted, evicted, run =
      string.match(value, '^(%d+) (%a+) (%x+) (%d+) (%d+) (%d+) (%x+)$')
    if since then
      return tonumber(since), why, stamp, tonumber(longest), tonumber(voted), run, tonumber(evicted)
    end
    local first, second
    since, first, second = string.match(value, '^(%d+) ?(%w*) ?(%w*)$')
    if #(first or '') == 40 then
      return tonumber(since), 'new', first, 0, 0, nil, 0
    end
    return tonumber(since), first ~= '' and first or 'lost', second, 0, 0, nil, 0
  end
  node_facts = f
  return f
end

local function accepts(risks, risk)
  return string.find(risks, risk, 1, true) ~= nil
end

-- judged: the guard's slow path, for a marker missing, unreadable or
-- stamped on other data (a restart, a promotion), for a node that cannot
-- tell its replication id, and once a second for a node that votes.
local function judged(marker, value, replication, guard_for, risks)
  local f = facts()
  local replid = replication and string.match(replication, '\nmaster_replid:(%x+)')
  if not replid then
    if accepts(risks, 'i') then
      return f.blind(marker, value, guard_for)
    end
    return redis.error_reply('UNGUARDED noinfo')
  end
  local policy = f.evicts()
  if policy and not accepts(risks, 'e') then
    return redis.error_reply('UNGUARDED evicts ' .. policy)
  end
  local now, since, why, stamp, longest, voted, stamped_by, evicted = node_now(), nil, nil, nil, 0, 0, nil, 0
  if value then
    since, why, stamp, longest, voted, stamped_by, evicted = f.parse(value)
    if since == nil then
      return redis.error_reply('ERR redlock: the node marker is not a time')
    end
  end
  longest = math.max(longest, guard_for)
  node_longest = longest
  -- Keys evicted since the marker counted them (a policy that evicted and
  -- was set back): a lock key may be gone while the marker stayed.
  local evictions = f.evictions()
  if since ~= nil and stamp == replid and evictions > evicted and not accepts(risks, 'e') then
    since, why = math.max(since, now), 'flushed'
  end
  if since == nil then
    local start = f.start()
    local dropped = f.dropped()
      or (f.cluster() and f.slots_came(string.match(replication, '\nmaster_replid2:(%x+)')) and 'cluster')
    since, why = start or now, 'new'
    if dropped or not start then
      since, why = now, dropped or 'unknown'
    end
  elseif stamp ~= replid then
    local unsure
    since, why, unsure = f.moved(since, why, stamp, stamped_by, now, accepts(risks, 'a'),
      string.match(replication, '\nmaster_replid2:(%x+)'))
    if unsure and now < since + longest then
      return f.quarantine(since, longest, why)
    end
  end
  local votes = since == 0 or now >= since + longest
  local _, run = f.start()
  f.stamp(marker, since, why, replid, longest, votes and now or voted, run, evictions)
  if not votes then
    return f.quarantine(since, longest, why)
  end
  return nil
end

-- guard returns nil when the node may vote, or an error reply: 
-- "QUARANTINED <since> <until> <why> <left>" (node times in ms; left: ms
-- from now to until) when it may have forgotten a lease, "UNGUARDED
-- <why>" when it cannot tell and the user did not accept that risk.
-- guard_arg is "<ms>[:<letters>]" ("0": the guard is off): the risks the
-- user accepted (i: INFO refused, e: eviction), and a: the client saw
-- appendfsync always on this node.
local function guard(marker, guard_arg)
  local guard_for, risks = tonumber(guard_arg), ''
  if not guard_for then
    local ms
    ms, risks = string.match(guard_arg, '^(%d+):(%a*)$')
    guard_for = tonumber(ms) or error('ERR redlock: the restart guard is not a number of ms')
  end
  if guard_for <= 0 then
    return nil
  end
  local value = redis.call('GET', marker)
  local replication = redis.pcall('INFO', 'replication')
  local replid = type(replication) == 'string' and string.match(replication, '\nmaster_replid:(%x+)')
  if value and replid then
    -- The hot path: a marker stamped on this data.
    local since, why, stamp, longest, voted = string.match(value, '^(%d+) (%a+) (%x+) (%d+) (%d+)')
    if stamp == replid and tonumber(longest) >= guard_for then
      since, longest = tonumber(since), tonumber(longest)
      node_longest = longest
      if since > 0 and node_now() < since + longest then
        return facts().quarantine(since, longest, why)
      elseif node_now() < tonumber(voted) + 1000 then
        return nil
      end
    end
  end
  return judged(marker, value, type(replication) == 'string' and replication or nil, guard_for, risks)
end

-- A lock handed to a waiter (see queue.lua) names the hold of the attempt
-- that queued it; the waiter may have taken its lease from the notices,
-- with that hold. Attempt holds are "<call id>.<n>", n counting a call's
-- attempts. handed_rule says what a request of the same owner carrying
-- hold does with a key handed naming named:
--   'claim'  the request is that hold's, or a later attempt of the same
--            call (which then took no lease from the notices): the handed
--            key becomes this hold's alone
--   'keep'   another call of the same owner (a re-entry into a lease
--            taken from the notices): the named hold is kept as a hold,
--            beside this one
--   'stale'  an earlier attempt of the same call, arriving late: refused
-- A handing by an older client names '1': any request claims it.
local function attempt_of(hold)
  local call, n = string.match(hold, '^(.+)%.(%d+)$')
  return call, tonumber(n)
end

local function handed_rule(named, hold)
  if named == '1' or named == hold then
    return 'claim'
  end
  local call, n = attempt_of(named)
  local mine, m = attempt_of(hold)
  if call == nil or call ~= mine then
    return 'keep'
  end
  if m > n then
    return 'claim'
  end
  return 'stale'
end
