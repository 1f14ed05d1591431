-- Drops a peer, and the host seat if it holds it, and its identity if that is still its (and an
-- emptied room, with its application, topology, seat and identities, which the next first
-- member chooses afresh): with ARGV[2], only if its record is still that one.
-- KEYS: the room's peers, the set of rooms, the room's application, topology, host seat and
-- identities; ARGV[1]: the peer's id; ARGV[3]: the room; ARGV[4]: its identity when its record
-- cannot say (a placeholder's), or ''; ARGV[5]: for a released reservation, the peer it was to
-- replace, or '': the identity goes back to it if it is still in the room.
local record = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[2] ~= '' and record ~= ARGV[2] then return 0 end
local identity = ARGV[4]
if identity == '' and record and record ~= 'reserved' then
  local ok, decoded = pcall(cjson.decode, record)
  if ok and type(decoded) == 'table' and type(decoded.info) == 'table'
      and type(decoded.info.identity) == 'string' then
    identity = decoded.info.identity
  end
end
local gone = redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('GET', KEYS[5]) == ARGV[1] then redis.call('DEL', KEYS[5]) end
if identity ~= '' and redis.call('HGET', KEYS[6], identity) == ARGV[1] then
  if ARGV[5] ~= '' and redis.call('HEXISTS', KEYS[1], ARGV[5]) == 1 then
    redis.call('HSET', KEYS[6], identity, ARGV[5])
  else
    redis.call('HDEL', KEYS[6], identity)
  end
end
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[3])
  redis.call('DEL', KEYS[3], KEYS[4], KEYS[5], KEYS[6])
end
return gone
