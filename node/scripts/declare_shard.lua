-- declare_shard: declare.lua for one shard of a Redis Cluster member,
-- whose markers are one per slot ("<marker>:{<tag>}"), checked and
-- written in one script (flags=allow-cross-slot-keys: the keys of many
-- slots of this shard), so that nothing can drop data between the check
-- and the declaration. A slot's marker that records no loss (new,
-- declared, or a slot not proven unseen: cluster) and never voted within
-- its guard passes.
--
-- ARGV[1]  a SCAN pattern matching every key under the prefix
-- ARGV[2]  the slot markers' names up to the hash tag ("<marker>:{")
-- ARGV[3]  "check": judge only; "declare": then write the markers
-- ARGV[4…] with "declare", the marker of every slot the shard serves
--
-- Reply: {"ok", replid, run_id, evictions} when the shard passes (and,
--        with "declare", is declared); else as declare.lua's refusals.
local replid = string.match(redis.call('INFO', 'replication'), '\nmaster_replid:(%x+)')
if not replid then
  return redis.error_reply('ERR redlock: INFO replication has no master_replid')
end
local f = facts()
local _, run = f.start()
local loaded = string.match(redis.call('INFO', 'persistence'), '\nrdb_last_load_keys_loaded:(%d+)') or 'unknown'
if loaded ~= '0' then
  return { 'loaded', loaded }
end
local dropped = f.dropped()
if dropped then
  return { 'dropped', dropped }
end
-- A Cluster replica takes over without a command: promoted (or loaded
-- from disk), it may lack a lease its old primary granted.
local replid2 = string.match(redis.call('INFO', 'replication'), '\nmaster_replid2:(%x+)')
if replid2 ~= string.rep('0', 40) then
  return { 'dropped', 'failover' }
end
-- judge returns a refusal for a slot marker's value, or nil.
local function judge(value)
  local since, why, _, longest, voted = f.parse(value)
  if since == nil or (since > 0 and why ~= 'new' and why ~= 'declared' and why ~= 'cluster') then
    return { 'marker', value }
  end
  local live_until = voted + longest + 1000
  if voted > 0 and live_until > node_now() then
    return { 'live', value, tostring(live_until - node_now()) }
  end
  return nil
end
local found = { 'keys' }
local cursor = '0'
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    if string.sub(key, 1, #ARGV[2]) == ARGV[2] then
      local refusal = judge(redis.call('GET', key))
      if refusal then
        return refusal
      end
    elseif #found <= 10 then
      found[#found + 1] = key
    end
  end
until cursor == '0' or #found > 10
if #found > 1 then
  return found
end
local evictions = f.evictions()
if ARGV[3] == 'declare' then
  -- Every marker read before any is written: a slot no longer here (the
  -- client's map was stale) fails the script with nothing written.
  local longest = {}
  for i = 4, #ARGV do
    local value = redis.call('GET', ARGV[i])
    longest[i] = value and select(4, f.parse(value)) or 0
  end
  for i = 4, #ARGV do
    f.stamp(ARGV[i], 0, 'declared', replid, longest[i] or 0, 0, run, evictions)
  end
end
return { 'ok', replid, run or '0', tostring(evictions) }
