--[[
  ensure_group(stream, group): creates the consumer group on the stream (and the stream: MKSTREAM),
  reading from id 0, not '$': if a stream somehow survived without its meta, none of its entries is
  skipped. A group that exists already (BUSYGROUP) keeps its position and pending entries.

  Returns:
    nil                   the group exists now
    an error reply        any other refusal (the stream key holds another type...), for the script to
                          return: `return ensure_group(stream, group) or <its own reply>`
]]
local function ensure_group(stream, group)
  local ok, err = pcall(redis.call, 'XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM')
  if not ok and not string.find(tostring(err), 'BUSYGROUP') then
    return redis.error_reply(tostring(err))
  end
  return nil
end
