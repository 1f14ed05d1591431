-- Stores a peer's record (ARGV[2]) under its id (ARGV[1]) in the room's peers (KEYS[1]): 1 once
-- stored. With ARGV[3] 'if-present', only where its place still is (a reservation's placeholder,
-- or its record): 0 when it is gone, because another join replaced the peer meanwhile (the
-- replacing instance removed it), and nothing is written. The room (ARGV[5]) goes in the set
-- of rooms (KEYS[2]). A join (ARGV[4], the room's channel, not '') also puts, unless Redis holds
-- them, the room's application (KEYS[3] <- ARGV[6]), topology (KEYS[4] <- ARGV[7]), a
-- host's seat (KEYS[5] <- ARGV[1] when ARGV[8] is '1') and the identity's peer (KEYS[6], field
-- ARGV[9] when not ''), then tells the room (ARGV[10] published on ARGV[4]).
if ARGV[3] == 'if-present' and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[5])
if ARGV[4] ~= '' then
  redis.call('SET', KEYS[3], ARGV[6], 'NX')
  redis.call('SET', KEYS[4], ARGV[7], 'NX')
  if ARGV[8] == '1' then redis.call('SET', KEYS[5], ARGV[1], 'NX') end
  if ARGV[9] ~= '' then redis.call('HSETNX', KEYS[6], ARGV[9], ARGV[1]) end
  redis.call('PUBLISH', ARGV[4], ARGV[10])
end
return 1
