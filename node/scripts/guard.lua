-- guard: a node that may have forgotten a lease does not vote until every
-- lease it may have granted has ended; put (after call.lua, facts.lua,
-- marker.lua) in front of every voting script and queue.lua. The rules,
-- numbered as here, and why they hold: docs/restart-guard.md, model/.

-- The verdicts: "QUARANTINED <since> <until> <why> <left>" (node ms; left:
-- from now to until) when the node may have forgotten a lease, "UNGUARDED
-- <why>" when it cannot tell and the user did not accept that risk.
local function quarantine(since, guard_for, why)
  local left = since + guard_for - node_now()
  return redis.error_reply(string.format('QUARANTINED %d %d %s %d', since, since + guard_for, why, left))
end

local function unguarded(why) return redis.error_reply('UNGUARDED ' .. why) end
local function accepts(risks, risk) return string.find(risks, risk, 1, true) ~= nil end

-- blind: rule 7 with RiskNoInfo accepted: a missing marker counts from
-- now, a marker is trusted as it is.
local function blind(key, value, guard_for)
  local m = value and marker_read(value)
  if value and not m then
    return redis.error_reply('ERR redlock: the node marker is not a time')
  elseif not m or guard_for > m.longest then
    m = m or { since = node_now(), why = 'unknown', stamp = '0', voted = 0 }
    m.longest = math.max(m.longest or 0, guard_for)
    marker_write(key, m)
  end
  if m.since > 0 and node_now() < m.since + m.longest then
    return quarantine(m.since, m.longest, m.why)
  end
  return nil
end

-- missing: rules 2 and 3, a node without its marker.
local function missing(f, start, replication, now)
  local dropped = f.dropped()
    or (f.cluster() and f.slots_came(string.match(replication, '\nmaster_replid2:(%x+)')) and 'cluster')
  if dropped or not start then
    return now, dropped or 'unknown'
  end
  return start, 'new'
end

-- moved: rules 4, 5, 6 and 10, a marker stamped on other data.
local function moved(f, m, start, run, replid2, now)
  if (m.stamp == run or (m.run == run and replid2 == ZERO_ID)) and not f.promoted(false) then
    return m.since, m.why -- 4: this process stamped it, never a replica since
  elseif not start or f.promoted(replid2 ~= ZERO_ID) or f.cluster() then
    return math.max(m.since, now), start and 'failover' or 'unknown' -- 5
  elseif m.voted > start or m.since > start then
    return now, 'restarted' -- 10: stamped after this start: the clock stepped
  end
  return math.max(m.since, start), 'restarted' -- 6, append-only file or not
end

-- lost: rule 9, keys dropped or replaced since the marker counted them
-- (by this process: fewer commands than it counted is a CONFIG RESETSTAT
-- since), or since the start (a marker of another process).
local function lost(m, run, losses, evicted, commands, risks)
  local evicts = not accepts(risks, 'e')
  if m.run == run then
    return m.lost ~= losses or (evicts and m.evicted ~= evicted) or commands < (m.commands or 0)
  end
  return losses > 0 or (evicts and evicted > 0)
end

-- refused: rule 7, what the node cannot show or keep; nil if none.
local function refused(f, replication, risks)
  if not string.find(replication, '\nrole:master', 1, true) then
    return unguarded('replica') -- a resync replaces its data, marker and all
  end
  local policy = f.evicts()
  return policy and not accepts(risks, 'e') and unguarded('evicts ' .. policy) or nil
end

-- judged: the guard's slow path, for a marker missing, unreadable or
-- stamped on other data, for a node that cannot tell its replication id,
-- and once a second for a node that votes.
local function judged(key, value, replication, guard_for, risks)
  local f = facts()
  local replid = node_replication.replid or (replication and string.match(replication, '\nmaster_replid:(%x+)'))
  if not replid then -- 7
    if accepts(risks, 'i') then return blind(key, value, guard_for) end
    return unguarded('noinfo')
  end
  local refusal = refused(f, replication, risks)
  if refusal then return refusal end
  local m = value and marker_read(value)
  if value and not m then
    return redis.error_reply('ERR redlock: the node marker is not a time')
  end
  local now = node_now()
  local run = f.run()
  local losses, evicted, commands = f.losses()
  if losses == nil and not accepts(risks, 'i') then
    return unguarded('noinfo') -- 7: commandstats or stats refused
  end
  local since, why
  if not m then
    since, why = missing(f, f.start(), replication, now) -- 2, 3
    m = { voted = 0 }
  else
    since, why = math.min(m.since, now), m.why -- 10: a since ahead of now: the clock stepped back
    if m.stamp ~= replid then
      m.since = since
      since, why = moved(f, m, f.start(), run, string.match(replication, '\nmaster_replid2:(%x+)'), now)
    end
    if losses and lost(m, run, losses, evicted, commands, risks) then
      since, why = math.max(since, now), 'flushed' -- 9
    end
  end
  local longest = math.max(m.longest or 0, guard_for)
  node_longest = longest
  local votes = since == 0 or now >= since + longest
  marker_write(key, { since = since, why = why, stamp = replid, longest = longest,
    voted = votes and now or math.min(m.voted, now), evicted = evicted, run = run, lost = losses, commands = commands })
  return (not votes) and quarantine(since, longest, why) or nil
end

-- guard returns nil when the node may vote, or a verdict. guard_arg is
-- "<ms>[:<letters>]" ("0": the guard is off), a letter per risk the user
-- accepted (i: INFO refused, e: eviction).
local function guard(key, guard_arg)
  local guard_for, risks = tonumber(guard_arg), ''
  if not guard_for then
    local ms
    ms, risks = string.match(guard_arg, '^(%d+):(%a*)$')
    guard_for = tonumber(ms) or error('ERR redlock: the restart guard is not a number of ms')
  end
  if guard_for <= 0 then return nil end
  local value = redis.call('GET', key)
  if node_replication == nil then
    local text = redis.pcall('INFO', 'replication')
    text = type(text) == 'string' and text or nil
    node_replication = { text = text, replid = text and
      string.match(text, '^# Replication\r\nrole:master\r\n.-\nmaster_replid:(%x+)') }
  end
  local replication = node_replication.text
  -- 1, the hot path: a marker stamped on this data, on a primary, with
  -- times not ahead of the node's clock (10).
  local replid = node_replication.replid
  if value and replid then
    local since, why, stamp, longest, voted = marker_head(value)
    if stamp == replid and longest >= guard_for and since <= node_now() then
      node_longest = longest
      if since > 0 and node_now() < since + longest then
        return quarantine(since, longest, why)
      elseif voted <= node_now() and node_now() < voted + 1000 then
        return nil
      end
    end
  end
  return judged(key, value, replication, guard_for, risks)
end

-- guard_all runs guard on the markers keys[first..#keys] (on a Cluster
-- shard, one per slot a call spans): a verdict, or nil when every one may
-- vote; node_longest the longest any records.
local function guard_all(keys, first, guard_arg)
  local verdict, longest = nil, 0
  for i = first, #keys do
    verdict = guard(keys[i], guard_arg) or verdict
    longest = math.max(longest, node_longest or 0)
  end
  node_longest = longest
  return verdict
end
