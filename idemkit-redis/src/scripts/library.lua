#!lua name=idemkit
-- idemkit's server side: one Redis Functions library, loaded once per server with
-- `FUNCTION LOAD REPLACE` under this stable name (so a new version replaces the old one
-- instead of adding a library), called with `FCALL`. Everything below the registrations
-- is built once when the library loads, not on every call (the standard libraries such
-- as `string` are reachable only inside the functions, when they run).
--
-- A record (layout 2) is one string at the key, written with its expiry by one
-- `SET ... PXAT`. A fixed header of 133 bytes, then three variable fields:
--   1-3     'ik2'                 the layout: told apart from any other value
--   4       'c' claimed, 'd' completed (done)
--   5-36    claim token           32 lowercase hex digits
--   37-52   claimed at            16 decimal digits (server microseconds)
--   53-68   lease until           16 digits
--   69-84   gone after            16 digits (the key expires just after it)
--   85-100  completed at          16 digits (zeros while claimed)
--   101-103 status                3 digits ('000' while claimed)
--   104-113 fingerprint version   10 digits
--   114-123 fingerprint length    10 digits
--   124-133 headers length        10 digits ('0...0' while claimed)
--   then the fingerprint, the encoded headers, and the body (the rest).
-- A claimed record ends right after its fingerprint.
--
-- Layout 1, a hash (fields v='1', s, t, f, fv, ca, lu, ga, cd, st, h, b), is what the
-- previous scripts wrote. It is still read: a record found in it is converted to layout 2
-- on the way (in Lua, for this call), so a completion or renewal rewrites it in layout 2
-- and the client only ever decodes one layout. Anything else at a key is not a record:
-- it is absent, and the reply says why.

local VERSION = '__IDEMKIT_LIBRARY_VERSION__'

local LAYOUT = 'ik2'
local HEADER = 133
-- Beyond 2^53 a Lua number is no longer an exact integer.
local MAX_TIME = 9007199254740991
local MAX_FINGERPRINT_VERSION = 4294967295
-- Completed at and status of a record still claimed.
local NO_RESULT = '0000000000000000000'
local NO_HEADERS = '0000000000'

-- An integer as exact decimal text (tostring would switch to exponent form).
local function int(n)
  return string.format('%d', n)
end

local function pad16(n)
  return string.format('%016d', n)
end

local function pad10(n)
  return string.format('%010d', n)
end

-- The server's clock in microseconds.
local function clock()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- The millisecond the key expires at: just after the instant `at`.
local function expiry(at)
  return int(math.floor(at / 1000) + 1)
end

-- The value of decimal text no larger than max, or nil.
local function uint(text, max)
  if type(text) ~= 'string' or #text == 0 or #text > 16 or string.find(text, '%D') then
    return nil
  end
  local n = tonumber(text)
  if n > max then
    return nil
  end
  return n
end

