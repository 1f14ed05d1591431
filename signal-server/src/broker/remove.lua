-- Drops a peer, and the host seat if it holds it (and an emptied room, with its application,
-- topology and seat, which the next first member chooses afresh): with ARGV[2], only if its
-- record is still that one.
-- KEYS: the room's peers, the set of rooms, the room's application, topology and host seat;
-- ARGV[1]: the peer's id; ARGV[3]: the room.
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
local gone = redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('GET', KEYS[5]) == ARGV[1] then redis.call('DEL', KEYS[5]) end
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[3])
  redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
end
return gone
