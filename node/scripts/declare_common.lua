-- declare_common: what declare.lua and declare_shard.lua share, put after
-- guard.lua in front of each: the node's replication id and the refusals
-- a marker's value, the load from disk and the keys under the prefix give.

-- marker_loss: {"marker", value} when the marker records a loss (a rule
-- not in kept: since 0 is a declaration, 'new' a missing marker without a
-- drop), else nil.
local function marker_loss(value, kept)
  local m = marker_read(value)
  if m == nil or (m.since > 0 and not kept[m.why]) then
    return { 'marker', value }
  end
  return nil
end

-- marker_live: {"live", value, ms} when the marker voted so recently that
-- a lease it granted may be live: voted is refreshed at most once a second
-- while the node votes, so such a lease ends by voted + 1 s + the longest
-- guard (at least its TTL); else nil.
local function marker_live(value)
  local m = marker_read(value)
  local live_until = m.voted + m.longest + 1000
  if m.voted > 0 and live_until > node_now() then
    return { 'live', value, tostring(live_until - node_now()) }
  end
  return nil
end

-- not_loaded: {"loaded", count} when the process loaded keys from disk at
-- its start (or cannot say: Redis before 7), unless excused; else nil.
local function not_loaded(excused)
  local loaded = string.match(redis.call('INFO', 'persistence'), '\nrdb_last_load_keys_loaded:(%d+)') or 'unknown'
  if loaded ~= '0' and not excused then
    return { 'loaded', loaded }
  end
  return nil
end

-- keys_under SCANs the keys matching pattern. visit(key) returns a refusal
-- (returned at once), true to leave the key out, or false. The reply is
-- that refusal, {"keys", up to 10 keys left in}, or nil when none is.
local function keys_under(pattern, visit)
  local found = { 'keys' }
  local cursor = '0'
  repeat
    local page = redis.call('SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = page[1]
    for _, key in ipairs(page[2]) do
      local seen = visit(key)
      if type(seen) == 'table' then
        return seen
      elseif not seen and #found <= 10 then
        found[#found + 1] = key
      end
    end
  until cursor == '0' or #found > 10
  if #found > 1 then
    return found
  end
  return nil
end

-- the node's replication id (master_replid), or an error reply.
local replid = string.match(redis.call('INFO', 'replication'), '\nmaster_replid:(%x+)')
if not replid then
  return redis.error_reply('ERR redlock: INFO replication has no master_replid')
end
