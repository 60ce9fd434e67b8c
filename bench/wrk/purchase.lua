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
-- request() only hands the next one out (in-turn.lua), so wrk's own thread spends nothing per request on
-- Lua strings. done() prints the one JSON line the runner reads (in-turn.lua); the runner checks the
-- outcomes from Redis.

local shared = dofile(debug.getinfo(1, 'S').source:match('^@(.*/)') .. 'in-turn.lua')
local requests = {}
local inTurn

function init(args)
  local file = assert(io.open(args[1], 'r'))
  local path = '/api/sales/' .. assert(args[2], 'sale id missing') .. '/purchase'
  local limit = tonumber(args[3]) or math.huge
  for line in file:lines() do
    if #requests >= limit then break end
    local id, token = line:match('^(%S+) (%S+)$')
    if id then
      requests[#requests + 1] = wrk.format('POST', path, { ['Authorization'] = 'Bearer ' .. token, ['X-Buyer'] = id })
    end
  end
  file:close()
  assert(#requests > 0, 'no buyers in ' .. args[1])
  inTurn = shared.inTurn(requests)
end

function request()
  return inTurn()
end

done = shared.done
