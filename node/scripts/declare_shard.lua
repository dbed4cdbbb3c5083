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
local f = facts()
local _, run = f.start()
local dropped = f.dropped()
-- A Cluster replica takes over without a command: promoted (or loaded
-- from disk), it may lack a lease its old primary granted.
local replid2 = string.match(redis.call('INFO', 'replication'), '\nmaster_replid2:(%x+)')
if not dropped and replid2 ~= ZERO_ID then
  dropped = 'failover'
end
-- A slot's marker: refused when it records a loss or voted within its guard.
local kept = { new = true, declared = true, cluster = true }
local refusal = not_loaded(false)
  or (dropped and { 'dropped', dropped })
  or keys_under(ARGV[1], function(key)
    if string.sub(key, 1, #ARGV[2]) ~= ARGV[2] then
      return false
    end
    local value = redis.call('GET', key)
    return value and (marker_loss(value, kept) or marker_live(value)) or true
  end)
if refusal then
  return refusal
end
local lost, evicted, commands = f.losses()
if ARGV[3] == 'declare' then
  -- Every marker read before any is written: a slot no longer here (the
  -- client's map was stale) fails the script with nothing written.
  local longest = {}
  for i = 4, #ARGV do
    local value = redis.call('GET', ARGV[i])
    longest[i] = value and marker_read(value).longest or 0
  end
  for i = 4, #ARGV do
    marker_write(ARGV[i], { since = 0, why = 'declared', stamp = replid, longest = longest[i] or 0, voted = 0,
      evicted = evicted, run = run, lost = lost, commands = commands })
  end
end
return { 'ok', replid, run or '0', tostring(evicted) }
