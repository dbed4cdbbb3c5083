-- declare: mark a brand-new node, one that never held a lock, as complete
-- since forever for the data it holds now ("0 declared <replid> <longest>
-- 0", see guard.lua), so that it votes at once. Refused while any key
-- under the prefix exists, when the process loaded keys from disk at its
-- start (or cannot say: Redis before 7), when keys were dropped since it
-- started (a flush, an eviction, a failover: guard.lua's facts), when the
-- marker records a loss, or when the node voted so recently that a lease
-- it granted may still be live. A node restarted empty looks brand-new all
-- the same: node.DeclareSet judges the whole set for that.
--
-- KEYS[1]  the node's marker
-- ARGV[1]  a SCAN pattern matching every key under the prefix
-- ARGV[2]  the marker's own name as that pattern would list it
-- ARGV[3]  "check": judge only, write nothing; "declare": write the marker
--
-- Reply: {} when it passes (and, with "declare", is declared); else
--        {"marker", its value}, {"live", its value, ms until a lease it
--        granted has surely ended}, {"loaded", the count of keys loaded,
--        or "unknown"}, {"dropped", why} or {"keys", up to 10 key names}.
local replid = string.match(redis.call('INFO', 'replication'), '\nmaster_replid:(%x+)')
if not replid then
  return redis.error_reply('ERR redlock: INFO replication has no master_replid')
end
local f = facts()
local _, run = f.start()
local value = redis.call('GET', KEYS[1])
local since, why, stamp, longest, voted = nil, nil, nil, 0, 0
if value then
  since, why, stamp, longest, voted = f.parse(value)
  -- since 0: declared (by this version or an older one); new: the rule for
  -- a missing marker without a drop. Any other rule records a loss.
  if since == nil or (since > 0 and why ~= 'new' and why ~= 'declared') then
    return { 'marker', value }
  end
end
-- A marker this process declared counts the keys loaded with it, if any.
local declared = since == 0 and (stamp == replid or (run ~= nil and stamp == run))
local loaded = string.match(redis.call('INFO', 'persistence'), '\nrdb_last_load_keys_loaded:(%d+)') or 'unknown'
if loaded ~= '0' and not declared then
  return { 'loaded', loaded }
end
local dropped = f.dropped()
if dropped then
  return { 'dropped', dropped }
end
local found = { 'keys' }
local cursor = '0'
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    if key ~= ARGV[2] and #found <= 10 then
      found[#found + 1] = key
    end
  end
until cursor == '0' or #found > 10
if #found > 1 then
  return found
end
-- voted is refreshed at most once a second while the node votes: a lease
-- granted since ends by voted + 1 s + the longest guard (at least its TTL).
local live_until = voted + longest + 1000
if voted > 0 and live_until > node_now() then
  return { 'live', value, tostring(live_until - node_now()) }
end
if ARGV[3] == 'declare' then
  f.stamp(KEYS[1], 0, 'declared', replid, longest, 0, run, f.evictions())
end
return {}
