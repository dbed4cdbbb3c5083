-- handed: who may claim a lock handed to a waiter (see queue.lua). The
-- handing names the hold of the attempt that queued it; the waiter may
-- have taken its lease from the notices, with that hold. Attempt holds are
-- "<call id>.<n>", n counting a call's attempts. handed_rule says what a
-- request of the same owner carrying hold does with a key handed naming
-- named:
--   'claim'  the request is that hold's, or a later attempt of the same
--            call (which then took no lease from the notices): the handed
--            key becomes this hold's alone
--   'keep'   another call of the same owner (a re-entry into a lease
--            taken from the notices): the named hold is kept beside this one
--   'stale'  an earlier attempt of the same call, arriving late: refused
-- A handing by an older client names '1': any request claims it.
local function attempt_of(hold)
  local call, n = string.match(hold, '^(.+)%.(%d+)$')
  return call, tonumber(n)
end

local function handed_rule(named, hold)
  if named == '1' or named == hold then
    return 'claim'
  end
  local call, n = attempt_of(named)
  local mine, m = attempt_of(hold)
  if call == nil or call ~= mine then
    return 'keep'
  end
  if m > n then
    return 'claim'
  end
  return 'stale'
end
