-- marker: the node's marker key (one per node; on a Redis Cluster node one
-- per slot), its one reader and its one writer. It holds
-- "<since> <why> <stamp> <longest> <voted> <evicted> <run> <lost> <commands>":
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
--   commands its total_commands_processed: CONFIG RESETSTAT sets it back
-- Why each field: docs/restart-guard.md.

-- number reads a decimal field; nil past 15 digits (not a time or count
-- that string.format could write back).
local function number(field)
  return #field <= 15 and tonumber(field) or nil
end

-- marker_read returns the marker as a table, or nil when value is not a
-- marker. Older versions' markers ("<ms> <why> <replid> <longest> <voted>
-- <evicted> <run>", "<ms> <why> <run_id>", "0 <run_id>", "0") read with
-- the fields they lack as 0, none.
local function marker_read(value)
  local since, why, stamp, longest, voted, evicted, run, lost, commands =
    string.match(value, '^(%d+) (%a+) (%x+) (%d+) (%d+) (%d+) (%x+) ?(%d*) ?(%d*)$')
  if since then
    local m = { since = number(since), why = why, stamp = stamp, longest = number(longest), voted = number(voted),
      evicted = number(evicted), run = run, lost = number(lost ~= '' and lost or '0'),
      commands = number(commands ~= '' and commands or '0') }
    return m.since and m.longest and m.voted and m.evicted and m.lost and m.commands and m or nil
  end
  local first, second
  since, first, second = string.match(value, '^(%d+) ?(%w*) ?(%w*)$')
  if not since or not number(since) then
    return nil
  end
  local m = { since = number(since), why = first ~= '' and first or 'lost', stamp = second,
    longest = 0, voted = 0, evicted = 0, lost = 0 }
  if #(first or '') == 40 then
    m.why, m.stamp = 'new', first
  end
  return m
end

-- marker_head reads the fields the guard's hot path needs (since, why,
-- stamp, longest, voted), without a table; nil when they are not there or
-- not numbers marker_write could write. The rest is read (and a value this
-- version would not write refused) by marker_read on the slow path, at the
-- latest a second on: matching the whole value here costs every call.
--
-- heads keeps its answers by value while the library is loaded (nil in an
-- EVAL script: every call starts afresh), so that a Cluster shard's call
-- over many slots parses each slot's marker once, not at every call. A
-- pure parse: a value reads the same whenever it is read.
local heads
local heads_kept = 0
local function marker_head(value)
  local head = heads and heads[value]
  if head then
    return head[1], head[2], head[3], head[4], head[5]
  end
  local since, why, stamp, longest, voted = string.match(value, '^(%d+) (%a+) (%x+) (%d+) (%d+) ')
  if not (since and #since <= 15 and #longest <= 15 and #voted <= 15) then
    return nil
  end
  since, longest, voted = tonumber(since), tonumber(longest), tonumber(voted)
  if heads then
    if heads_kept >= 16384 then
      heads, heads_kept = {}, 0 -- a slot's marker each on a shard, at most
    end
    heads[value], heads_kept = { since, why, stamp, longest, voted }, heads_kept + 1
  end
  return since, why, stamp, longest, voted
end

-- marker_write stamps m at key (not while probing: `redlock inspect`).
local function marker_write(key, m)
  if not probing then
    redis.call('SET', key, string.format('%d %s %s %d %d %d %s %d %d', m.since, m.why,
      (m.stamp or '') ~= '' and m.stamp or '0', m.longest, m.voted, m.evicted or 0, m.run or '0', m.lost or 0,
      m.commands or 0))
  end
end
