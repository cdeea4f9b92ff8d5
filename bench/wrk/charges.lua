-- wrk script for bench/wrk/run.py: POST /charges to the README's axum quick start.
--
-- IDEMKIT_WRK_MODE picks the requests, all otherwise the same (method, path, JSON body,
-- x-api-key, one Lua call and one formatted request each):
--   bare    no Idempotency-Key: the value a new key would have goes in X-Request-Id
--           instead, so the client builds and sends the same bytes, and the layer
--           hands the request straight on
--   new     a key never sent before, per thread and per run (IDEMKIT_WRK_RUN)
--   replay  one of 1,000 keys, stored by the warm-up run before the rounds
local mode = os.getenv("IDEMKIT_WRK_MODE") or "bare"
local run = os.getenv("IDEMKIT_WRK_RUN") or "0"

local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end

local prefix
local sent = 0
local body = '{"amount":2500,"currency":"eur","source":"card_4242"}'

function init(args)
  prefix = "run" .. run .. "-t" .. id .. "-"
end

function request()
  sent = sent + 1
  local headers = {
    ["Content-Type"] = "application/json",
    ["X-Api-Key"] = "key_live_1",
  }
  if mode == "bare" then
    headers["X-Request-Id"] = prefix .. sent
  elseif mode == "new" then
    headers["Idempotency-Key"] = prefix .. sent
  elseif mode == "replay" then
    headers["Idempotency-Key"] = "replay-" .. (sent % 1000)
  end
  return wrk.format("POST", "/charges", headers, body)
end
