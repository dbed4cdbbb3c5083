-- declare: mark a brand-new node, one that never held a lock, as complete
-- since forever for its current process, so that it votes at once (see
-- guard.lua: "0 <run_id>"). Refused while any key under the prefix
-- exists, when the process loaded keys from disk at its start (or cannot
-- say: Redis before 7), when keys were dropped since it started (a flush,
-- an eviction: guard.lua's facts), or when the marker records a loss. A
-- node restarted empty looks brand-new all the same: that is for the
-- operator to know (docs/restart-guard.md).
--
-- KEYS[1]  the node's marker
-- ARGV[1]  a SCAN pattern matching every key under the prefix
-- ARGV[2]  the marker's own name as that pattern would list it
--
-- Reply: {} when declared; else {"keys", up to 10 key names},
--        {"marker", its value}, {"loaded", the count of keys loaded, or
--        "unknown"} or {"dropped", why}.
local server = redis.call('INFO', 'server')
local run = string.match(server, '\nrun_id:(%x+)')
if not run then
  return redis.error_reply('ERR redlock: INFO server has no run_id')
end
local marker = redis.call('GET', KEYS[1])
if marker and not (string.match(marker, '^0') or string.match(marker, '^%d+ new')) then
  return { 'marker', marker }
end
local loaded = string.match(redis.call('INFO', 'persistence'), '\nrdb_last_load_keys_loaded:(%d+)') or 'unknown'
if loaded ~= '0' and marker ~= '0 ' .. run then
  return { 'loaded', loaded }
end
local dropped = facts().dropped()
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
redis.call('SET', KEYS[1], '0 ' .. run)
return {}
