-- Takes a place in a room if it has one and may exist, as {answer, room's app or topology, or
-- the peer the join replaces}: answer 0 when it is full (ARGV[1] peers, the cap of the join's
-- topology), -1 when the server holds too many rooms, -2 when the client created too many rooms
-- this minute, -3 when the room plays another application than ARGV[6] (then with the room's),
-- -4 when it links otherwise than ARGV[7] (then with the room's topology), -5 when the join is a
-- host's (ARGV[8] is 1) and the room's host seat is another peer's (then with its id);
-- otherwise the new peer's id, held by a placeholder until the join's record replaces it, and for
-- a host the seat's, with the id of the peer that held the join's identity (ARGV[9], '' for
-- none) or ''. The places of the peers listed in ARGV[2] (space-separated: the join's program's
-- old peer, a dropped host's seat) are the join's, and so is the seat if one of them holds it.
-- So is the place of the identity's holder (KEYS[8] maps each identity to its peer): the
-- identity is the new peer's from here on, whichever instances its joins reach, and the joining
-- instance replaces the holder (its removal drops the record; a record of it written after that
-- finds no place, see put.lua). The first member (none other left but those)
-- fixes the room's application and topology; a room whose application or topology Redis lost
-- (a restart) takes the joiner's.
local peers, counter, rooms, created = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local app_key, topology_key, host_key, identities = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local max_peers, taken, room = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local max_rooms, per_ip, app, topology = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7]
local host, identity = ARGV[8] == '1', ARGV[9]
local n = redis.call('HLEN', peers)
if n == 0 then
  if redis.call('SCARD', rooms) >= max_rooms then return {-1, ''} end
  local made = redis.call('INCR', created)
  if made == 1 then redis.call('EXPIRE', created, 60) end
  if made > per_ip then return {-2, ''} end
end
local given = {}
for id in string.gmatch(taken, '%d+') do
  given[id] = true
  if redis.call('HEXISTS', peers, id) == 1 then n = n - 1 end
end
local replaced = ''
if identity ~= '' then
  local holder = redis.call('HGET', identities, identity)
  if holder and redis.call('HEXISTS', peers, holder) == 1 then
    replaced = holder
    if not given[holder] then
      given[holder] = true
      n = n - 1
    end
  end
end
local current = redis.call('GET', app_key)
if n > 0 and current and current ~= app then return {-3, current} end
local shape = redis.call('GET', topology_key)
if n > 0 and shape and shape ~= topology then return {-4, shape} end
if host then
  local seat = redis.call('GET', host_key)
  if seat and not given[seat] and redis.call('HEXISTS', peers, seat) == 1 then
    return {-5, seat}
  end
end
if n >= max_peers then return {0, ''} end
local id = redis.call('INCR', counter)
redis.call('HSET', peers, id, 'reserved')
redis.call('SADD', rooms, room)
redis.call('SET', app_key, app)
redis.call('SET', topology_key, topology)
if host then redis.call('SET', host_key, id) end
if identity ~= '' then redis.call('HSET', identities, identity, id) end
return {id, replaced}
