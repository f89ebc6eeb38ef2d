// The Lua scripts that keep a namespace's entries on Redis (docs/redis.md, "Entries"). Each
// runs atomically on the namespace's master, so a write's check, its entry, the ordered
// index, the expiry index, the counts and the version counter change together or not at
// all. KEYS[1] is always the namespace's meta hash; every other key the scripts touch is
// named from it and its generation `g`, and shares its hash tag, so all sit in one slot.
import { HISTORY_WRITE } from './history-scripts.js'
import { RANGE_BOUNDS } from './range-bounds.js'

/** Shared prelude: the namespace's key names, its change feed, and pruning of entries whose TTL has passed. */
const PRELUDE = `
local meta = KEYS[1]
local base = string.sub(meta, 1, -2)
-- The fields PUT and DELETE need, read with g in one call (see PUT); hs to hv are the
-- history window's (history-scripts.ts), so a namespace without one pays only their reading
-- (absent fields), and one with a window no call more for them.
local META = {'HMGET', meta, 'g', 'ver', 'bytes', 'fb', 'fv', 'keys', 'nx', 'sn', 'hs', 'he', 'hc', 'hy', 'hb', 'hv'}
local mv = redis.call(unpack(META))
local g = mv[1]
if not g then return redis.error_reply('NAMESPACE_NOT_FOUND') end
local idx = base .. g .. ':i'
local exp = base .. g .. ':x'
local ent = base .. g .. ':e:'
local feed = base .. g .. ':f'
${HISTORY_WRITE}-- Open snapshots (exports, docs/redis.md "Exports"): before a key changes, each snapshot that
-- has not passed it yet keeps the key's state once (a copy of its entry, or score 1 in the
-- snapshot's index for "absent"); the first state kept is the key's state at the snapshot's
-- version. mv[8] ('sn') is set while any snapshot is open, so writes pay nothing otherwise.
local function shield(k)
  if not mv[8] then return end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local snaps = base .. g .. ':s'
  local open = redis.call('HGETALL', snaps)
  for i = 1, #open, 2 do
    local id = open[i]
    local dl, passed = string.match(open[i + 1], '^(%d+):(.*)$')
    local sb = snaps .. ':' .. id
    if tonumber(dl) <= now then
      redis.call('HDEL', snaps, id)
    elseif (passed == '' or k > passed) and not redis.call('ZSCORE', sb .. ':i', k) then
      local e = ent .. k
      local x = redis.call('HGET', e, 'x')
      if redis.call('EXISTS', e) == 1 and not (x and tonumber(x) <= now) then
        redis.call('COPY', e, sb .. ':e:' .. k)
        redis.call('PEXPIREAT', sb .. ':e:' .. k, dl)
        redis.call('ZADD', sb .. ':i', 0, k)
      else
        redis.call('ZADD', sb .. ':i', 1, k)
      end
      redis.call('PEXPIREAT', sb .. ':i', dl)
    end
  end
  if redis.call('HLEN', snaps) == 0 then
    redis.call('HDEL', meta, 'sn')
    mv[8] = false
  end
end
local function size(k)
  return #k + redis.call('HSTRLEN', ent .. k, 'v')
end
local function forget(k)
  shield(k)
  redis.call('HINCRBY', meta, 'bytes', -size(k))
  redis.call('HINCRBY', meta, 'keys', -1)
  redis.call('DEL', ent .. k)
  redis.call('ZREM', idx, k)
  redis.call('ZREM', exp, k)
end
-- One change to the feed, with the stream id <version>-<seq>. A namespace made before the
-- feed existed gets its floor (fv) here: its history starts at this change.
local function note(ver, seq, t, k, v, x, m)
  local a = {'XADD', feed, ver .. '-' .. seq, 't', t, 'k', k}
  if v then a[#a + 1] = 'v'; a[#a + 1] = v end
  if x and x ~= '' then a[#a + 1] = 'x'; a[#a + 1] = x end
  if m and m ~= '' then a[#a + 1] = 'm'; a[#a + 1] = m end
  redis.call('HSETNX', meta, 'fv', ver - 1)
  redis.call(unpack(a))
  redis.call('SPUBLISH', feed, '')
  redis.call('HINCRBY', meta, 'fb', #k + #(v or '') + #(m or ''))
end
-- Keeps at least the last 10,000 changes, or the last 64 MiB of them if that is fewer:
-- the oldest goes while 10,000 remain without it or 64 MiB do. Runs once 100 changes or
-- 16 MiB past the bound, so a write rarely pays for it (PUT and DELETE call it once in 32
-- versions, or past the bytes); fv becomes the version of the last change dropped, fb
-- the bytes (keys, values, metadata) still held.
local FEED_N, FEED_B = 10000, 67108864
local function trim()
  local n = redis.call('XLEN', feed)
  local b = tonumber(redis.call('HGET', meta, 'fb') or '0')
  if n <= FEED_N + 100 and b <= FEED_B + 16777216 then return end
  local from, last, keep = '-', nil, nil
  while not keep do
    local page = redis.call('XRANGE', feed, from, '+', 'COUNT', 100)
    if #page == 0 then break end
    for _, e in ipairs(page) do
      local s, f = 0, e[2]
      for j = 1, #f, 2 do
        if f[j] == 'k' or f[j] == 'v' or f[j] == 'm' then s = s + #f[j + 1] end
      end
      if n - 1 >= FEED_N or b - s >= FEED_B then
        n, b, last = n - 1, b - s, e[1]
      else
        keep = e[1]
        break
      end
    end
    from = '(' .. page[#page][1]
  end
  if not last then return end
  if keep then redis.call('XTRIM', feed, 'MINID', keep) else redis.call('DEL', feed) end
  redis.call('HSET', meta, 'fv', string.match(last, '^(%d+)'), 'fb', b)
end
-- An entry whose expiry has passed goes as a change of its own: a new version and a delete.
local function expire(k)
  local ver = redis.call('HINCRBY', meta, 'ver', 1)
  stamp(ver)
  keep(k, ver)
  tomb(k, ver)
  forget(k)
  note(ver, 0, 'd', k)
end
-- nx in the meta hash: the namespace holds no entry with an expiry, so there is nothing
-- to prune and the ZRANGE is skipped. Set when a prune finds the expiry set empty, dropped
-- by whatever adds to it (expiring()).
local function prune(now, most)
  if mv[7] then return 0 end
  local gone = redis.call('ZRANGE', exp, '-inf', '(' .. now, 'BYSCORE', 'LIMIT', 0, most)
  for _, k in ipairs(gone) do expire(k) end
  if #gone == 0 and redis.call('EXISTS', exp) == 0 then
    redis.call('HSET', meta, 'nx', 1)
    mv[7] = '1'
  end
  return #gone
end
local function expiring()
  if mv[7] then
    redis.call('HDEL', meta, 'nx')
    mv[7] = false
  end
end
-- PUT and DELETE count from the meta hash as read (mv) and write it once, at the end
-- (docs/redis.md, "Scripts"). first is the version the script found; fresh() reads mv
-- again after expire() wrote it.
local first = tonumber(mv[2] or '0')
local function fresh() mv = redis.call(unpack(META)) end
-- Writes what PUT or DELETE counted (keys only when it changed; fv where a namespace older
-- than the feed has none), then trims the feed when the versions this script took pass a
-- multiple of 32, or its bytes their bound.
local function counted(ver, bytes, keys, fb)
  local h = {'HSET', meta, 'ver', ver, 'bytes', bytes, 'fb', fb}
  -- The history's own fields (hy, hc, the floor) go in the same HSET.
  htrim(h)
  if keys then h[#h + 1] = 'keys'; h[#h + 1] = keys end
  if not mv[5] then h[#h + 1] = 'fv'; h[#h + 1] = ver - 1 end
  redis.call(unpack(h))
  if math.floor(ver / 32) ~= math.floor(first / 32) or fb > FEED_B + 16777216 then trim() end
  -- mv and first as now written, for the next write of a batch (WRITES).
  mv[2], mv[3], mv[4], first = ver, bytes, fb, ver
  if keys then mv[6] = keys end
  if not mv[5] then mv[5] = ver - 1 end
end
local function store(k, v, n, x, m)
  shield(k)
  local a = {'HSET', ent .. k, 'v', v, 'n', n}
  if x ~= '' then
    a[#a + 1] = 'x'; a[#a + 1] = x
    expiring()
    redis.call('ZADD', exp, tonumber(x), k)
  end
  if m and m ~= '' then a[#a + 1] = 'm'; a[#a + 1] = m end
  redis.call(unpack(a))
  redis.call('ZADD', idx, 0, k)
  redis.call('HINCRBY', meta, 'keys', 1)
  redis.call('HINCRBY', meta, 'bytes', #k + #v)
end
-- An entry's version when it is live (stored, and its expiry, if any, not passed), or nil;
-- and its fields as read: n, x, then any others asked for.
local function read(k, now, ...)
  local e = redis.call('HMGET', ent .. k, 'n', 'x', ...)
  local cur = e[1] or nil
  if cur and e[2] and tonumber(e[2]) <= now then cur = nil end
  return cur, e
end
local function live(k, now)
  return (read(k, now))
end
-- Before a key is written: an entry of it still stored but expired is deleted as its own change.
local function settle(k, now)
  if not live(k, now) and redis.call('EXISTS', ent .. k) == 1 then expire(k) end
end
`

