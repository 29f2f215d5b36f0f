"""The Redis adapter's Lua scripts: the writes that must not race.

``CAS_ROOM`` stores a room only if its version is still the one the caller read (and
appends its events to the history and publishes them on the bus in the same step);
``APPEND_ACTIONS`` appends each action only if its log length and last seq are still
what the calling process expected, so two connections or two processes can never
corrupt a game; ``PRESENCE_CHANGE`` and ``PRESENCE_LAPSED`` count a player's sockets
over the processes still alive. The keys are :class:`server.storage.redis_base.Keys`'.
"""

from __future__ import annotations

from server.core.ports import SEQ_WINDOW
from server.storage.redis_base import EVENT_HISTORY

CAS_ROOM = """
local cur = tonumber(redis.call('HGET', KEYS[1], 'ver') or '-1')
if cur ~= tonumber(ARGV[1]) then return cur end
redis.call('HSET', KEYS[1], 'ver', ARGV[2], 'blob', ARGV[3])
if #ARGV >= 6 then
  for i = 6, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
  redis.call('LTRIM', KEYS[2], -EVENT_HISTORY, -1)
  redis.call('EXPIRE', KEYS[2], ARGV[4])
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[3], ARGV[4])
if ARGV[5] ~= '' then redis.call('PUBLISH', KEYS[4], ARGV[5]) end
return -2
""".replace("EVENT_HISTORY", str(EVENT_HISTORY))  # one constant for Python and the script

PRESENCE_CHANGE = """
-- KEYS[1] presence hash (process/player -> sockets), KEYS[2] alive hash (process -> ms).
-- ARGV: process, player, delta, now, stale_ms, ttl. Replies the player's sockets over the
-- processes alive within stale_ms.
local field = ARGV[1] .. '/' .. ARGV[2]
local n = redis.call('HINCRBY', KEYS[1], field, ARGV[3])
if n <= 0 then redis.call('HDEL', KEYS[1], field) end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
local now = tonumber(ARGV[4])
local stale = tonumber(ARGV[5])
local total = 0
local alive = redis.call('HGETALL', KEYS[2])
for i = 1, #alive, 2 do
  if now - tonumber(alive[i + 1]) <= stale then
    local count = tonumber(redis.call('HGET', KEYS[1], alive[i] .. '/' .. ARGV[2]) or '0')
    if count > 0 then total = total + count end
  end
end
return total
"""

PRESENCE_LAPSED = """
-- KEYS[1] presence hash, KEYS[2] alive hash; ARGV: now, stale_ms, forget_ms.
-- Replies the players whose sockets are all on processes silent for more than stale_ms;
-- drops the processes silent for more than forget_ms.
local now, stale, forget = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local age_of = {}
local alive = redis.call('HGETALL', KEYS[2])
for i = 1, #alive, 2 do
  local age = now - tonumber(alive[i + 1])
  if age > forget then redis.call('HDEL', KEYS[2], alive[i]) else age_of[alive[i]] = age end
end
local live, lapsed = {}, {}
local entries = redis.call('HGETALL', KEYS[1])
for i = 1, #entries, 2 do
  local sep = string.find(entries[i], '/', 1, true)
  local age = age_of[string.sub(entries[i], 1, sep - 1)]
  local player = string.sub(entries[i], sep + 1)
  if age == nil then redis.call('HDEL', KEYS[1], entries[i])
  elseif age <= stale then live[player] = true
  else lapsed[player] = true end
end
local out = {}
for player in pairs(lapsed) do
  if not live[player] then out[#out + 1] = player end
end
return out
"""

APPEND_ACTIONS = """
-- Appends several actions of one room and round (one call per room per batch).
-- KEYS[1] seq hash, KEYS[2] progress hash, KEYS[2+i] log of the i-th action's racer.
-- ARGV[1] ttl, then 6 per action: expected_len, expected_last_seq, seq, action, player,
-- progress. Each action is appended only if its log length and last seq are what the
-- caller expected; the reply per action is the new log length, or -1 (not appended).
local ttl = ARGV[1]
local out = {}
local n = (#ARGV - 1) / 6
for i = 1, n do
  local a = 1 + (i - 1) * 6
  local log = KEYS[2 + i]
  local player = ARGV[a + 5]
  local len = redis.call('LLEN', log)
  local last = tonumber(redis.call('HGET', KEYS[1], player) or '0')
  if len ~= tonumber(ARGV[a + 1]) or last ~= tonumber(ARGV[a + 2]) then
    out[i] = -1
  else
    redis.call('RPUSH', log, ARGV[a + 4])
    local seq = tonumber(ARGV[a + 3])
    if seq > last then
      -- the action of each of the latest client seqs (seq_conflict), SEQ_WINDOW of them
      redis.call('HSET', KEYS[1], player, seq, player .. '#' .. seq, ARGV[a + 4])
      redis.call('HDEL', KEYS[1], player .. '#' .. (seq - SEQ_WINDOW))
    end
    redis.call('HSET', KEYS[2], player, ARGV[a + 6])
    redis.call('EXPIRE', log, ttl)
    out[i] = len + 1
  end
end
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('EXPIRE', KEYS[2], ttl)
return out
""".replace("SEQ_WINDOW", str(SEQ_WINDOW))


__all__ = ["APPEND_ACTIONS", "CAS_ROOM", "PRESENCE_CHANGE", "PRESENCE_LAPSED"]
