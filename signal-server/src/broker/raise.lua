-- Raises the id counter (KEYS[1]) to at least ARGV[1] (after Redis came back empty).
local now = tonumber(redis.call('GET', KEYS[1]) or '0')
if now < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