/**
 * Whether a write of the script added to the feed (noted): its watchers are told once, at
 * the script's end (wake), however many writes it made.
 */
const WAKE = `
local noted = false
local function wake()
  if noted then redis.call('SPUBLISH', feed, '') end
end
`

/**
 * One put, as a function: key, value, now, expiresAt ('' for none), ifVersion ('' none, '-'
 * absent, or the version), metadata ('' for none). Returns { version, created }, or the
 * error reply CONFLICT. PUT runs it once, WRITES once per put of a batch.
 */
const PUT_ONE = `
local function put(k, v, now, x, want, m)
if prune(now, 16) > 0 then fresh() end
local e = ent .. k
-- With a window, the value too: the state this write supersedes is kept (keep, below).
local cur, had
if hist then cur, had = read(k, now, 'm', 'v') else cur, had = read(k, now, 'm') end
if want == '-' then
  if cur then return redis.error_reply('CONFLICT') end
elseif want ~= '' then
  if cur ~= want then return redis.error_reply('CONFLICT') end
end
if had[1] and not cur then
  -- Stored but expired: deleted as a change of its own first (as settle does).
  expire(k)
  fresh()
  had = {false, false, false, false}
end
-- The most common write, in as few calls as it can be: each call costs Redis about 1.3 us,
-- about as much as the work it does. The counters are computed from mv and written once
-- (counted); an overwritten key keeps its place in the ordered index and its count; the
-- expiry index and the entry's x and m are touched only when they change.
shield(k)
local ver = tonumber(mv[2] or '0') + 1
local bytes = tonumber(mv[3] or '0') + #v
local keys = nil
local a = {'HSET', e, 'v', v, 'n', ver}
local f = {'XADD', feed, ver .. '-0', 't', 'p', 'k', k, 'v', v}
if hist then
  stamp(ver)
  if cur then keep(k, ver, {had[4], had[1], had[2], had[3]}) end
end
if cur then
  -- With a window the value was read already (had[4]): its length needs no call of its own.
  bytes = bytes - (hist and #had[4] or redis.call('HSTRLEN', e, 'v'))
else
  bytes = bytes + #k
  keys = tonumber(mv[6] or '0') + 1
  redis.call('ZADD', idx, 0, k)
end
if x ~= '' then
  a[#a + 1] = 'x'; a[#a + 1] = x
  f[#f + 1] = 'x'; f[#f + 1] = x
  expiring()
  redis.call('ZADD', exp, tonumber(x), k)
elseif had[2] then
  redis.call('ZREM', exp, k)
end
if m ~= '' then
  a[#a + 1] = 'm'; a[#a + 1] = m
  f[#f + 1] = 'm'; f[#f + 1] = m
end
redis.call(unpack(a))
local drop = {'HDEL', e}
if x == '' and had[2] then drop[#drop + 1] = 'x' end
if m == '' and had[3] then drop[#drop + 1] = 'm' end
if #drop > 2 then redis.call(unpack(drop)) end
redis.call(unpack(f))
noted = true
counted(ver, bytes, keys, tonumber(mv[4] or '0') + #k + #v + #m)
if cur then return {ver, 0} end
return {ver, 1}
end
`

