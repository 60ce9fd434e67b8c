--[[
  Records that a payment event reached the system, at Redis's TIME, before MySQL is asked: the instant
  that decides whether it came before the order's payBy, whatever MySQL does meanwhile (locked, slow,
  away). The record stays until the payment is in MySQL (payment-arrivals.ts); the expiry reads it
  before it expires an order (held-payments-1.lua), so a payment that arrived in time is applied, never
  expired under. An event id is tied to its contents: the same id with another reservation or amount
  is refused, and the first record stands.

  Input:
    KEYS[1] the sale's payments hash (record: event id -> "<reservationId>|<amountCents>|<receivedAtMs>")

    ARGV[1] event id
    ARGV[2] reservation id
    ARGV[3] amount in cents

  Output:
    { 1, receivedAtMs }   recorded now
    { 2, receivedAtMs }   recorded before, same contents: the first arrival's instant
    { 0, record }         recorded before with other contents: nothing written
]]
--@include "includes/sale-meta.lua"

local contents = ARGV[2] .. '|' .. ARGV[3]
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if stored then
  local at = string.find(stored, '|[^|]*$')
  if string.sub(stored, 1, at - 1) ~= contents then
    return { 0, stored }
  end
  return { 2, tonumber(string.sub(stored, at + 1)) }
end
local now = redis_now_ms()
redis.call('HSET', KEYS[1], ARGV[1], contents .. '|' .. now)
return { 1, now }
