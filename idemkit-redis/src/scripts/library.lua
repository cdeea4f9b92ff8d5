#!lua name=idemkit
-- idemkit's server side: one Redis Functions library, loaded once per server with
-- `FUNCTION LOAD REPLACE` under this stable name (so a new version replaces the old one
-- instead of adding a library), called with `FCALL`. Everything below the registrations
-- is built once when the library loads, not on every call (the standard libraries such
-- as `string` are reachable only inside the functions, when they run).
--
-- A record (layout 2) is one string at the key, written with its expiry by one
-- `SET ... PX`. A fixed header of 149 bytes, then three variable fields:
--   1-3     'ik2'                 the layout: told apart from any other value
--   4       'c' claimed, 'd' completed (done)
--   5-36    claim token           32 lowercase hex digits
--   37-52   claimed at            16 decimal digits (server microseconds)
--   53-68   lease                 16 digits (µs): lease until = claimed at + lease
--   69-84   grace                 16 digits (µs): while claimed, gone after =
--                                 lease until + grace
--   85-100  completed at          16 digits (zeros while claimed)
--   101-116 time to live          16 digits (µs; zeros while claimed): once completed,
--                                 gone after = completed at + time to live
--   117-119 status                3 digits ('000' while claimed)
--   120-129 fingerprint version   10 digits
--   130-139 fingerprint length    10 digits
--   140-149 headers length        10 digits (zeros while claimed)
--   then the fingerprint, the encoded headers, and the body (the rest).
-- A claimed record ends right after its fingerprint. Durations, not instants, are stored
-- next to the one instant the server reads from `TIME`, so that a claim or a completion
-- writes only text the client formatted and the digits `TIME` returned: the one number
-- formatted on the server on their way is a client's claim's time (layout 3, below),
-- once, by its completion. The key expires (`PX`, from the client, rounded up) just
-- after the record is gone.
--
-- Layout 3 is a claim the client writes itself, without a function, by a plain `SET key
-- <value> NX PX <ttl> GET`: a free key is claimed in one command that runs no Lua. The
-- client does not know the server's time, so the value is layout 2's claim with 'ik3' in
-- its first bytes and, where layout 2 holds the claim's time, the `PX` it sent (16 digits,
-- ms). The server set the key's expiry from its own clock when it ran the `SET`, so the
-- claim was made in the millisecond `PEXPIRETIME` less that `PX`; the functions take its
-- last microsecond (the lease is never cut short by the rounding) and convert the value
-- to layout 2 as they read it, as they do layout 1: a claim the functions write back
-- (renewed, completed) is in layout 2. Where layout 2 holds the reclaim grace, layout 3
-- holds the time from the lease's end to the key's expiry (at least the grace): its
-- record is gone when its key expires, so while the key lives its claim is not gone
-- (a completion relies on it). A layout 3 claim whose key lost its expiry (`PERSIST` by
-- hand) cannot be judged: it is not a record. Its state is 'c', or 'w' once a waiter
-- watches it (see watch): only then does its completion publish. The client that wrote
-- a claim usually still holds what it wrote when it completes it, and then hands the
-- completion the completed record's parts (see complete_own_claim), so that the server
-- only checks the claim and dates the record.
--
-- Layout 1, a hash (fields v='1', s, t, f, fv, ca, lu, ga, cd, st, h, b), is what the
-- previous scripts wrote. It is still read: a record found in it is converted to layout 2
-- on the way (in Lua, for this call), so a completion or renewal rewrites it in layout 2
-- and the client only ever decodes one layout. Anything else at a key is not a record:
-- it is absent, and the reply says why.
--
-- Replies: the common answers are one integer (cheaper for the server to send than an
-- array): a claim of a free key answers the server's time; complete, release and renew
-- answer the server's time when they took effect and its negation when they did not
-- (the completion of a client's claim answers its time as the 16 digits of text, and
-- complete_own_claim answers nil when it leaves the completion to complete).