/**
 * put: ARGV key, value, now, expiresAt ('' for none), ifVersion ('' none, '-' absent, or
 * the version), metadata ('' for none). Returns { version, created }.
 */
export const PUT = `${PRELUDE}${WAKE}${PUT_ONE}
local r = put(ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6])
wake()
return r
`

/**
 * One delete, as a function: key, now, ifVersion ('' for none). Returns 1 when a live key
 * was deleted, else 0, or the error reply CONFLICT. DELETE runs it once, WRITES once per
 * delete of a batch.
 */
const DELETE_ONE = `
local function del(k, now, want)
if prune(now, 16) > 0 then fresh() end
local e = ent .. k
local cur, had = read(k, now)
if want ~= '' and cur ~= want then return redis.error_reply('CONFLICT') end
if not cur then
  -- Stored but expired: deleted as a change of its own (as settle does); no live key went.
  if had[1] then
    expire(k)
    htrim()
    -- expire() wrote the meta hash itself: the next write of a batch counts from it.
    fresh()
  end
  return 0
end
-- Counted from mv, as PUT does (above).
shield(k)
local ver = tonumber(mv[2] or '0') + 1
local bytes = tonumber(mv[3] or '0') - #k - redis.call('HSTRLEN', e, 'v')
if hist then
  stamp(ver)
  keep(k, ver)
  tomb(k, ver)
end
redis.call('DEL', e)
redis.call('ZREM', idx, k)
if had[2] then redis.call('ZREM', exp, k) end
redis.call('XADD', feed, ver .. '-0', 't', 'd', 'k', k)
noted = true
counted(ver, bytes, tonumber(mv[6] or '0') - 1, tonumber(mv[4] or '0') + #k)
return 1
end
`

