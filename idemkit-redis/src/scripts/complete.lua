-- Complete. ARGV: token, time to live from now (µs), status, headers, body.
-- Reply: {1 if stored else 0, now}.
if not held(ARGV[1]) then
  return {0, int(now)}
end
local gone_at = now + tonumber(ARGV[2])
redis.call('HSET', key, 's', 'completed', 'cd', int(now), 'ga', int(gone_at),
  'st', ARGV[3], 'h', ARGV[4], 'b', ARGV[5])
expire_after(gone_at)
redis.call('PUBLISH', key, 'completed')
return {1, int(now)}
