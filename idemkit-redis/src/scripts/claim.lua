-- Claim. ARGV: token, fingerprint, fingerprint version, lease (µs), reclaim grace (µs),
-- and the token of a completed record whose response the client could not decode ('').
-- Reply: {outcome, now, note, record fields...}. Outcome 'new' or 'reclaimed' (the key
-- is now ours), 'in_flight' or 'completed' (with the record). The note says why a value
-- at the key was not a record ('' when it was, or when there was none).
local record, corrupt = load()

local function claim(outcome, replaced, note)
  local lease_until = now + tonumber(ARGV[4])
  local gone_at = lease_until + tonumber(ARGV[5])
  if replaced then
    redis.call('DEL', key)
  end
  redis.call('HSET', key, 'v', '1', 's', 'claimed', 't', ARGV[1], 'f', ARGV[2],
    'fv', ARGV[3], 'ca', int(now), 'lu', int(lease_until), 'ga', int(gone_at))
  expire_after(gone_at)
  if replaced then
    -- Whoever waited on the old record re-reads, and follows the new claim.
    redis.call('PUBLISH', key, 'claimed')
  end
  return {outcome, int(now), note}
end

if corrupt then
  return claim('new', true, corrupt)
end
if not record then
  return claim('new', false, '')
end
if now > record.gone_at then
  return claim('new', true, '')
end
if record.state == 'completed' then
  if ARGV[6] ~= '' and ARGV[6] == record.token then
    return claim('new', true, 'a stored response whose headers do not decode')
  end
  return {'completed', int(now), '', described(record)}
end
if now <= record.lease_until then
  return {'in_flight', int(now), '', described(record)}
end
return claim('reclaimed', true, '')