/**
 * writes: the PUTs and DELETEs to one namespace in one turn (commands.ts), in one call:
 * ARGV per write 'p' and the six fields of put's, or 'd' and the three of delete's. Each is
 * applied in order as PUT or DELETE applies it, at the next version, and answered on its
 * own: { { version, created }, 1 or 0, or an error reply, ... }. A write whose check fails
 * (CONFLICT), or that fails on its way, fails alone. Watchers are told once for all.
 */
export const WRITES = `${PRELUDE}${WAKE}${PUT_ONE}${DELETE_ONE}
local out = {}
local i = 1
while i <= #ARGV do
  local ok, r
  if ARGV[i] == 'd' then
    ok, r = pcall(del, ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3])
    i = i + 4
  else
    ok, r = pcall(put, ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3]), ARGV[i + 4], ARGV[i + 5], ARGV[i + 6])
    i = i + 7
  end
  if ok then
    out[#out + 1] = r
  elseif type(r) == 'table' and r.err then
    out[#out + 1] = r
  else
    out[#out + 1] = redis.error_reply(tostring(r))
  end
end
wake()
return out
`

/** delete: ARGV key, now, ifVersion ('' for none). Returns 1 when a live key was deleted. */
export const DELETE = `${PRELUDE}${WAKE}${DELETE_ONE}
local r = del(ARGV[1], tonumber(ARGV[2]), ARGV[3])
wake()
return r
`

/**
 * get: ARGV key, now. Returns { value, version, expiresAt or false, metadata or false } or
 * nil. The hot read: no prelude (it defines functions on every call), just the generation
 * and the entry.
 */
export const GET = `
local g = redis.call('HGET', KEYS[1], 'g')
if not g then return redis.error_reply('NAMESPACE_NOT_FOUND') end
local e = redis.call('HMGET', string.sub(KEYS[1], 1, -2) .. g .. ':e:' .. ARGV[1], 'v', 'n', 'x', 'm')
if not e[1] then return nil end
if e[3] and tonumber(e[3]) <= tonumber(ARGV[2]) then return nil end
return {e[1], e[2], e[3] or false, e[4] or false}
`

/** stat: ARGV key, now. Returns { version, bytes, expiresAt or false } or nil. */
export const STAT = `${PRELUDE}
local k, now = ARGV[1], tonumber(ARGV[2])
local cur = live(k, now)
if not cur then return nil end
return {cur, size(k), redis.call('HGET', ent .. k, 'x') or false}
`

/**
 * list: ARGV prefix, after ('' for none), limit, reverse ('1' or ''), now, include ('' keys
 * only, else 'e' plus 'v' for values and 'm' for metadata), maxBytes ('' for none; with
 * values: the page ends after the entry that takes its value bytes past it), start and end
 * ('' for none: keys >= start and < end). Returns
 * { version, more (1 or 0), rows... }: a row is the key, or with include
 * { key, version, expiresAt or false, value or false, metadata or false }. Keys are
 * UTF-8, which never holds the byte 0xFF: prefix .. 0xFF bounds a prefix.
 */
export const LIST = `${PRELUDE}${RANGE_BOUNDS}
local prefix, after, limit, rev, now = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1', tonumber(ARGV[5])
local inc, most = ARGV[6], tonumber(ARGV[7])
local withv, withm = string.find(inc, 'v', 1, true), string.find(inc, 'm', 1, true)
local fields = {'n', 'x', 'v', 'm'}
if not withv then fields[3] = 'n' end
if not withm then fields[4] = 'n' end
local first, stop = ARGV[8] or '', ARGV[9] or ''
local lo, hi = bounds(prefix, first, stop, after, rev)
local out = {redis.call('HGET', meta, 'ver'), 0}
local count, bytes, full = 0, 0, false
while true do
  local page
  local want = limit - count + 1
  if rev then
    page = redis.call('ZRANGE', idx, hi, lo, 'BYLEX', 'REV', 'LIMIT', 0, want)
  else
    page = redis.call('ZRANGE', idx, lo, hi, 'BYLEX', 'LIMIT', 0, want)
  end
  if #page == 0 then break end
  for _, k in ipairs(page) do
    if live(k, now) then
      if full then
        out[2] = 1
        return out
      end
      count = count + 1
      if inc == '' then
        out[#out + 1] = k
      else
        local e = redis.call('HMGET', ent .. k, unpack(fields))
        local row = {k, e[1], e[2] or false, false, false}
        if withv then
          row[4] = e[3]
          bytes = bytes + #e[3]
        end
        if withm then row[5] = e[4] or false end
        out[#out + 1] = row
      end
      if count >= limit or (most and withv and bytes > most) then full = true end
    end
  end
  local last = page[#page]
  if rev then hi = '(' .. last else lo = '(' .. last end
  if #page < want then break end
end
return out
`

