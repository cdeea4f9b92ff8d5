-- Shared by every idemkit script. A record is one hash at KEYS[1]:
--   v  format version ('1')          s  state: 'claimed' or 'completed'
--   t  claim token (32 hex digits)   f  fingerprint     fv  fingerprint version
--   ca claimed at                    lu lease until     ga  gone after
--   cd completed at                  st status          h   headers    b  body
-- Instants are microseconds of the server's clock (TIME), as decimal text. The key
-- expires just after `ga`: a claim's lease plus the reclaim grace, a result's expiry.
-- Scripts only ever write the response fields (st, h, b), never read them back to
-- change them, so every script runs in constant time whatever the body's size.
local key = KEYS[1]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])

-- Beyond 2^53 a Lua number is no longer an exact integer.
local MAX_TIME = 9007199254740991

-- An integer as exact decimal text (tostring would switch to exponent form).
local function int(n)
  return string.format('%d', n)
end

-- The value of decimal text no larger than max, or nil.
local function uint(text, max)
  if type(text) ~= 'string' or #text == 0 or #text > 16 or string.match(text, '%D') then
    return nil
  end
  local n = tonumber(text)
  if n > max then
    return nil
  end
  return n
end

-- Lets the key expire just after the instant `at`.
local function expire_after(at)
  redis.call('PEXPIREAT', key, int(math.floor(at / 1000) + 1))
end

-- Whether `token` holds a claim at the key that is not gone. Reads four small fields.
local function held(token)
  local f = redis.pcall('HMGET', key, 'v', 's', 't', 'ga')
  if f['err'] or f[1] ~= '1' or f[2] ~= 'claimed' or f[3] ~= token then
    return false
  end
  local gone_at = uint(f[4], MAX_TIME)
  return gone_at ~= nil and now <= gone_at
end

-- The record at the key: a table, or nil and nothing for no key, or nil and why the
-- value at the key is not a record this version can read.
local FIELDS = {'v', 's', 't', 'f', 'fv', 'ca', 'lu', 'ga', 'cd', 'st', 'h', 'b'}
local function load()
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' then
    return nil, nil
  end
  if kind ~= 'hash' then
    return nil, 'a ' .. kind .. ' value, not a record'
  end
  local f = redis.call('HMGET', key, unpack(FIELDS))
  if f[1] ~= '1' then
    return nil, 'an unknown record format'
  end
  local state = f[2]
  if state ~= 'claimed' and state ~= 'completed' then
    return nil, 'an unknown state'
  end
  if type(f[3]) ~= 'string' or #f[3] ~= 32 or string.match(f[3], '[^0-9a-f]') then
    return nil, 'a malformed claim token'
  end
  if type(f[4]) ~= 'string' or not uint(f[5], 4294967295) then
    return nil, 'a malformed fingerprint'
  end
  local lease_until, gone_at = uint(f[7], MAX_TIME), uint(f[8], MAX_TIME)
  if not uint(f[6], MAX_TIME) or not lease_until or not gone_at then
    return nil, 'malformed instants'
  end
  if state == 'completed' then
    if not uint(f[9], MAX_TIME) or type(f[11]) ~= 'string' or type(f[12]) ~= 'string' then
      return nil, 'a malformed response'
    end
    -- An HTTP status has three digits: anything else could never be answered, so the
    -- record is corrupt like any other broken field, not an error on every retry.
    local status = uint(f[10], 999)
    if not status or status < 100 then
      return nil, 'a status out of range'
    end
  end
  return {state = state, token = f[3], lease_until = lease_until, gone_at = gone_at, fields = f}, nil
end

-- The reply fields of a record: token, fingerprint, fingerprint version, claimed at,
-- lease until, gone after, and once completed: completed at, status, headers, body.
local function described(record)
  local f = record.fields
  if record.state == 'completed' then
    return f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12]
  end
  return f[3], f[4], f[5], f[6], f[7], f[8]
end

