-- lower: lower the longest guard the node's marker records to ARGV[2] ms,
-- where that is safe: the node votes now (its data is complete: it holds
-- every lease it granted), and every key under the prefix ends within the
-- new guard, so no lease it granted outlives it (docs/restart-guard.md,
-- "Lowering the longest guard"). Put after guard.lua and declare_common.
--
-- KEYS[1]  the node's marker
-- ARGV[1]  a SCAN pattern matching every key under the prefix
-- ARGV[2]  the guard to lower to, in ms
--
-- Reply: {"lowered", from} or {"kept", longest} (not longer than asked);
--        {"live", key, ms left} for a key that outlives it; {"marker",
--        value} without a marker; or the guard's refusal (an error).
local to = tonumber(ARGV[2])
local value = redis.call('GET', KEYS[1])
local m = value and marker_read(value)
if not m then
  return { 'marker', value or '' }
elseif m.longest <= to then
  return { 'kept', tostring(m.longest) }
end
local refused = guard(KEYS[1], tostring(m.longest))
if refused then
  return refused
end
local live = keys_under(ARGV[1], function(key)
  local left = redis.call('PTTL', key)
  if left > to then
    return { 'live', key, tostring(left) }
  end
  return true
end)
if live then
  return live
end
m = marker_read(redis.call('GET', KEYS[1]))
local from = m.longest
m.longest = to
marker_write(KEYS[1], m)
return { 'lowered', tostring(from) }
