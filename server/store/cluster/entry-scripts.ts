// The Lua scripts that keep a namespace's entries on Redis (docs/redis.md, "Entries"). Each
// runs atomically on the namespace's master, so a write's check, its entry, the ordered
// index, the expiry index, the counts and the version counter change together or not at
// all. KEYS[1] is always the namespace's meta hash; every other key the scripts touch is
// named from it and its generation `g`, and shares its hash tag, so all sit in one slot.

/** Shared prelude: the namespace's key names, and pruning of entries whose TTL has passed. */
const PRELUDE = `
local meta = KEYS[1]
local base = string.sub(meta, 1, -2)
local g = redis.call('HGET', meta, 'g')
if not g then return redis.error_reply('NAMESPACE_NOT_FOUND') end
local idx = base .. g .. ':i'
local exp = base .. g .. ':x'
local ent = base .. g .. ':e:'
local function size(k)
  return #k + redis.call('HSTRLEN', ent .. k, 'v')
end
local function forget(k)
  redis.call('HINCRBY', meta, 'bytes', -size(k))
  redis.call('HINCRBY', meta, 'keys', -1)
  redis.call('DEL', ent .. k)
  redis.call('ZREM', idx, k)
  redis.call('ZREM', exp, k)
end
local function prune(now, most)
  local gone = redis.call('ZRANGE', exp, '-inf', '(' .. now, 'BYSCORE', 'LIMIT', 0, most)
  for _, k in ipairs(gone) do forget(k) end
end
local function store(k, v, n, x)
  if x == '' then
    redis.call('HSET', ent .. k, 'v', v, 'n', n)
  else
    redis.call('HSET', ent .. k, 'v', v, 'n', n, 'x', x)
    redis.call('ZADD', exp, tonumber(x), k)
  end
  redis.call('ZADD', idx, 0, k)
  redis.call('HINCRBY', meta, 'keys', 1)
  redis.call('HINCRBY', meta, 'bytes', #k + #v)
end
local function live(k, now)
  local e = redis.call('HMGET', ent .. k, 'n', 'x')
  if not e[1] then return nil end
  if e[2] and tonumber(e[2]) <= now then return nil end
  return e[1]
end
`

/**
 * put: ARGV key, value, now, expiresAt ('' for none), ifVersion ('' none, '-' absent, or
 * the version). Returns { version, created }.
 */
export const PUT = `${PRELUDE}
local k, v, now, x, want = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
prune(now, 16)
local cur = live(k, now)
if want == '-' then
  if cur then return redis.error_reply('CONFLICT') end
elseif want ~= '' then
  if cur ~= want then return redis.error_reply('CONFLICT') end
end
if redis.call('EXISTS', ent .. k) == 1 then forget(k) end
local ver = redis.call('HINCRBY', meta, 'ver', 1)
store(k, v, ver, x)
if cur then return {ver, 0} end
return {ver, 1}
`

/** delete: ARGV key, now, ifVersion ('' for none). Returns 1 when a live key was deleted. */
export const DELETE = `${PRELUDE}
local k, now, want = ARGV[1], tonumber(ARGV[2]), ARGV[3]
prune(now, 16)
local cur = live(k, now)
if want ~= '' and cur ~= want then return redis.error_reply('CONFLICT') end
if redis.call('EXISTS', ent .. k) == 1 then forget(k) end
if cur then
  redis.call('HINCRBY', meta, 'ver', 1)
  return 1
end
return 0
`

/**
 * batch: ARGV now, then the number of checks and each check's key and version ('-' for
 * absent), then the ops: 'p' key value expiresAt, or 'd' key. Every check holds or nothing
 * is written; every write gets the one new version.
 */
export const BATCH = `${PRELUDE}
local now = tonumber(ARGV[1])
prune(now, 16)
local i = 2
local checks = tonumber(ARGV[i]); i = i + 1
for _ = 1, checks do
  local cur = live(ARGV[i], now)
  local want = ARGV[i + 1]
  i = i + 2
  if want == '-' then
    if cur then return redis.error_reply('CONFLICT') end
  elseif cur ~= want then
    return redis.error_reply('CONFLICT')
  end
end
-- Each write takes the namespace's next version, in op order; a delete of a missing key
-- writes nothing.
local ver = tonumber(redis.call('HGET', meta, 'ver') or '0')
while i <= #ARGV do
  local op, k = ARGV[i], ARGV[i + 1]
  local was = live(k, now)
  if redis.call('EXISTS', ent .. k) == 1 then forget(k) end
  if op == 'p' then
    ver = redis.call('HINCRBY', meta, 'ver', 1)
    store(k, ARGV[i + 2], ver, ARGV[i + 3])
    i = i + 4
  else
    if was then ver = redis.call('HINCRBY', meta, 'ver', 1) end
    i = i + 2
  end
end
return ver
`

