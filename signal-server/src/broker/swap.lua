-- Replaces a peer's record if it still holds ARGV[2] (the one its taker read): 1 if so.
-- KEYS[1]: the room's peers; ARGV[1]: the peer's id; ARGV[3]: its new record.
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
