-- release: drop one hold; the last hold deletes the lock and publishes a
-- release notice. Releasing a hold twice is harmless.
--
-- KEYS[1]  lock hash (see acquire.lua)
-- ARGV[1]  owner id
-- ARGV[2]  hold id
-- ARGV[3]  release channel; the notice's payload is the hold id
--
-- Reply:  2  hold removed, it was the last: lock deleted, notice published
--         1  hold removed, other holds of this owner remain
--         0  this hold was not there (expired, or never granted): no change
--        -1  another owner holds the lock: no change
local fields = redis.call('HMGET', KEYS[1], 'owner', ARGV[2])
local holder, held = fields[1], fields[2]
if holder == false then
  return 0
end
if holder ~= ARGV[1] then
  return -1
end
if held == false then
  return 0
end
if redis.call('HLEN', KEYS[1]) > 2 then
  redis.call('HDEL', KEYS[1], ARGV[2])
  return 1
end
-- The owner field and this hold are all there is: the lock goes.
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[3], ARGV[2])
return 2