/**
 * counts: ARGV now. Returns { keys, bytes, due }: due is 1 when an entry's expiry has
 * passed and it still counts (then EXPIRE, a write, reclaims it).
 */
export const COUNTS = `
local g = redis.call('HGET', KEYS[1], 'g')
if not g then return redis.error_reply('NAMESPACE_NOT_FOUND') end
local exp = string.sub(KEYS[1], 1, -2) .. g .. ':x'
local c = redis.call('HMGET', KEYS[1], 'keys', 'bytes')
local due = #redis.call('ZRANGE', exp, '-inf', '(' .. ARGV[1], 'BYSCORE', 'LIMIT', 0, 1)
return {tonumber(c[1]) or 0, tonumber(c[2]) or 0, due}
`

/**
 * expire: ARGV now. Deletes up to 256 entries whose expiry has passed, each a change of its
 * own (a version and a delete in the feed), then { keys, bytes }.
 */
export const EXPIRE = `${PRELUDE}
prune(tonumber(ARGV[1]), 256)
trim()
htrim()
local c = redis.call('HMGET', meta, 'keys', 'bytes')
return {tonumber(c[1]) or 0, tonumber(c[2]) or 0}
`

/** feedVersion: Returns { generation, version }. */
export const FEED_VERSION = `
local c = redis.call('HMGET', KEYS[1], 'g', 'ver')
if not c[1] then return redis.error_reply('NAMESPACE_NOT_FOUND') end
return {c[1], c[2]}
`

/**
 * feedRead: ARGV since, limit. Returns { version, generation, 1 } when the feed no longer
 * reaches back to since (a change after it was trimmed: fv > since), else
 * { version, generation, 0, entries... } with the changes after since, at most limit, and
 * then the rest of the last one's version (a batch's changes share a version), so asking
 * again from the last version misses nothing.
 */
export const FEED_READ = `
local c = redis.call('HMGET', KEYS[1], 'g', 'ver', 'fv')
if not c[1] then return redis.error_reply('NAMESPACE_NOT_FOUND') end
local since, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local floor = tonumber(c[3] or c[2])
if floor > since then return {c[2], c[1], 1} end
local out = {c[2], c[1], 0}
if since >= tonumber(c[2]) then return out end
local feed = string.sub(KEYS[1], 1, -2) .. c[1] .. ':f'
local got = redis.call('XRANGE', feed, tostring(since + 1), '+', 'COUNT', limit)
for _, e in ipairs(got) do out[#out + 1] = e end
if #got == limit then
  local last = got[#got][1]
  local rest = redis.call('XRANGE', feed, '(' .. last, string.match(last, '^(%d+)'))
  for _, e in ipairs(rest) do out[#out + 1] = e end
end
return out
`

/**
 * create: KEYS[1] the meta hash, KEYS[2] the generation counter (kept after a drop, so a
 * namespace made again never meets the entries of the one dropped). Returns 1 if made.
 */
export const CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local g = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'g', g, 'ver', 0, 'keys', 0, 'bytes', 0, 'fv', 0, 'fb', 0)
return 1
`

/**
 * drop: removes the meta hash and the generation's feed; returns { the generation whose
 * entries are now garbage, the prefix of its history ('' for none) }, or nil.
 */
export const DROP = `
local c = redis.call('HMGET', KEYS[1], 'g', 'hs', 'he')
local g = c[1]
if not g then return nil end
redis.call('DEL', KEYS[1])
local base = string.sub(KEYS[1], 1, -2)
redis.call('UNLINK', base .. g .. ':f')
local hist = ''
if c[2] then hist = base .. g .. ':h' .. (c[3] or '0') .. ':' end
return {g, hist}
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
 * import: ARGV now, then per entry its key, value, version, expiry ('' for none) and
 * metadata ('' for none). Writes entries with the versions they had (cairn migrate), and
 * raises the namespace's version counter past the highest, so later writes keep the order.
 * The feed is not written: its floor (fv) moves up to the new version, so a read from
 * before it answers that history is gone.
 */
