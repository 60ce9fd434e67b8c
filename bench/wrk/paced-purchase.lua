-- bench/wrk/purchase.lua, paced: an open-loop arrival rate for the pipeline part of the benchmark
-- (bench/pipeline.ts). wrk has no rate option (wrk2 is not on this box); its delay() hook, asked before
-- every request on every connection, is enough to build one.
--
-- wrk -t1 -c64 -d10s -s bench/wrk/paced-purchase.lua <url> -- <buyers file> <sale id> <requests per second>
--
-- The thread keeps one schedule of arrivals, `interval` apart, from the first request on. Each delay()
-- takes the next arrival of the schedule and waits until it is due, whichever connection asks: so the
-- arrivals keep their pace whatever the answers take, as long as a connection is free when one is due
-- (64 connections at a few thousand a second leave each one several milliseconds between arrivals). An
-- arrival already past when a connection asks for it goes at once: a server that falls behind sees the
-- requests as fast as the connections free up, and the run's rate falls short of the target, which
-- the runner reports. wrk's latency clock starts when a request is sent, not when it was due.
-- Time comes from clock_gettime(CLOCK_MONOTONIC) through LuaJIT's ffi (wrk links LuaJIT); wrk waits
-- whole milliseconds, so arrivals go out in bursts of rate/1000 every millisecond.

local ffi = require('ffi')
ffi.cdef([[
  typedef struct { long tv_sec; long tv_nsec; } flashsale_timespec;
  int clock_gettime(int clock, flashsale_timespec *now);
]])
local CLOCK_MONOTONIC = 1
local now = ffi.new('flashsale_timespec')
local function nowMs()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, now)
  return tonumber(now.tv_sec) * 1000 + tonumber(now.tv_nsec) / 1e6
end

local here = debug.getinfo(1, 'S').source:match('^@(.*/)') or './'
dofile(here .. 'purchase.lua')

local interval
local nextDue
local unpacedInit = init

function init(args)
  local rate = assert(tonumber(args[3]), 'requests per second missing')
  interval = 1000 / rate
  unpacedInit({ args[1], args[2] })
end

function delay()
  local t = nowMs()
  if nextDue == nil then nextDue = t end
  local due = nextDue
  nextDue = nextDue + interval
  if due <= t then return 0 end
  return math.floor(due - t)
end
