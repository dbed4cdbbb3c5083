-- marker: the node's marker key (one per node; on a Redis Cluster node one
-- per slot), its one reader and its one writer. It holds
-- "<since> <why> <stamp> <longest> <voted> <evicted> <run> <lost>":
--   since    node ms since which the node's data is complete (0: forever,
--            as `redlock init` declares)
--   why      the rule that set since (node/guard.go's Why constants)
--   stamp    the replication id of the data it was stamped on
--   longest  the longest guard any call asked here (ms)
--   voted    when the node last voted (refreshed once a second)
--   evicted  the keys the stamping process had evicted
--   run      the run_id of the process that stamped it
--   lost     the calls that drop or replace data (facts.lua f.losses) the
--            stamping process had counted
-- Why each field: docs/restart-guard.md.

-- marker_read returns the marker as a table, or nil when value is not a
-- marker. Older versions' markers ("<ms> <why> <replid> <longest> <voted>
-- <evicted> <run>", "<ms> <why> <run_id>", "0 <run_id>", "0") read with
-- the fields they lack as 0, none.
local function marker_read(value)
  local since, why, stamp, longest, voted, evicted, run, lost =
    string.match(value, '^(%d+) (%a+) (%x+) (%d+) (%d+) (%d+) (%x+) ?(%d*)$')
  if since then
    return { since = tonumber(since), why = why, stamp = stamp, longest = tonumber(longest),
      voted = tonumber(voted), evicted = tonumber(evicted), run = run, lost = tonumber(lost) or 0 }
  end
  local first, second
  since, first, second = string.match(value, '^(%d+) ?(%w*) ?(%w*)$')
  if not since then
    return nil
  end
  local m = { since = tonumber(since), why = first ~= '' and first or 'lost', stamp = second,
    longest = 0, voted = 0, evicted = 0, lost = 0 }
  if #(first or '') == 40 then
    m.why, m.stamp = 'new', first
  end
  return m
end

-- marker_head reads the fields the guard's hot path needs (since, why,
-- stamp, longest, voted: the head of every format marker_read reads
-- whole), as numbers where they are, without a table; nil when it cannot.
local function marker_head(value)
  local since, why, stamp, longest, voted = string.match(value, '^(%d+) (%a+) (%x+) (%d+) (%d+)')
  if since then
    return tonumber(since), why, stamp, tonumber(longest), tonumber(voted)
  end
  return nil
end

-- marker_write stamps m at key (not while probing: `redlock inspect`).
local function marker_write(key, m)
  if not probing then
    redis.call('SET', key, string.format('%d %s %s %d %d %d %s %d', m.since, m.why,
      (m.stamp or '') ~= '' and m.stamp or '0', m.longest, m.voted, m.evicted or 0, m.run or '0', m.lost or 0))
  end
end