export const IMPORT = `${PRELUDE}
local now = tonumber(ARGV[1])
-- The namespace's version where it came from: its last writes may have been deletes, which
-- leave no entry to carry them.
local top = tonumber(ARGV[2])
local i = 3
while i <= #ARGV do
  local k, v, n, x, m = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  i = i + 5
  if x == '' or tonumber(x) > now then
    local had = redis.call('HGET', ent .. k, 'n')
    -- An entry written here since an earlier run is newer than the copy, and stays.
    if not had or tonumber(had) <= tonumber(n) then
      if had then forget(k) end
      store(k, v, n, x, m)
    end
    if tonumber(n) > top then top = tonumber(n) end
  end
end
-- Neither counter goes back: writes made here since an earlier run keep their versions, and
-- their changes stay in the feed.
local ver = math.max(tonumber(mv[2] or '0'), top)
local fv = math.max(tonumber(mv[5] or '0'), top)
redis.call('HSET', meta, 'ver', ver, 'fv', fv)
-- History cannot tell what the copied versions superseded: it begins again at the new version.
hfloor(ver)
return ver
`

/**
 * Decimal integers as text, of any size and either sign (Lua numbers are doubles, exact
 * only to 2^53): add(a, b) works on 9-digit limbs, each sum or difference well inside a
 * double's exact range.
 */
const DECIMAL = `
local function magcmp(a, b)
  if #a ~= #b then return #a < #b and -1 or 1 end
  if a == b then return 0 end
  return a < b and -1 or 1
end
local function limbs(a)
  local out = {}
  local e = #a
  while e > 0 do
    local s = e - 8
    if s < 1 then s = 1 end
    out[#out + 1] = tonumber(string.sub(a, s, e))
    e = s - 1
  end
  return out
end
local function join(l)
  local i = #l
  while i > 1 and l[i] == 0 do i = i - 1 end
  local parts = {string.format('%d', l[i])}
  for j = i - 1, 1, -1 do parts[#parts + 1] = string.format('%09d', l[j]) end
  return table.concat(parts)
end
local function magadd(a, b)
  local x, y, out, carry = limbs(a), limbs(b), {}, 0
  for j = 1, math.max(#x, #y) do
    local s = (x[j] or 0) + (y[j] or 0) + carry
    if s >= 1000000000 then s, carry = s - 1000000000, 1 else carry = 0 end
    out[j] = s
  end
  if carry > 0 then out[#out + 1] = carry end
  return join(out)
end
-- a - b for magnitudes a >= b
local function magsub(a, b)
  local x, y, out, borrow = limbs(a), limbs(b), {}, 0
  for j = 1, #x do
    local s = x[j] - (y[j] or 0) - borrow
    if s < 0 then s, borrow = s + 1000000000, 1 else borrow = 0 end
    out[j] = s
  end
  return join(out)
end
local function split(a)
  if string.sub(a, 1, 1) == '-' then return '-', string.sub(a, 2) end
  return '', a
end
local function add(a, b)
  local sa, ma = split(a)
  local sb, mb = split(b)
  local r, sign
  if sa == sb then
    r, sign = magadd(ma, mb), sa
  else
    local c = magcmp(ma, mb)
    if c == 0 then return '0' end
    if c > 0 then r, sign = magsub(ma, mb), sa else r, sign = magsub(mb, ma), sb end
  end
  if r == '0' then return '0' end
  return sign .. r
end
-- A value's JSON text as an integer literal (surrounding JSON whitespace allowed), or nil.
local function integer(v)
  local t = string.match(v, '^[ \\t\\r\\n]*(.-)[ \\t\\r\\n]*$')
  if t == '0' or t == '-0' then return '0' end
  if string.match(t, '^%-?[1-9]%d*$') then return t end
  return nil
end
`

/**
 * transact: ARGV now, then 7 fields per op: kind, key, a, x, m, mmode, want.
 * - 'c' check: want is the version or '-' (absent);
 * - 'g' get: a is '1' when metadata is asked for;
 * - 'p' put: a the value, x expiry ('' none), m metadata ('' none), want as for put;
 * - 'd' delete: want the version or '';
 * - 'i' increment: a the amount (decimal text);
 * - 'a' patch: a the amount or '', x '' keep, 'p' persist or the expiry, mmode '' keep,
 *   's' set to m, 'r' remove; want the version or ''.
 * Every op is decided first, on the state before any write; the first that fails answers
 * "<CODE> <index>" (CONFLICT, NOT_A_NUMBER, KEY_NOT_FOUND, VALUE_TOO_LARGE: an increment's
 * result longer than ARGV[2] bytes) and nothing is written. Then
 * the writes, each at the next version, each a change in the feed. Returns
 * { version, results... }: per op { 'c' }, { 'g' } (not found) or
 * { 'g', value, version, expiresAt or false, metadata or false }, { 'p', version, created },
 * { 'd', deleted }, { 'i', value, version }, { 'a', version, value or false, created }.
 */
