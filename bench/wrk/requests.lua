-- Any load for wrk (https://github.com/wg/wrk) that is not a purchase: each request the next line of a
-- file, in turn (bench/wrk-load.ts's wrkRequests writes it).
--
-- wrk -t1 -c8 -d5s -s bench/wrk/requests.lua <url> -- <requests file>
--
--   requests file   one request a line: "<METHOD> <path>", then its headers, each "<Name>: <value>",
--                   separated by tabs (a waiting buyer's queue poll carries its token and its ticket)
--
-- As in purchase.lua: the requests are built once, in init; in-turn.lua hands them out and reports.

local shared = dofile(debug.getinfo(1, 'S').source:match('^@(.*/)') .. 'in-turn.lua')
local requests = {}
local inTurn

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
      requests[#requests + 1] = wrk.format(method, path, headers)
    end
  end
  file:close()
  assert(#requests > 0, 'no requests in ' .. args[1])
  inTurn = shared.inTurn(requests)
end

function request()
  return inTurn()
end

done = shared.done
