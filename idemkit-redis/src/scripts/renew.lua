-- Renew. ARGV: token, lease (µs), reclaim grace (µs). Reply: {1 if renewed else 0, now}.
-- Touches the lease and the key's expiry only, never the response fields.
if not held(ARGV[1]) then
  return {0, int(now)}
end
local lease_until = now + tonumber(ARGV[2])
local gone_at = lease_until + tonumber(ARGV[3])
redis.call('HSET', key, 'lu', int(lease_until), 'ga', int(gone_at))
expire_after(gone_at)
return {1, int(now)}
