--[[
  Moves one stream entry to the sale's dead-letter stream with the reason, and acknowledges it, in one
  step: the entry is never both lost from the stream and missing from the dead letters.

  Input:
    KEYS[1] sale stream
    KEYS[2] sale dead-letter stream

    ARGV[1] consumer group name
    ARGV[2] entry id
    ARGV[3] reason (a short code)
    ARGV[4] deliveries so far
    ARGV[5..] the entry's fields, as field, value pairs

  Output:
    the dead-letter entry id
]]
local fields = { 'id', ARGV[2], 'reason', ARGV[3], 'deliveries', ARGV[4] }
for i = 5, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
local id = redis.call('XADD', KEYS[2], '*', unpack(fields))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
return id
