// The Lua scripts for the service's records and token buckets on Redis (docs/redis.md,
// "Records" and "Token buckets"). A record is a string of JSON, or a hash of numbers for a
// counter record; each group's records of a kind are listed by a sorted set of their ids.

/** put: KEYS record, index; ARGV id, JSON, expiry in Unix ms ('' for none). */
export const PUT = `
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[3] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[3]) end
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1
`

/** create: KEYS record, index; ARGV id, JSON, most records in the group ('' for no limit). */
export const CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
if ARGV[3] ~= '' and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 'full' end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 'created'
`

/** delete: KEYS record, index; ARGV id. Returns 1 if a record was there. */
export const DELETE = `
local n = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return n
`

/**
 * batch: KEYS[1] any key of the group (it routes the script); ARGV per op 'p' record index
 * id JSON expiry, or 'd' record index id. All in one group, so all in one slot.
 */
export const BATCH = `
local i = 1
while i <= #ARGV do
  if ARGV[i] == 'p' then
    redis.call('SET', ARGV[i + 1], ARGV[i + 4])
    if ARGV[i + 5] ~= '' then redis.call('PEXPIREAT', ARGV[i + 1], ARGV[i + 5]) end
    redis.call('ZADD', ARGV[i + 2], 0, ARGV[i + 3])
    i = i + 6
  else
    redis.call('DEL', ARGV[i + 1])
    redis.call('ZREM', ARGV[i + 2], ARGV[i + 3])
    i = i + 4
  end
