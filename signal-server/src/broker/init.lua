-- Gives a Redis without state (new, or restarted without persistence) its epoch, the
-- network-tag key and an id counter that starts at ARGV[3] (the time in ms), so ids handed
-- out now never repeat ones peers of an earlier epoch still hold. The epoch and the key.
-- KEYS: the epoch, the network-tag key, the id counter; ARGV[1], ARGV[2]: a new epoch and key.
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('SET', KEYS[2], ARGV[2])
  local now = tonumber(redis.call('GET', KEYS[3]) or '0')
  if now < tonumber(ARGV[3]) then redis.call('SET', KEYS[3], ARGV[3]) end
end
return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])}
