-- Any load for wrk (https://github.com/wg/wrk) that is not a purchase: each request the next line of a
-- file, in turn (bench/wrk-load.ts's wrkRequests writes it).
--
-- wrk -t1 -c8 -d5s -s bench/wrk/requests.lua <url> -- <requests file>
--
--   requests file   one request a line: "<METHOD> <path>", then its headers, each "<Name>: <value>",
--                   separated by tabs (a waiting buyer's queue poll carries its token and its ticket)
--
-- As in purchase.lua: the requests are built once, in init; no response() callback (the runner checks
-- the outcomes itself); done() prints the one JSON line the runner reads.

local requests = {}
local count = 0
local nextIndex = 1

function init(args)
  local file = assert(io.open(assert(args[1], 'requests file missing'), 'r'))
  for line in file:lines() do
    local fields = {}
    for field in line:gmatch('[^\t]+') do fields[#fields + 1] = field end
    local method, path = fields[1]:match('^(%S+) (%S+)$')
    if method then
      local headers = {}
      for i = 2, #fields do
        local name, value = fields[i]:match('^([^:]+): (.*)$')
        headers[name] = value
      end
      count = count + 1
      requests[count] = wrk.format(method, path, headers)
    end
  end
  file:close()
  assert(count > 0, 'no requests in ' .. args[1])
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