end
return 1
`

/**
 * list: KEYS index; ARGV the records' name prefix, id prefix, after ('' for none), limit.
 * Returns id, JSON, id, JSON... for up to limit + 1 records (so the caller knows whether
 * more remain). An id whose record expired is dropped from the index on the way.
 */
export const LIST = `
local base, prefix, after, limit = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local lo, hi = '-', '+'
if prefix ~= '' then lo, hi = '[' .. prefix, '(' .. prefix .. '\\255' end
if after ~= '' and (lo == '-' or after >= string.sub(lo, 2)) then lo = '(' .. after end
local out = {}
local found = 0
while found <= limit do
  local page = redis.call('ZRANGE', KEYS[1], lo, hi, 'BYLEX', 'LIMIT', 0, limit + 1 - found)
  if #page == 0 then break end
  for _, id in ipairs(page) do
    local k = base .. id
    local t = redis.call('TYPE', k).ok
    if t == 'string' then
      out[#out + 1] = id
      out[#out + 1] = redis.call('GET', k)
      found = found + 1
    elseif t == 'hash' then
      local flat = redis.call('HGETALL', k)
      local obj = {}
      for j = 1, #flat, 2 do obj[flat[j]] = tonumber(flat[j + 1]) end
      out[#out + 1] = id
      out[#out + 1] = cjson.encode(obj)
      found = found + 1
    else
      redis.call('ZREM', KEYS[1], id)
    end
  end
  lo = '(' .. page[#page]
end
return out
`

/**
 * add: KEYS record (a hash), index, the token's marker; ARGV id, token ('' for none), the
 * number of fields to add, field n ..., then the fields to set, field n ... Returns every
 * field and value after the change (or as they are, when the token was seen before).
 */
export const ADD = `
-- An addition made once under its token is not made again (kept two days).
if ARGV[2] ~= '' and not redis.call('SET', KEYS[3], 1, 'NX', 'EX', 172800) then
  return redis.call('HGETALL', KEYS[1])
end
local n = tonumber(ARGV[3])
local i = 4
for _ = 1, n do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
  i = i + 2
end
while i <= #ARGV do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  i = i + 2
end
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return redis.call('HGETALL', KEYS[1])
`

/**
 * bucket: KEYS the bucket (a hash: tokens, at, and `f:<front end>` the last call of each
 * front end), the call's marker; ARGV rate per second, burst, tokens asked (the costs of the
 * requests waiting on this call, in order, summed), tokens a front end gives back from its
 * last lease, tokens it would lease, the front end's name. Time is the Redis server's, so
 * front ends whose clocks disagree still share one bucket fairly. Grants what was asked, or
 * as many whole tokens as the bucket holds (the front end admits its waiters in order until
 * the grant runs out). A lease comes only with a whole grant, and is at most what is left
 * divided by 16 times the front ends that called in the last second: all front ends' leases
 * together hold at most a sixteenth of the bucket, and shrink as it empties (leased-bucket.ts,
 * docs/redis.md "Token buckets"). An idle bucket expires once it would be full again. Returns
 * tokens granted, remaining, reset seconds, retry-after seconds (0 when all was granted),
 * tokens leased. The answer is kept 10 s under the call's marker, and a call that finds one
 * answers it again, changing nothing: ioredis sends a call lost with its connection again,
 * and run twice it would give a lease's tokens back twice. Its writes are neither appended to
 * the AOF nor streamed to replicas (REPL_NONE): with appendfsync always every turn of Redis
 * that wrote is fsynced before any answer of that turn leaves, reads too, and a limiter's
 * state is not worth that. After a failover or a restart a bucket is what the last snapshot
 * held, or full.
 */
export const BUCKET = `
redis.set_repl(redis.REPL_NONE)
local seen = redis.call('GET', KEYS[2])
if seen then return cjson.decode(seen) end
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local need = tonumber(ARGV[3] or '1')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HGETALL', KEYS[1])
local tokens, at = nil, nil
local fronts = 1
local me = 'f:' .. (ARGV[6] or '')
for i = 1, #b, 2 do
  local k = b[i]
  if k == 'tokens' then tokens = tonumber(b[i + 1])
  elseif k == 'at' then at = tonumber(b[i + 1])
  elseif k ~= me and string.sub(k, 1, 2) == 'f:' then
    if now - tonumber(b[i + 1]) < 1000 then fronts = fronts + 1
    else redis.call('HDEL', KEYS[1], k) end
  end
end
if tokens then
  tokens = tokens + (now - at) * rate / 1000
  if tokens > burst then tokens = burst end
else
  tokens = burst
end
tokens = math.min(burst, tokens + tonumber(ARGV[4] or '0'))
local granted, retry, lease = need, 0, 0
if tokens >= need then
  tokens = tokens - need
  lease = math.min(tonumber(ARGV[5] or '0'), math.floor(tokens / (16 * fronts)))
  tokens = tokens - lease
else
  granted = math.floor(tokens)
  tokens = tokens - granted
  retry = math.max(1, math.ceil((need - granted - tokens) / rate))
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now, me, now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
local out = {granted, math.floor(tokens), math.ceil((burst - tokens) / rate), retry, lease}
redis.call('SET', KEYS[2], cjson.encode(out), 'PX', 10000)
return out
`

/**
 * hold: KEYS a sorted set of what an account holds at once (its open watches), holder by
 * the time its hold lapses; ARGV holder, the most held at once, how long a hold lasts (ms)
 * unless renewed. Lapsed holds (a front end that died) are dropped first. A holder already
 * there is renewed and answered 1 again: a call sent twice takes one hold. Returns 1 if
 * held, 0 when `max` others hold already.
 */
export const HOLD = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
`

/**
 * renew: KEYS the sorted set of HOLD; ARGV how long a hold lasts (ms), then the holders a
 * front end still holds. Each gets a new lapse time, and one lost (a failover that lost the
 * set) is put back, so a count that a failover shrank is whole again within one renewal.
 */
export const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + ttl, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ttl)
return #ARGV - 1
`

/** unhold: KEYS the sorted set of HOLD; ARGV the holder that lets go. */
export const UNHOLD = `
return redis.call('ZREM', KEYS[1], ARGV[1])
`

/**
 * reserve: KEYS an account's storage total (a hash: `bytes`, the total as last counted plus
 * every settled write since, and `r:<holder>` = "<bytes>:<lapse ms>" for each write under
 * way); ARGV holder, bytes the write may add, the quota, how long a reservation lasts (ms).
 * Lapsed reservations (a front end that died mid-write) are dropped first. Returns {1} when
 * the write fits beside every write under way (and reserves it), {0, total} when it does not,
 * {-1} when no total is kept (the front end counts and calls BASE). A holder already there
 * is answered {1} again: a call sent twice reserves once.
 */
export const RESERVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HGETALL', KEYS[1])
local bytes, pending, mine = nil, 0, false
for i = 1, #h, 2 do
  local k = h[i]
  if k == 'bytes' then bytes = tonumber(h[i + 1])
  elseif string.sub(k, 1, 2) == 'r:' then
    local size, lapse = string.match(h[i + 1], '^(-?[0-9]+):([0-9]+)$')
    if tonumber(lapse) <= now then redis.call('HDEL', KEYS[1], k)
    else
      if k == 'r:' .. ARGV[1] then mine = true end
      pending = pending + tonumber(size)
    end
  end
end
if mine then return {1} end
if not bytes then return {-1} end
local delta = tonumber(ARGV[2])
if bytes + pending + delta > tonumber(ARGV[3]) then return {0, bytes + pending} end
redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], delta .. ':' .. (now + tonumber(ARGV[4])))
redis.call('PEXPIRE', KEYS[1], 60000)
return {1}
`

/**
 * base: KEYS the storage total of RESERVE; ARGV bytes counted now, 1 to replace a total kept.
 * Sets the total where none is kept, or (replacing) where no write is under way: a count
 * taken beside a write that applied and has not settled would count it twice. Returns 1 if
 * set.
 */
export const BASE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HGETALL', KEYS[1])
local kept = false
for i = 1, #h, 2 do
  local k = h[i]
  if k == 'bytes' then kept = true
  elseif string.sub(k, 1, 2) == 'r:' then
    local lapse = tonumber(string.match(h[i + 1], ':([0-9]+)$'))
    if lapse > now then return 0 end
    redis.call('HDEL', KEYS[1], k)
  end
end
if kept and ARGV[2] ~= '1' then return 0 end
redis.call('HSET', KEYS[1], 'bytes', ARGV[1])
redis.call('PEXPIRE', KEYS[1], 60000)
return 1
`

/**
 * settle: KEYS the storage total of RESERVE; ARGV holder, bytes its write added (0: it
 * failed). The reservation goes and the total moves, once: a call sent again finds no
 * reservation and changes nothing.
 */
export const SETTLE = `
if redis.call('HDEL', KEYS[1], 'r:' .. ARGV[1]) == 0 then return 0 end
if redis.call('HEXISTS', KEYS[1], 'bytes') == 1 then
  redis.call('HINCRBY', KEYS[1], 'bytes', ARGV[2])
end
return 1
`
