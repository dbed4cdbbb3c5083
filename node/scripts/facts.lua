-- facts: what the guard asks the node past its hot path, each INFO section
-- read at most once per call. Defined by the first call that needs it
-- (defining it costs every script otherwise). Every INFO goes through
-- redis.pcall: a refused one reads as nil, and each fact then says so.

-- ZERO_ID is master_replid2 when the data continues no earlier history (a
-- literal: a library's load may not call string functions at its top).
local ZERO_ID = '0000000000000000000000000000000000000000'
-- process_run: the run_id f.run read, kept across calls in the library
-- (the process's own for its whole life); nil at every EVAL.
local process_run

-- count sums the calls INFO commandstats counted of each command named;
-- names are matched as plain text ('restore-asking' holds a '-').
local function count(stats, names)
  local sum = 0
  for _, name in ipairs(names) do
    local _, at = string.find(stats, '\ncmdstat_' .. name .. ':calls=', 1, true)
    sum = sum + (at and tonumber(string.match(stats, '^%d+', at + 1)) or 0)
  end
  return sum
end

-- The calls that drop or replace keys in a running process (before Redis 7
-- any CONFIG counts, as CONFIG RESETSTAT would hide them; MOVE takes keys
-- to another database).
local LOSSES = { 'flushall', 'flushdb', 'swapdb', 'move', 'debug', 'restore', 'config|resetstat', 'config' }
local PROMOTIONS = { 'replicaof', 'slaveof', 'failover', 'config|resetstat', 'config' }
local SLOT_MOVES = { 'cluster|setslot', 'cluster|addslots', 'cluster|addslotsrange', 'cluster|delslots',
  'cluster|delslotsrange', 'cluster|failover', 'cluster|reset', 'cluster|replicate', 'restore', 'restore-asking' }

local function facts()
  if node_facts then
    return node_facts
  end
  local f = {}
  local function int_field(info, name)
    return tonumber(string.match(info, '\n' .. name .. ':(%-?%d+)'))
  end
  local sections = {}
  local function info(section)
    if sections[section] == nil then
      local text = redis.pcall('INFO', section)
      -- A section without a single field (a proxy that blanks it) says
      -- nothing happened only by hiding it: read as refused.
      sections[section] = type(text) == 'string' and string.find(text, '\n[%w_|%-]+:') ~= nil and text or false
    end
    return sections[section] or nil
  end
  -- counted is count, once per call for each list: a call on a Cluster
  -- shard may judge many slots' markers.
  local counts = {}
  local function counted(stats, list, names)
    counts[list] = counts[list] or count(stats, names)
    return counts[list]
  end
  -- f.start: an upper bound of the process start in node ms (the node
  -- knows it to the second), and the run_id; nil when INFO is refused. An
  -- uptime below zero (the clock stepped back past the start) is now.
  function f.start()
    local server = info('server') or ''
    local uptime = int_field(server, 'uptime_in_seconds')
    if not uptime then
      return nil
    end
    local start = math.min((math.floor(node_now() / 1000) - math.max(uptime, 0) + 1) * 1000, node_now())
    return start, string.match(server, '\nrun_id:(%x+)')
  end
  -- f.run: the process's run_id (f.start's), kept while the library is
  -- loaded (a process's for its life): INFO server only when needed.
  function f.run()
    if not process_run then
      process_run = select(2, f.start())
    end
    return process_run
  end
  -- f.cluster: a Redis Cluster node: its replicas take over without a
  -- command, and a slot's marker may come or go with the slot.
  function f.cluster()
    local text = info('cluster')
    return text == nil or int_field(text, 'cluster_enabled') ~= 0
  end
  -- f.slots_came: a Cluster node may serve a slot whose data lived
  -- elsewhere since its start: promoted (replid2 set: failover, or data
  -- loaded from disk), or slots assigned or imported by command.
  function f.slots_came(replid2)
    local stats = info('commandstats')
    return stats == nil or (replid2 or '') ~= ZERO_ID or counted(stats, 'moves', SLOT_MOVES) > 0
  end
  -- f.promoted: the node's role may have changed since its start: it may
  -- lack writes its old primary acknowledged. continued (master_replid2
  -- set): a sync served since the start may be the PSYNC of a primary's
  -- FAILOVER, which promotes without a command on this node.
  function f.promoted(continued)
    local stats = info('commandstats')
    return stats == nil or counted(stats, 'promotions', PROMOTIONS) > 0
      or (continued and counted(stats, 'syncs', { 'psync', 'sync' }) > 0)
  end
  -- f.losses: the calls since the start that dropped or replaced keys
  -- (LOSSES), the keys evicted, and the commands processed (all three
  -- set back by CONFIG RESETSTAT); nil when INFO is refused.
  function f.losses()
    local stats, others = info('commandstats'), info('stats')
    if stats == nil or others == nil then
      return nil
    end
    return counted(stats, 'losses', LOSSES), int_field(others, 'evicted_keys') or 0,
      int_field(others, 'total_commands_processed') or 0
  end
  -- f.dropped: why keys may have gone since the start other than by
  -- expiry or a lock script; nil when none did.
  function f.dropped()
    local lost, evicted = f.losses()
    if lost == nil then
      return 'unknown'
    elseif lost > 0 or evicted > 0 then
      return 'flushed'
    elseif f.promoted(false) then
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
  -- Each fact is read once per call: a call on a Cluster shard may judge
  -- many slots' markers, and each read scans kilobytes of INFO.
  for _, name in ipairs({ 'start', 'cluster', 'losses', 'evicts' }) do
    local read, done, a, b, c = f[name], false, nil, nil, nil
    f[name] = function()
      if not done then
        done, a, b, c = true, read()
      end
      return a, b, c
    end
  end
  node_facts = f
  return f
end