local VERSION = '__IDEMKIT_LIBRARY_VERSION__'

local LAYOUT = 'ik2'
local CLAIMED = 'ik2c'
local COMPLETED = 'ik2d'
local CLIENT_LAYOUT = 'ik3'
local CLIENT_CLAIM = 'ik3c'
-- A client's claim a waiter watches (see watch).
local CLIENT_CLAIM_WATCHED = 'ik3w'
local WATCHED = 'w'
local HEADER = 149
-- Beyond 2^53 a Lua number is no longer an exact integer.
local MAX_TIME = 9007199254740991
local MAX_FINGERPRINT_VERSION = 4294967295
-- Completed at, time to live and status of a record still claimed.
local NO_RESULT = '00000000000000000000000000000000000'
local NO_HEADERS = '0000000000'
-- The fixed fields of a completed record after its completion's time: time to live,
-- status, fingerprint version and length, headers length.
local RESULT_FIELDS = 16 + 3 + 10 + 10 + 10

-- The zeros that pad `TIME`'s microseconds of each length (1 to 6 digits) to six.
local MICROS_PADDING = {'00000', '0000', '000', '00', '0', ''}

-- The server's clock as 16 digits of text (`TIME`'s ten digits of seconds, which last
-- until the year 2286, and its microseconds padded to six): what a call that has no use
-- for the number reads, since reading a number out of the text costs as much again.
local function clock_text()
  local time = redis.call('TIME')
  local micros = time[2]
  return time[1] .. MICROS_PADDING[#micros] .. micros
end

-- The server's clock: microseconds as a number (exact: 16 digits are below 2^53), and
-- as its 16 digits of text.
local function clock()
  local text = clock_text()
  return tonumber(text), text
end

-- 16 digits of text for a number of microseconds (only off the common paths).
local function digits16(n)
  return string.format('%016d', n)
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
  if not claimed_at or not lease_until or not gone_at or lease_until < claimed_at then
    return nil, 'malformed instants'
  end
  local head = f[3] .. digits16(claimed_at) .. digits16(lease_until - claimed_at)
  local tail = string.format('%010d%010d', fingerprint_version, #f[4])
  if state == 'claimed' then
    if gone_at < lease_until then
      return nil, 'malformed instants'
    end
    return CLAIMED .. head .. digits16(gone_at - lease_until) .. NO_RESULT .. tail
      .. NO_HEADERS .. f[4]
  end
  local completed_at = uint(f[9], MAX_TIME)
  if not completed_at or gone_at < completed_at then
    return nil, 'malformed instants'
  end
  if type(f[11]) ~= 'string' or type(f[12]) ~= 'string' then
    return nil, 'a malformed response'
  end
  -- An HTTP status has three digits: anything else could never be answered.
  local status = uint(f[10], 999)
  if not status or status < 100 then
    return nil, 'a status out of range'
  end
  return COMPLETED .. head .. digits16(0) .. digits16(completed_at)
    .. digits16(gone_at - completed_at) .. string.format('%03d', status) .. tail
    .. string.format('%010d', #f[11]) .. f[4] .. f[11] .. f[12]
end

-- The millisecond of the client's claim (layout 3) in `value` at `key` (its fixed
-- header is enough): its key's expiry less the time to live the value holds; or nil and
-- why it is not a record.
local function client_claim_ms(key, value)
  local ttl = tonumber(string.sub(value, 37, 52))
  if not ttl then
    return nil, 'a malformed claim'
  end
  local expires = redis.call('PEXPIRETIME', key)
  if expires < ttl then
    -- -1: the key has no expiry.
    return nil, 'a claim whose key lost its expiry'
  end
  return expires - ttl
end

-- The time of the client's claim (layout 3) in `value` at `key`, as the 16 digits layout
-- 2 holds it in; or nil and why it is not a record.
local function client_claim_time(key, value)
  local claimed_ms, why = client_claim_ms(key, value)
  if not claimed_ms then
    return nil, why
  end
  -- The last microsecond of the millisecond the `SET` ran in, as 16 digits until the
  -- year 2286 (as `TIME`'s are). An integer format: Lua writes a number it is handed as
  -- text with the C library's floating-point format, which costs twice as much.
  return string.format('%013d999', claimed_ms)
end

-- The client's claim (layout 3) in `value` at `key`, converted to layout 2: the value, or
-- nil and why it is not a record.
local function from_layout_3(key, value)
  local state = string.sub(value, 4, 4)
  if #value < HEADER or (state ~= 'c' and state ~= WATCHED) then
    return nil, 'a malformed claim'
  end
  local claimed_at, why = client_claim_time(key, value)
  if not claimed_at then
    return nil, why
  end
  return CLAIMED .. string.sub(value, 5, 36) .. claimed_at .. string.sub(value, 53)
end

-- The record in `value` (layout 2): its state, token, lease until and gone after, or
-- nil and why it is not one. The layout says what the value is, so only what the
-- functions decide on is checked here, by the cheapest means (no pattern scans, which
-- cost more than the rest of a call; no table): the state, the instants and the lengths.
-- The client checks every other field when it decodes a record (the token's digits, the
-- fingerprint, the status, the headers) and reports one that fails as corrupt, which its
-- next claim replaces.
local function parse(value)
  if #value < HEADER or string.sub(value, 1, 3) ~= LAYOUT then
    return nil, 'a string value that is not a record of a known layout'
  end
  local state = string.sub(value, 4, 4)
  local claimed_at = tonumber(string.sub(value, 37, 52))
  local lease = tonumber(string.sub(value, 53, 68))
  local fingerprint_len = tonumber(string.sub(value, 130, 139))
  if not claimed_at or not lease or not fingerprint_len then
    return nil, 'malformed numbers'
  end
  local gone_at
  if state == 'c' then
    local grace = tonumber(string.sub(value, 69, 84))
    if not grace or #value ~= HEADER + fingerprint_len then
      return nil, 'a malformed claim'
    end
    gone_at = claimed_at + lease + grace
  elseif state == 'd' then
    local completed_at = tonumber(string.sub(value, 85, 100))
    local ttl = tonumber(string.sub(value, 101, 116))
    local headers_len = tonumber(string.sub(value, 140, 149))
    if not completed_at or not ttl or not headers_len
        or #value < HEADER + fingerprint_len + headers_len then
      return nil, 'a malformed response'
    end
    gone_at = completed_at + ttl
  else
    return nil, 'an unknown state'
  end
  if gone_at > MAX_TIME then
    return nil, 'malformed instants'
  end
  return state, string.sub(value, 5, 36), claimed_at + lease, gone_at
end

-- Raises `reply`, an error `redis.pcall` answered, as it is, unless it is WRONGTYPE (the
-- key holds a value of another type than the command reads), which the caller judges.
local function raise_unless_wrong_type(reply)
  if not string.find(reply['err'] or '', '^WRONGTYPE') then
    error(reply)
  end
end

-- The record in `found`, what `GET` (or `SET ... GET`) answered for `key` through
-- `redis.pcall`: its value (in layout 2, whatever layout it is stored in), state, token,
-- lease until and gone after; or nil for no key; or false and why the value at the key is
-- not a record. An error but WRONGTYPE is raised as it is.
local function record_of(key, found)
  if not found then
    return nil
  end
  if type(found) == 'table' then
    raise_unless_wrong_type(found)
    -- Not a string: a layout 1 hash, or something else.
    local kind = redis.call('TYPE', key)['ok']
    if kind ~= 'hash' then
      return false, 'a ' .. kind .. ' value, not a record'
    end
    local converted, why = from_layout_1(key)
    if not converted then
      return false, why
    end
    found = converted
  elseif string.sub(found, 1, 3) == CLIENT_LAYOUT then
    local converted, why = from_layout_3(key, found)
    if not converted then
      return false, why
    end
    found = converted
  end
  local state, token, lease_until, gone_at = parse(found)
  if not state then
    return false, token
  end
  return found, state, token, lease_until, gone_at
end

-- The value at `key` (`found`, what `GET` answered through `redis.pcall`), in layout 2,
-- if `token` holds its claim and it is not gone at `now`, else nil.
local function held(key, found, token, now)
  local value, state, holder, _, gone_at = record_of(key, found)
  if value and state == 'c' and holder == token and now <= gone_at then
    return value
  end
  return nil
end

-- Claims `key` over what was there. Whoever waited on the old value re-reads, and
-- follows the new claim.
local function replace(key, now, now_text, args, outcome, note)
  redis.call('SET', key, CLAIMED .. args[1] .. now_text .. args[2], 'PX', args[3])
  redis.call('PUBLISH', key, 'claimed')
  return {outcome, now, note}
end

-- Claim. args: token (32 hex digits); the rest of the record after its time (lease and
-- reclaim grace, 16 digits each, in µs, 35 zeros for the result to come, fingerprint
-- version and length, 10 digits each, ten zeros, the fingerprint); the key's time to
-- live (ms, just past lease + grace); the token of a record the client could not decode
-- ('' if none) and why it could not.
-- Reply: the server's time when the key was free and is now ours; else {outcome, now,
-- note[, record]}: 'new' or 'reclaimed' (the key is now ours; the note says why a value
-- at the key was not a record, '' when it was), 'in_flight' or 'completed' with the
-- record's value.
local function claim(keys, args)
  local key = keys[1]
  local now, now_text = clock()
  -- Written only if the key is free; otherwise what is there comes back.
  local found = redis.pcall('SET', key, CLAIMED .. args[1] .. now_text .. args[2],
    'NX', 'PX', args[3], 'GET')
  if not found then
    return now
  end
  local value, state, token, lease_until, gone_at = record_of(key, found)
  if not value then
    return replace(key, now, now_text, args, 'new', state)
  end
  if now > gone_at then
    return replace(key, now, now_text, args, 'new', '')
  end
  if args[4] ~= '' and args[4] == token then
    return replace(key, now, now_text, args, 'new', args[5])
  end
  if state == 'd' then
    return {'completed', now, '', value}
  end
  if now <= lease_until then
    return {'in_flight', now, '', value}
  end
  return replace(key, now, now_text, args, 'reclaimed', '')
end

-- The completed record of the claim `value` (layout 2, or a client's claim of layout 3
-- with its time `claimed_at`) at `key`, completed at `now_text`, written from the
-- completion's args (see complete). `complete_own_claim` writes the same record from
-- parts its client joined (one `..` each: a string joined in two steps is copied twice).
local function write_completed(key, value, claimed_at, now_text, args)
  -- The token is the holder's, `args[1]`.
  redis.call('SET', key, COMPLETED .. args[1] .. claimed_at .. string.sub(value, 53, 84)
    .. now_text .. args[2] .. string.sub(value, 120, 139) .. args[3]
    .. string.sub(value, HEADER + 1) .. args[4], 'PX', args[5])
end

-- The completion of a client's claim (layout 3, its first four bytes `head`) in `found`
-- at `key`: its token holds it while its key lives (its record ends with its key, to the
-- millisecond); its time is read from the key's expiry, without converting it first;
-- there is no one to tell unless a waiter watched it. Its length is checked as parse
-- checks it (a claim cut short or run on is not held, whatever its token), and the token
-- where it must be, found without copying it out. Reply: the server's time as text when
-- it took effect (no number is read out of `TIME` on the way), else its negation as a
-- number. (complete_own_claim writes the same record from parts its client hands it, and
-- checks the claim after writing; each is written out whole, since every Lua function
-- call costs the server a few hundred instructions: bench/redis_instructions.py,
-- BENCHMARKS.md run H.)
local function complete_client_claim(key, found, head, args)
  local fingerprint_len = tonumber(string.sub(found, 130, 139))
  if not fingerprint_len or #found ~= HEADER + fingerprint_len or #args[1] ~= 32
      or string.find(found, args[1], 5, true) ~= 5 then
    return -clock()
  end
  local claimed_at = client_claim_time(key, found)
  if not claimed_at then
    return -clock()
  end
  local now_text = clock_text()
  write_completed(key, found, claimed_at, now_text, args)
  if head == CLIENT_CLAIM_WATCHED then
    redis.call('PUBLISH', key, 'completed')
  end
  return now_text
end

-- Complete. args: token; time to live (16 digits, µs) and status (3 digits, 100-999);
-- headers length (10 digits); headers and body, one after the other; the key's time to
-- live (ms, rounded up). Reply: the server's time when it took effect (a number, or its
-- 16 digits as text), else its negation.
local function complete(keys, args)
  local key = keys[1]
  local found = redis.pcall('GET', key)
  local head = type(found) == 'string' and string.sub(found, 1, 4)
  if (head == CLIENT_CLAIM or head == CLIENT_CLAIM_WATCHED) and #found >= HEADER then
    return complete_client_claim(key, found, head, args)
  end
  local now, now_text = clock()
  local value = held(key, found, args[1], now)
  if not value then
    return -now
  end
  write_completed(key, value, string.sub(value, 37, 52), now_text, args)
  redis.call('PUBLISH', key, 'completed')
  return now
end

-- Complete a client's claim (layout 3) that the calling client wrote itself and still
-- holds the fields of: the common completion, handed the completed record's parts so
-- that none is cut out of the claim or read from it. args: token; the `PX` the claim was
-- sent with (ms); the claim's lease and the time its record is kept past it (32 digits,
-- as the claim holds them); what comes after the completion's time up to the headers
-- (its time to live and status, the fingerprint's version and length, the headers'
-- length, the fingerprint: the claim's length less its header plus these fixed fields,
-- so that its length is checked without reading a number); the headers and body; the
-- key's time to live (ms, rounded up). The parts are the client's, and the token alone
-- fences: only the client that drew it wrote a claim with it, and wrote these parts in
-- it. Of the claim, its first bytes, its token in place and its whole length (against
-- the parts' own: a claim cut short or run on is not held) are checked.
--
-- It writes first and checks after: the completed record goes in by `SET ... GET`,
-- which answers what it replaced, and what was not this client's claim is put back as
-- it was, its expiry with it (read before, the one `PEXPIRETIME` that also dates the
-- claim). A completion almost always finds its claim, and a `GET` of its own cost about
-- 6,000 of the 66,000 instructions the server spent on the call (BENCHMARKS.md run I).
-- No reader sees the record between the two writes, but a refusal (a late or repeated
-- completion) now writes twice where it wrote nothing: both writes reach the AOF and the
-- replicas (inside the function's MULTI/EXEC), raise keyspace notifications, abort a
-- client's `WATCH` of the key and invalidate client-side caches of it.
--
-- Reply: as complete's for a client's claim; or nil when the key holds this token's
-- claim in layout 2 (a renewal rewrites a client's claim in it) or has no expiry, which
-- only complete judges. (Nil, not false: the client reads a decline by its null, which
-- nil is under either protocol, and false only while the function has not switched its
-- replies to RESP3 with `redis.setresp(3)`, after which it is a boolean (0 under RESP2).)
local function complete_own_claim(keys, args)
  local key = keys[1]
  local expires = redis.call('PEXPIRETIME', key)
  if expires < 0 then
    if expires == -2 then
      -- No key: this client's claim is gone.
      return -clock()
    end
    -- No expiry: not a claim of this layout (its key always has one).
    return nil
  end
  local token = args[1]
  local now_text = clock_text()
  -- The record write_completed writes, its parts joined by the client; the claim's time
  -- as client_claim_time writes it, from the `PX` its client sent.
  local found = redis.pcall('SET', key,
    COMPLETED .. token .. string.format('%013d999', expires - args[2]) .. args[3] .. now_text
      .. args[4] .. args[5],
    'PX', args[6], 'GET')
  if type(found) ~= 'string' then
    if type(found) == 'table' then
      -- Nothing was written.
      raise_unless_wrong_type(found)
    end
    -- Not a string (nothing was written), or, which the expiry just read rules out, no
    -- value at all.
    if found == false then
      redis.call('DEL', key)
    end
    return -clock()
  end
  local head = string.sub(found, 1, 4)
  if (head == CLIENT_CLAIM or head == CLIENT_CLAIM_WATCHED)
      and #found == HEADER - RESULT_FIELDS + #args[4] and #token == 32
      and string.find(found, token, 5, true) == 5 then
    if head == CLIENT_CLAIM_WATCHED then
      redis.call('PUBLISH', key, 'completed')
    end
    return now_text
  end
  -- Not this client's claim: put back as it was.
  redis.call('SET', key, found, 'PXAT', expires)
  if head == CLAIMED and #token == 32 and string.sub(found, 5, 36) == token then
    -- This client's claim, renewed: complete judges it.
    return nil
  end
  -- Completed, taken over, or not a record: not this client's claim any more.
  return -clock()
end

-- Release. args: token.
local function release(keys, args)
  local key = keys[1]
  local now = clock()
  if not held(key, redis.pcall('GET', key), args[1], now) then
    return -now
  end
  redis.call('DEL', key)
  redis.call('PUBLISH', key, 'released')
  return now
end

-- Renew. args: token, lease (µs), reclaim grace (16 digits, µs), the key's time to live
-- (ms, just past lease + grace). The lease is stored from the claim's time, which stays.
local function renew(keys, args)
  local key = keys[1]
  local now = clock()
  local value = held(key, redis.pcall('GET', key), args[1], now)
  if not value then
    return -now
  end
  -- Never below zero: a client's claim is dated to the last microsecond of its
  -- millisecond, which a renewal in that millisecond can precede.
  local lease = math.max(0, now + tonumber(args[2]) - tonumber(string.sub(value, 37, 52)))
  redis.call('SET', key, string.sub(value, 1, 52) .. digits16(lease) .. args[3]
    .. string.sub(value, 85), 'PX', args[4])
  return now
end

-- What read answers for `found`, what `GET` answered for `key` through `redis.pcall`.
local function read_found(key, found)
  local now = clock()
  local value, state, _, _, gone_at = record_of(key, found)
  if value == false then
    return {'absent', now, state}
  end
  if not value or now > gone_at then
    return {'absent', now, ''}
  end
  return {state == 'd' and 'completed' or 'claimed', now, '', value}
end

-- Read. Reply: {state, now, note[, record]}: 'absent' (no record, one that is gone, or a
-- value that is not a record: the note says why), 'claimed' or 'completed' with the
-- record's value. Writes nothing.
local function read(keys)
  return read_found(keys[1], redis.pcall('GET', keys[1]))
end

-- Watch: read for a waiter, which has subscribed to the key's channel first. Reply: as
-- read's. A client's claim (layout 3) it finds is marked watched ('w' for its state, its
-- expiry kept), so that its completion publishes: the completion of a client's claim no
-- one watched publishes nothing, since no one listens for it. A waiter that watched
-- before the completion is told; one that came after reads the result.
local function watch(keys)
  local key = keys[1]
  local found = redis.pcall('GET', key)
  if type(found) == 'string' and string.sub(found, 1, 4) == CLIENT_CLAIM then
    redis.call('SETRANGE', key, 3, WATCHED)
  end
  return read_found(key, found)
end

-- The operator's reading of the record at `key`, from its fixed header alone (never its
-- body, however large): its layout ('1', '2' or '3'), its state ('claimed' or
-- 'completed'), and its claimed at, lease until and gone after (decimal text, server
-- microseconds); or nil if the value at the key does not carry a known layout's marker
-- and state. It checks less than the functions' own reading (record_of): of layouts 2
-- and 3 the marker, the state, the header's length and the digits of its instants and
-- durations; of a layout 1 hash only that its `v` is '1', its fields handed on as they
-- are (the caller checks them). A client's claim whose key lost its expiry reads as
-- claimed at 0: long gone.
local function header_fields(key)
  local value = redis.pcall('GETRANGE', key, 0, HEADER - 1)
  if type(value) ~= 'string' then
    local f = redis.pcall('HMGET', key, 'v', 's', 'ca', 'lu', 'ga')
    if f['err'] or f[1] ~= '1' then
      return nil
    end
    return f[1], f[2], f[3], f[4], f[5]
  end
  local layout = string.sub(value, 1, 3)
  local state = string.sub(value, 4, 4)
  if #value ~= HEADER
      or not ((layout == LAYOUT and (state == 'c' or state == 'd'))
        or (layout == CLIENT_LAYOUT and (state == 'c' or state == WATCHED)))
      or string.find(string.sub(value, 37, 116), '%D') then
    return nil
  end
  local claimed_at = tonumber(string.sub(value, 37, 52))
  if layout == CLIENT_LAYOUT then
    local claimed_ms = client_claim_ms(key, value)
    claimed_at = claimed_ms and claimed_ms * 1000 + 999 or 0
  end
  local lease_until = claimed_at + tonumber(string.sub(value, 53, 68))
  local gone_at
  if state == 'd' then
    gone_at = tonumber(string.sub(value, 85, 100)) + tonumber(string.sub(value, 101, 116))
  else
    gone_at = lease_until + tonumber(string.sub(value, 69, 84))
  end
  return string.sub(layout, 3, 3), state == 'd' and 'completed' or 'claimed',
    string.format('%d', claimed_at), string.format('%d', lease_until),
    string.format('%d', gone_at)
end

-- Fields, for the operator's counts. KEYS: any number of record keys. Reply: five values
-- per key (see header_fields), `false` for each of a key that holds no record.
local function fields(keys)
  local out = {}
  for _, key in ipairs(keys) do
    -- All five are nil for a value that is not a record.
    local layout, state, claimed_at, lease_until, gone_at = header_fields(key)
    out[#out + 1] = layout or false
    out[#out + 1] = state or false
    out[#out + 1] = claimed_at or false
    out[#out + 1] = lease_until or false
    out[#out + 1] = gone_at or false
  end
  return out
end

-- Purge, for the operator: deletes the value at KEYS[1] if header_fields reads it as a
-- record (a layout's marker and state, or a hash whose `v` is '1') whose gone after, all
-- digits, has passed by the server's clock; never anything else. Reply: 1 if deleted,
-- else 0.
local function purge(keys)
  local _, _, _, _, gone_at = header_fields(keys[1])
  if type(gone_at) ~= 'string' or #gone_at == 0 or string.find(gone_at, '%D')
      or clock() <= tonumber(gone_at) then
    return 0
  end
  return redis.call('DEL', keys[1])
end

redis.register_function('idemkit_claim', claim)
redis.register_function('idemkit_complete', complete)
redis.register_function('idemkit_complete_own_claim', complete_own_claim)
redis.register_function('idemkit_release', release)
redis.register_function('idemkit_renew', renew)
redis.register_function{function_name = 'idemkit_read', callback = read, flags = {'no-writes'}}
-- It writes one byte over one of the same size, if anything: allowed under `maxmemory`.
redis.register_function{function_name = 'idemkit_watch', callback = watch, flags = {'allow-oom'}}
redis.register_function{function_name = 'idemkit_fields', callback = fields, flags = {'no-writes'}}
-- A delete frees memory: allowed under `maxmemory`.
redis.register_function{function_name = 'idemkit_purge', callback = purge, flags = {'allow-oom'}}
-- Which code is loaded: the client compares it with its own and loads its library when
-- they differ (see scripts.rs).
redis.register_function{
  function_name = 'idemkit_version',
  callback = function() return VERSION end,
  flags = {'no-writes'},
}