export const TRANSACT = `${PRELUDE}${DECIMAL}
local now = tonumber(ARGV[1])
-- The most bytes an increment's result may be (the plan's largest value), or none.
local most = tonumber(ARGV[2])
prune(now, 16)
local ops, plan = {}, {}
local i = 3
while i <= #ARGV do
  ops[#ops + 1] = {ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6]}
  i = i + 7
end
local function fail(code, j) return redis.error_reply(code .. ' ' .. (j - 1)) end
for j, o in ipairs(ops) do
  local kind, k, a, x, m, mmode, want = o[1], o[2], o[3], o[4], o[5], o[6], o[7]
  local cur = live(k, now)
  if want ~= '' then
    if want == '-' then
      if cur then return fail('CONFLICT', j) end
    elseif cur ~= want then
      return fail('CONFLICT', j)
    end
  end
  if kind == 'g' then
    if cur then
      local e = redis.call('HMGET', ent .. k, 'v', 'x', 'm')
      local meta_ = false
      if a == '1' then meta_ = e[3] or false end
      plan[j] = {'g', e[1], cur, e[2] or false, meta_}
    else
      plan[j] = {'g'}
    end
  elseif kind == 'i' or kind == 'a' then
    local v, ex, md = '0', '', ''
    if cur then
      local e = redis.call('HMGET', ent .. k, 'v', 'x', 'm')
      v, ex, md = e[1], e[2] or '', e[3] or ''
    elseif kind == 'a' and a == '' then
      return fail('KEY_NOT_FOUND', j)
    end
    if a ~= '' then
      local n = integer(v)
      if not n then return fail('NOT_A_NUMBER', j) end
      v = add(n, a)
      if most and #v > most then return fail('VALUE_TOO_LARGE', j) end
    end
    if kind == 'a' then
      if x == 'p' then ex = '' elseif x ~= '' then ex = x end
      if mmode == 's' then md = m elseif mmode == 'r' then md = '' end
    end
    plan[j] = {v, ex, md, not cur}
  end
end
-- Expired entries of keys about to be written go first, so the writes' versions are consecutive.
for _, o in ipairs(ops) do
  if o[1] ~= 'c' and o[1] ~= 'g' then settle(o[2], now) end
end
local ver = tonumber(redis.call('HGET', meta, 'ver'))
local out = {ver}
for j, o in ipairs(ops) do
  local kind, k = o[1], o[2]
  if kind == 'c' then
    out[j + 1] = {'c'}
  elseif kind == 'g' then
    out[j + 1] = plan[j]
  elseif kind == 'd' then
    if live(k, now) then
      ver = redis.call('HINCRBY', meta, 'ver', 1)
      stamp(ver)
      keep(k, ver)
      tomb(k, ver)
      forget(k)
      note(ver, 0, 'd', k)
      out[j + 1] = {'d', 1}
    else
      out[j + 1] = {'d', 0}
    end
  else
    local v, ex, md, created
    if kind == 'p' then
      v, ex, md, created = o[3], o[4], o[5], not live(k, now)
    else
      v, ex, md, created = plan[j][1], plan[j][2], plan[j][3], plan[j][4]
    end
    ver = redis.call('HINCRBY', meta, 'ver', 1)
    stamp(ver)
    if redis.call('EXISTS', ent .. k) == 1 then
      keep(k, ver)
      forget(k)
    end
    store(k, v, ver, ex, md)
    note(ver, 0, 'p', k, v, ex, md)
    if kind == 'p' then
      out[j + 1] = {'p', ver, created and 1 or 0}
    elseif kind == 'i' then
      out[j + 1] = {'i', v, ver}
    else
      local shown = false
      if o[3] ~= '' then shown = v end
      out[j + 1] = {'a', ver, shown, created and 1 or 0}
    end
  end
end
out[1] = ver
trim()
htrim()
return out
`

/**
 * countRange: ARGV prefix, start, end, now. Returns { count, bytes, version }: the live keys
 * of the range and their bytes (key plus value), walked in one script, so at one version.
 */