/**
 * get: ARGV key, now. Returns { value, version, expiresAt or false } or nil. The hot read:
 * no prelude (it defines functions on every call), just the generation and the entry.
 */
export const GET = `
local g = redis.call('HGET', KEYS[1], 'g')
if not g then return redis.error_reply('NAMESPACE_NOT_FOUND') end
local e = redis.call('HMGET', string.sub(KEYS[1], 1, -2) .. g .. ':e:' .. ARGV[1], 'v', 'n', 'x')
if not e[1] then return nil end
if e[3] and tonumber(e[3]) <= tonumber(ARGV[2]) then return nil end
return {e[1], e[2], e[3] or false}
`

/** stat: ARGV key, now. Returns { version, bytes, expiresAt or false } or nil. */
export const STAT = `${PRELUDE}
local k, now = ARGV[1], tonumber(ARGV[2])
local cur = live(k, now)
if not cur then return nil end
return {cur, size(k), redis.call('HGET', ent .. k, 'x') or false}
`

/**
 * list: ARGV prefix, after ('' for none), limit, reverse ('1' or ''), now. Returns up to
 * limit + 1 live keys in byte order (reversed when asked), so the caller knows whether more
 * remain. Keys are UTF-8, which never holds the byte 0xFF: prefix .. 0xFF bounds a prefix.
 */
export const LIST = `${PRELUDE}
local prefix, after, limit, rev, now = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1', tonumber(ARGV[5])
local lo, hi = '-', '+'
if prefix ~= '' then lo, hi = '[' .. prefix, '(' .. prefix .. '\\255' end
if after ~= '' then
  if rev then
    if hi == '+' or after < string.sub(hi, 2) then hi = '(' .. after end
  else
    if lo == '-' or after >= string.sub(lo, 2) then lo = '(' .. after end
  end
end
local out = {}
local want = limit + 1
while #out < want do
  local page
  if rev then
    page = redis.call('ZRANGE', idx, hi, lo, 'BYLEX', 'REV', 'LIMIT', 0, want - #out)
  else
    page = redis.call('ZRANGE', idx, lo, hi, 'BYLEX', 'LIMIT', 0, want - #out)
  end
  if #page == 0 then break end
  for _, k in ipairs(page) do
    if live(k, now) then out[#out + 1] = k end
  end
  local last = page[#page]
  if rev then hi = '(' .. last else lo = '(' .. last end
  if #page < want then break end
end
return out
`

/** counts: ARGV now. Prunes what has expired (up to a bound), then { keys, bytes }. */
export const COUNTS = `${PRELUDE}
prune(tonumber(ARGV[1]), 256)
local c = redis.call('HMGET', meta, 'keys', 'bytes')
return {tonumber(c[1]) or 0, tonumber(c[2]) or 0}
`

/**
 * create: KEYS[1] the meta hash, KEYS[2] the generation counter (kept after a drop, so a
 * namespace made again never meets the entries of the one dropped). Returns 1 if made.
 */
export const CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local g = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'g', g, 'ver', 0, 'keys', 0, 'bytes', 0)
return 1
`

/** drop: removes the meta hash; returns the generation whose keys are now garbage, or nil. */
export const DROP = `
local g = redis.call('HGET', KEYS[1], 'g')
if not g then return nil end
redis.call('DEL', KEYS[1])
return g
`

/**
 * sweep: KEYS the dropped generation's index and expiry sets, ARGV its entry-name prefix.
 * Unlinks up to 500 of its entries; returns how many remain.
 */
export const SWEEP = `
local idx, exp, ent = KEYS[1], KEYS[2], ARGV[1]
local page = redis.call('ZRANGE', idx, 0, 499)
for _, k in ipairs(page) do redis.call('UNLINK', ent .. k) end
if #page > 0 then redis.call('ZREM', idx, unpack(page)) end
local left = redis.call('ZCARD', idx)
if left == 0 then redis.call('UNLINK', idx, exp) end
return left
`

/**
 * import: ARGV now, then per entry its key, value, version and expiry ('' for none). Writes
 * entries with the versions they had (cairn migrate), and raises the namespace's version
 * counter past the highest, so later writes keep the order.
 */
export const IMPORT = `${PRELUDE}
local now = tonumber(ARGV[1])
local top = tonumber(redis.call('HGET', meta, 'ver'))
local i = 2
while i <= #ARGV do
  local k, v, n, x = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  i = i + 4
  if x == '' or tonumber(x) > now then
    if redis.call('EXISTS', ent .. k) == 1 then forget(k) end
    store(k, v, n, x)
    if tonumber(n) > top then top = tonumber(n) end
  end
end
redis.call('HSET', meta, 'ver', top)
return top
`
