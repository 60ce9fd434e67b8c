-- The benchmark's purchase load for wrk (https://github.com/wg/wrk): every request a purchase by the
-- next buyer of a list, each with a token of its own, so the accept path never meets a buyer twice.
--
-- wrk -t1 -c64 -d5s -s bench/wrk/purchase.lua <url> -- <buyers file> <sale id> [<first N buyers only>]
--
--   buyers file   one buyer a line, "<id> <HS256 token>" (bench/wrk-load.ts writes it)
--   sale id       the sale every request buys from
--   N             cycle through the first N buyers only (the duplicate path: buyers who already hold one)
--
-- Each request carries `Authorization: Bearer <token>` (the gateway and the authenticated baseline read
-- it) and `X-Buyer: <id>` (the bare baseline reads that instead). The requests are built once, in init:
-- request() only hands the next one out, so wrk's own thread spends nothing per request on Lua strings.
--
-- done() prints one JSON line (the last line of wrk's output) for the runner: requests, duration in
-- microseconds, wrk's error counts (`status` counts answers outside 2xx and 3xx) and latency
-- percentiles in microseconds. There is no response() callback on purpose: defining one makes wrk hand
-- every response's headers and body to Lua, which costs its thread more than the request itself. The
-- runner checks the outcomes from Redis instead.

local requests = {}
local count = 0
local nextIndex = 1

function init(args)
  local file = assert(io.open(args[1], 'r'))
  local path = '/api/sales/' .. assert(args[2], 'sale id missing') .. '/purchase'
  local limit = tonumber(args[3]) or math.huge
  for line in file:lines() do
    if count >= limit then break end
    local id, token = line:match('^(%S+) (%S+)$')
    if id then
      count = count + 1
      requests[count] = wrk.format('POST', path, { ['Authorization'] = 'Bearer ' .. token, ['X-Buyer'] = id })
    end
  end
  file:close()
  assert(count > 0, 'no buyers in ' .. args[1])
end

function request()
  local r = requests[nextIndex]
  nextIndex = nextIndex + 1
  if nextIndex > count then nextIndex = 1 end
  return r
end

function done(summary, latency, _)
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"latencyUs":{"p50":%d,"p90":%d,"p99":%d,"max":%d}}\n',
    summary.requests, summary.duration,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.status, summary.errors.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