export const COUNT_RANGE = `${PRELUDE}${RANGE_BOUNDS}
local now = tonumber(ARGV[4])
local lo, hi = bounds(ARGV[1], ARGV[2], ARGV[3])
local count, bytes = 0, 0
while true do
  local page = redis.call('ZRANGE', idx, lo, hi, 'BYLEX', 'LIMIT', 0, 1000)
  for _, k in ipairs(page) do
    if live(k, now) then
      count = count + 1
      bytes = bytes + size(k)
    end
  end
  if #page < 1000 then break end
  lo = '(' .. page[#page]
end
return {count, bytes, tonumber(mv[2] or '0')}
`

/**
 * snapOpen: ARGV id, now, lifetime (ms). Opens a snapshot at the namespace's version: from
 * now until it closes or its lifetime ends, writes keep what they replace (shield, above).
 * Returns the version.
 */
export const SNAP_OPEN = `${PRELUDE}
local dl = tonumber(ARGV[2]) + tonumber(ARGV[3])
redis.call('HSET', base .. g .. ':s', ARGV[1], dl .. ':')
redis.call('HSET', meta, 'sn', 1)
return tonumber(mv[2] or '0')
`

/**
 * snapRead: ARGV id, prefix, start, end, limit, now. The next entries of the range after the
 * snapshot's last, as they were at its version: keys kept by writes since (their states at
 * the version) merged with the index's keys not written since. Returns { ended (1 or 0),
 * rows... }, a row { key, value, version, expiresAt or false, metadata or false }; the
 * states handed out are let go. SNAPSHOT_GONE when it closed or outlived its lifetime.
 */
export const SNAP_READ = `${PRELUDE}${RANGE_BOUNDS}
local snaps = base .. g .. ':s'
local id, limit, now = ARGV[1], tonumber(ARGV[5]), tonumber(ARGV[6])
local s = redis.call('HGET', snaps, id)
if not s then return redis.error_reply('SNAPSHOT_GONE') end
local dl, passed = string.match(s, '^(%d+):(.*)$')
if tonumber(dl) <= now then return redis.error_reply('SNAPSHOT_GONE') end
local sb = snaps .. ':' .. id
local lo, hi = bounds(ARGV[2], ARGV[3], ARGV[4])
if passed ~= '' then lo = '(' .. passed end
local page = redis.call('ZRANGE', idx, lo, hi, 'BYLEX', 'LIMIT', 0, limit)
local ended = #page < limit
local upto = hi
if not ended then upto = '[' .. page[#page] end
local kept = redis.call('ZRANGE', sb .. ':i', lo, upto, 'BYLEX')
local seen, keys = {}, {}
for _, k in ipairs(page) do seen[k] = true; keys[#keys + 1] = k end
for _, k in ipairs(kept) do
  if not seen[k] then seen[k] = true; keys[#keys + 1] = k end
end
table.sort(keys)
local out = {0}
for _, k in ipairs(keys) do
  local score = redis.call('ZSCORE', sb .. ':i', k)
  local e
  if score then
    if tonumber(score) == 0 then e = redis.call('HMGET', sb .. ':e:' .. k, 'v', 'n', 'x', 'm') end
    redis.call('DEL', sb .. ':e:' .. k)
    redis.call('ZREM', sb .. ':i', k)
  else
    e = redis.call('HMGET', ent .. k, 'v', 'n', 'x', 'm')
  end
  if e and e[1] and not (e[3] and tonumber(e[3]) <= now) then
    out[#out + 1] = {k, e[1], e[2], e[3] or false, e[4] or false}
  end
end
if ended then
  out[1] = 1
elseif #keys > 0 then
  redis.call('HSET', snaps, id, dl .. ':' .. keys[#keys])
end
return out
`

/**
 * snapClose: ARGV id. Lets go of up to 1,000 of the snapshot's kept states; returns how many
 * remain (0 once it is closed: call again until then).
 */
export const SNAP_CLOSE = `
local g = redis.call('HGET', KEYS[1], 'g')
if not g then return 0 end
local snaps = string.sub(KEYS[1], 1, -2) .. g .. ':s'
local sb = snaps .. ':' .. ARGV[1]
redis.call('HDEL', snaps, ARGV[1])
if redis.call('HLEN', snaps) == 0 then redis.call('HDEL', KEYS[1], 'sn') end
local kept = redis.call('ZRANGE', sb .. ':i', 0, 999)
for _, k in ipairs(kept) do redis.call('DEL', sb .. ':e:' .. k) end
if #kept > 0 then redis.call('ZREM', sb .. ':i', unpack(kept)) end
return redis.call('ZCARD', sb .. ':i')
`