-- A layout 1 hash at `key`, converted to layout 2: the value, or nil and why the hash is
-- not a record.
local V1_FIELDS = {'v', 's', 't', 'f', 'fv', 'ca', 'lu', 'ga', 'cd', 'st', 'h', 'b'}
local function from_layout_1(key)
  local f = redis.call('HMGET', key, unpack(V1_FIELDS))
  if f[1] ~= '1' then
    return nil, 'an unknown record format'
  end
  local state = f[2]
  if state ~= 'claimed' and state ~= 'completed' then
    return nil, 'an unknown state'
  end
  if type(f[3]) ~= 'string' or #f[3] ~= 32 or string.find(f[3], '[^0-9a-f]') then
    return nil, 'a malformed claim token'
  end
  local fingerprint_version = uint(f[5], MAX_FINGERPRINT_VERSION)
  if type(f[4]) ~= 'string' or not fingerprint_version then
    return nil, 'a malformed fingerprint'
  end
  local claimed_at, lease_until, gone_at = uint(f[6], MAX_TIME), uint(f[7], MAX_TIME), uint(f[8], MAX_TIME)
  if not claimed_at or not lease_until or not gone_at then
    return nil, 'malformed instants'
  end
  local head = f[3] .. pad16(claimed_at) .. pad16(lease_until) .. pad16(gone_at)
  if state == 'claimed' then
    return LAYOUT .. 'c' .. head .. NO_RESULT .. pad10(fingerprint_version) .. pad10(#f[4])
      .. NO_HEADERS .. f[4]
  end
  local completed_at = uint(f[9], MAX_TIME)
  if not completed_at or type(f[11]) ~= 'string' or type(f[12]) ~= 'string' then
    return nil, 'a malformed response'
  end
  -- An HTTP status has three digits: anything else could never be answered.
  local status = uint(f[10], 999)
  if not status or status < 100 then
    return nil, 'a status out of range'
  end
  return LAYOUT .. 'd' .. head .. pad16(completed_at) .. int(status) .. pad10(fingerprint_version)
    .. pad10(#f[4]) .. pad10(#f[11]) .. f[4] .. f[11] .. f[12]
end

-- The record in `value` (layout 2): a table, or nil and why it is not one. Checks every
-- field but the encoded headers (the client decodes those, and reports them corrupt).
local function parse(value)
  if #value < HEADER or string.sub(value, 1, 3) ~= LAYOUT then
    return nil, 'a string value that is not a record of a known layout'
  end
  local state = string.sub(value, 4, 4)
  if state ~= 'c' and state ~= 'd' then
    return nil, 'an unknown state'
  end
  local token = string.sub(value, 5, 36)
  if string.find(token, '[^0-9a-f]') then
    return nil, 'a malformed claim token'
  end
  if state == 'd' and string.find(string.sub(value, 101, 103), '%D') then
    return nil, 'a status out of range'
  end
  if string.find(string.sub(value, 37, HEADER), '%D') then
    return nil, 'malformed numbers'
  end
  local lease_until, gone_at = tonumber(string.sub(value, 53, 68)), tonumber(string.sub(value, 69, 84))
  if tonumber(string.sub(value, 37, 52)) > MAX_TIME or lease_until > MAX_TIME or gone_at > MAX_TIME
      or tonumber(string.sub(value, 85, 100)) > MAX_TIME then
    return nil, 'malformed instants'
  end
  if tonumber(string.sub(value, 104, 113)) > MAX_FINGERPRINT_VERSION then
    return nil, 'a malformed fingerprint'
  end
  local sizes = HEADER + tonumber(string.sub(value, 114, 123)) + tonumber(string.sub(value, 124, 133))
  if state == 'c' then
    if #value ~= sizes or string.sub(value, 85, 103) ~= NO_RESULT then
      return nil, 'a malformed claim'
    end
  else
    if #value < sizes then
      return nil, 'a malformed response'
    end
    if tonumber(string.sub(value, 101, 103)) < 100 then
      return nil, 'a status out of range'
    end
  end
  return {state = state, token = token, lease_until = lease_until, gone_at = gone_at, value = value}
end

-- The record at `key`: a table, or nil and nothing for no key, or nil and why the value
-- at the key is not a record.
local function load(key)
  local value = redis.pcall('GET', key)
  if not value then
    return nil, nil
  end
  if type(value) == 'table' then
    -- Not a string (WRONGTYPE): a layout 1 hash, or something else.
    local kind = redis.call('TYPE', key)['ok']
    if kind ~= 'hash' then
      return nil, 'a ' .. kind .. ' value, not a record'
    end
    local converted, why = from_layout_1(key)
    if not converted then
      return nil, why
    end
    value = converted
  end
  return parse(value)
end

-- The record at `key` if `token` holds its claim and it is not gone at `now`, else nil.
local function held(key, token, now)
  local record = load(key)
  if record and record.state == 'c' and record.token == token and now <= record.gone_at then
    return record
  end
  return nil
end

-- Claims `key` for args[1], writing a fresh claimed record. `replaced`: whoever waited
-- on the old value re-reads, and follows the new claim.
local function take(key, now, args, outcome, replaced, note)
  local lease_until = now + tonumber(args[4])
  local gone_at = lease_until + tonumber(args[5])
  local fingerprint = args[2]
  redis.call('SET', key, LAYOUT .. 'c' .. args[1] .. pad16(now) .. pad16(lease_until)
    .. pad16(gone_at) .. NO_RESULT .. pad10(tonumber(args[3])) .. pad10(#fingerprint)
    .. NO_HEADERS .. fingerprint, 'PXAT', expiry(gone_at))
  if replaced then
    redis.call('PUBLISH', key, 'claimed')
  end
  return {outcome, int(now), note}
end

-- Claim. args: token (32 hex digits), fingerprint, fingerprint version, lease (µs),
-- reclaim grace (µs), the token of a record the client could not decode ('' if none)
-- and why it could not. Reply: {outcome, now, note[, record]}: 'new' or 'reclaimed'
-- (the key is now ours; the note says why a value at the key was not a record, '' when
-- it was or there was none), 'in_flight' or 'completed' with the record's value.
local function claim(keys, args)
  local key = keys[1]
  local now = clock()
  local record, corrupt = load(key)
  if corrupt then
    return take(key, now, args, 'new', true, corrupt)
  end
  if not record then
    return take(key, now, args, 'new', false, '')
  end
  if now > record.gone_at then
    return take(key, now, args, 'new', true, '')
  end
  if args[6] ~= '' and args[6] == record.token then
    return take(key, now, args, 'new', true, args[7])
  end
  if record.state == 'd' then
    return {'completed', int(now), '', record.value}
  end
  if now <= record.lease_until then
    return {'in_flight', int(now), '', record.value}
  end
  return take(key, now, args, 'reclaimed', true, '')
end

-- Complete. args: token, time to live from now (µs), status (100-999), headers, body.
-- Reply: {1 if stored else 0, now}.
local function complete(keys, args)
  local key = keys[1]
  local now = clock()
  local record = held(key, args[1], now)
  if not record then
    return {0, int(now)}
  end
  local value = record.value
  local gone_at = now + tonumber(args[2])
  local headers = args[4]
  redis.call('SET', key, LAYOUT .. 'd' .. string.sub(value, 5, 68) .. pad16(gone_at) .. pad16(now)
    .. string.format('%03d', tonumber(args[3])) .. string.sub(value, 104, 123) .. pad10(#headers)
    .. string.sub(value, HEADER + 1) .. headers .. args[5], 'PXAT', expiry(gone_at))
  redis.call('PUBLISH', key, 'completed')
  return {1, int(now)}
end

-- Release. args: token. Reply: {1 if released else 0, now}.
local function release(keys, args)
  local key = keys[1]
  local now = clock()
  if not held(key, args[1], now) then
    return {0, int(now)}
  end
  redis.call('DEL', key)
  redis.call('PUBLISH', key, 'released')
  return {1, int(now)}
end

-- Renew. args: token, lease (µs), reclaim grace (µs). Reply: {1 if renewed else 0, now}.
local function renew(keys, args)
  local key = keys[1]
  local now = clock()
  local record = held(key, args[1], now)
  if not record then
    return {0, int(now)}
  end
  local value = record.value
  local lease_until = now + tonumber(args[2])
  local gone_at = lease_until + tonumber(args[3])
  redis.call('SET', key, string.sub(value, 1, 52) .. pad16(lease_until) .. pad16(gone_at)
    .. string.sub(value, 85), 'PXAT', expiry(gone_at))
  return {1, int(now)}
end

-- Read. Reply: {state, now, note[, record]}: 'absent' (no record, one that is gone, or a
-- value that is not a record: the note says why), 'claimed' or 'completed' with the
-- record's value. Writes nothing.
local function read(keys)
  local now = clock()
  local record, corrupt = load(keys[1])
  if corrupt then
    return {'absent', int(now), corrupt}
  end
  if not record or now > record.gone_at then
    return {'absent', int(now), ''}
  end
  return {record.state == 'd' and 'completed' or 'claimed', int(now), '', record.value}
end

redis.register_function('idemkit_claim', claim)
redis.register_function('idemkit_complete', complete)
redis.register_function('idemkit_release', release)
redis.register_function('idemkit_renew', renew)
redis.register_function{function_name = 'idemkit_read', callback = read, flags = {'no-writes'}}
-- Which code is loaded: the client compares it with its own and loads its library when
-- they differ (see scripts.rs).
redis.register_function{
  function_name = 'idemkit_version',
  callback = function() return VERSION end,
  flags = {'no-writes'},
}
