-- The soak's purchase load for wrk: every request a purchase by a new buyer, read from a feed that a
-- Node process (loadtest/soak/feed-writer.ts) signs and writes while wrk runs, so a run of any length
-- needs neither millions of tokens in memory nor a token scheme wrk's Lua could forge.
--
-- wrk -t1 -c64 -d600s -s loadtest/soak/purchase-feed.lua <url> -- <feed> <record length>
--
--   feed           a FIFO (or file) of complete HTTP requests, one after another, each exactly
--                  <record length> bytes: "POST /api/sales/<id>/purchase HTTP/1.1", Host, Authorization
--   record length  the size of every request in the feed (the buyer ids are of fixed width)
--
-- request() hands out the next record as it is: no string is built in Lua per request. A read blocks
-- wrk's thread while the feed is empty; the writer stays ahead of it (a pipe full of signed requests).
-- If the feed ends (its writer died), wrk stops. done() prints one JSON line, as bench/wrk/purchase.lua.

local feed
local size
local ended = false
local fallback

function init(args)
  feed = assert(io.open(assert(args[1], 'feed missing'), 'rb'))
  size = assert(tonumber(args[2]), 'record length missing')
  feed:setvbuf('full', 1048576)
  fallback = wrk.format('GET', '/healthz')
end

function request()
  if not ended then
    local record = feed:read(size)
    if record ~= nil and #record == size then return record end
    ended = true
    io.stderr:write('purchase-feed.lua: the feed ended, stopping\n')
    wrk.thread:stop()
  end
  return fallback
end

function done(summary, latency, _)
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"latencyUs":{"p50":%d,"p90":%d,"p99":%d,"max":%d}}\n',
    summary.requests, summary.duration,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.status, summary.errors.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
