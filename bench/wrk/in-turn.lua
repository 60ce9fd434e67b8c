-- What the bench's wrk scripts share (purchase.lua, requests.lua load it with dofile): the requests
-- they built in init handed out in turn, and the one JSON line the runner reads.
--
-- done() prints requests, duration in microseconds, wrk's error counts (`status` counts answers outside
-- 2xx and 3xx) and latency percentiles in microseconds. There is no response() callback on purpose:
-- defining one makes wrk hand every response's headers and body to Lua, which costs its thread more
-- than the request itself. The runner checks the outcomes itself.

local M = {}

-- A request() that returns the requests of `list` one after the other, from the first again after the last.
function M.inTurn(list)
  local count, nextIndex = #list, 1
  return function()
    local r = list[nextIndex]
    nextIndex = nextIndex + 1
    if nextIndex > count then nextIndex = 1 end
    return r
  end
end

function M.done(summary, latency, _)
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"latencyUs":{"p50":%d,"p90":%d,"p99":%d,"max":%d}}\n',
    summary.requests, summary.duration,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.status, summary.errors.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end

return M
