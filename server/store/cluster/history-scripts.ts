// History on Redis (docs/redis.md, "History"): the Lua the write scripts run to keep what they
// supersede, and the scripts that read at a point. Everything sits under the namespace's hash
// tag, in its generation g and its history epoch e (a window turned off and on again starts a
// new epoch, so no version kept before can answer for the time between):
//   <base><g>:h<e>:l        stream, one entry per kept state, id <superseding version>-<seq>:
//                           k key, n the state's own version, s its bytes, t the commit time
//   <base><g>:h<e>:t        sorted set, commit time (ms) by version (16-digit member)
//   <base><g>:h<e>:k:<key>  sorted set, the key's kept states scored by their versions
//   <base><g>:h<e>:d        sorted set (lex), keys with kept states that the index may lack
// and in the meta hash: hs, hb (the window), he (epoch), hv, ha (the floor: oldest version
// kept whole and its time), hy (bytes kept), hc (the last commit time, never going back).
import { RANGE_BOUNDS } from './range-bounds.js'

/**
 * Write-side history, part of the write scripts' prelude (after META is read into mv; mv[9]
 * is hs, mv[10] he). With no window (mv[9] unset) stamp, keep, tomb, htrim and hfloor do
 * nothing and nothing more is read or defined; with one, the window's other fields are read
 * once, by the first write that needs them (hm).
 */
export const HISTORY_WRITE = `
local hist = nil
local function none() end
local stamp, keep, tomb, htrim, hfloor = none, none, none, none, none
if mv[9] then
hist = base .. g .. ':h' .. (mv[10] or '0') .. ':'
-- The rest of the window's fields, as META read them (they change only at the script's end).
local function hmeta() return {mv[10], mv[11], mv[12], mv[13], mv[14]} end
local hm = hmeta()
local hkept, hbytes, htime, hclock = 0, 0, nil, nil
local hfirst = tonumber(mv[2] or '0')
local hlast = hfirst
local function hpad(v) return string.format('%016d', v) end
-- The write's commit time: the master's clock, never behind the last commit's (a failover
-- may bring a clock that is behind), so times ordered by version stay ordered. One TIME call
-- per script: hclock is the clock as read, for trimming.
stamp = function(ver)
  hlast = ver
  if not htime then
    local t = redis.call('TIME')
    hclock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    htime = hclock
    local last = tonumber(hm[2] or '0')
    if last > htime then htime = last end
  end
  redis.call('ZADD', hist .. 't', htime, hpad(ver))
end
local function hlog(k, n, s, ver)
  redis.call('XADD', hist .. 'l', ver .. '-*', 'k', k, 'n', n, 's', s, 't', htime)
  hkept = hkept + 1
  hbytes = hbytes + s
end
-- Keeps the key's stored state (e: its v, n, x, m, or nil to read them) as superseded by the
-- write at version ver: packed as p<n>:<x>:<#m>:<m><v>.
keep = function(k, ver, e)
  if not e then e = redis.call('HMGET', ent .. k, 'v', 'n', 'x', 'm') end
  if not e[1] then return end
  local m = e[4] or ''
  redis.call('ZADD', hist .. 'k:' .. k, e[2], 'p' .. e[2] .. ':' .. (e[3] or '') .. ':' .. #m .. ':' .. m .. e[1])
  hlog(k, e[2], #k + #e[1] + #m, ver)
end
-- A delete at version ver: the tombstone is kept too, so the key reads as absent from ver on
-- even where an older state is kept; the key is named in :d, since the index no longer holds it.
tomb = function(k, ver)
  redis.call('ZADD', hist .. 'k:' .. k, ver, 'd' .. ver .. ':::')
  redis.call('ZADD', hist .. 'd', 0, k)
  hlog(k, ver, #k, ver)
end
-- Bounded trimming after a write: while the bytes are past the bound, at once; by time, when
-- the script's versions pass a multiple of 8 (so 7 writes in 8 pay nothing for it). At most 16
-- kept states go plus two for each this script kept (oldest first: superseded before the
-- window's start, or while the bytes are past the bound), and at most 8 times; the floor moves
-- to the last superseding version dropped.
htrim = function(into)
  if hkept == 0 and not htime then return end
  local most = tonumber(hm[4] or '0')
  local held = tonumber(hm[3] or '0') + hbytes
  -- What it writes to the meta hash goes into the caller's HSET (into) where there is one.
  local h = into or {'HSET', meta}
  local function done()
    if not into then redis.call(unpack(h)) end
  end
  h[#h + 1] = 'hy'; h[#h + 1] = held
  local at = #h
  if htime then h[#h + 1] = 'hc'; h[#h + 1] = htime end
  local turn = math.floor(hlast / 8) ~= math.floor(hfirst / 8)
  -- A WRITES call trims after each of its writes: the next one turns at the next multiple of 8
  -- past this one, not at every write after the first turn of the call.
  hfirst = hlast
  if held <= most and not turn then return done() end
  local now = hclock
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  local cut = now - tonumber(mv[9]) * 1000
  local floor = tonumber(hm[5] or '0')
  local moved = false
  local budget = 16 + 2 * hkept
  local log = hist .. 'l'
  -- A first page of 2: at the bound, a write's own state usually pushes out one.
  local size = 2
  while budget > 0 do
    local page = redis.call('XRANGE', log, '-', '+', 'COUNT', math.min(budget, size))
    size = 8
    if #page == 0 then break end
    local gone = {}
    for _, en in ipairs(page) do
      local f = en[2]
      local k, n, s, at = f[2], f[4], tonumber(f[6]), tonumber(f[8])
      if at >= cut and held <= most then break end
      local hk = hist .. 'k:' .. k
      local v = tonumber(string.match(en[1], '^(%d+)'))
      redis.call('ZREMRANGEBYSCORE', hk, n, n)
      -- A tombstone (its own version is the one it is logged at) going: the key leaves :d
      -- when the index has it again or nothing of it is kept (else a later delete's
      -- tombstone, still kept, needs it there). States drop oldest first, so no later drop
      -- can empty the key's set while one of its tombstones is kept.
      if tonumber(n) == v and (redis.call('EXISTS', ent .. k) == 1 or redis.call('EXISTS', hk) == 0) then
        redis.call('ZREM', hist .. 'd', k)
      end
      held = held - s
      if v > floor then floor, moved = v, true end
      gone[#gone + 1] = en[1]
    end
    if #gone > 0 then redis.call('XDEL', log, unpack(gone)) end
    budget = budget - #gone
    if #gone < #page then break end
  end
  -- Times (once in 8 versions): a version below the floor, or whose successor committed
  -- before the window's start, is out of it.
  local ts = {}
  if turn then ts = redis.call('ZRANGE', hist .. 't', 0, 8, 'WITHSCORES') end
  local drop = 0
  for i = 1, #ts - 2, 2 do
    local v, nv, nt = tonumber(ts[i]), tonumber(ts[i + 2]), tonumber(ts[i + 3])
    if v < floor then
      drop = drop + 1
    elseif nt < cut then
      drop = drop + 1
      if nv > floor then floor, moved = nv, true end
    else
      break
    end
  end
  if drop > 0 then redis.call('ZREMRANGEBYRANK', hist .. 't', 0, drop - 1) end
  h[at] = held
  if moved then
    h[#h + 1] = 'hv'; h[#h + 1] = floor
    local ft = redis.call('ZSCORE', hist .. 't', hpad(floor))
    if ft then h[#h + 1] = 'ha'; h[#h + 1] = ft end
  end
  -- WRITES trims after each of its writes: the next one starts from what this one left (held
  -- is hm's bytes plus every state the script kept so far), not from what META read.
  hm[3] = held - hbytes
  hm[5] = floor
  done()
end
-- Where the versions a write made cannot be told apart from what they superseded (IMPORT):
-- the history begins again at ver.
hfloor = function(ver)
  stamp(ver)
  redis.call('HSET', meta, 'hv', ver, 'ha', htime, 'hc', htime)
end
end
`

/**
 * Read-side prelude: the namespace's window, its oldest readable point and resolve(), which
 * turns ARGV[1] ('v' or 't') and ARGV[2] (a version or ms) into the point's version and the
 * time expiries are judged at (the last moment that version was current).
 */
const HISTORY_READ = `
local meta = KEYS[1]
local base = string.sub(meta, 1, -2)
local c = redis.call('HMGET', meta, 'g', 'ver', 'hs', 'he', 'hv', 'ha', 'hy', 'hc')
if not c[1] then return redis.error_reply('NAMESPACE_NOT_FOUND') end
local g, ver = c[1], tonumber(c[2] or '0')
local ent = base .. g .. ':e:'
local idx = base .. g .. ':i'
local hist = nil
if c[3] then hist = base .. g .. ':h' .. (c[4] or '0') .. ':' end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function hpad(v) return string.format('%016d', v) end
local function vof(m) return tonumber(m) end
-- The oldest readable point: the floor, or the version current at the window's start.
local function from()
  if not hist then return ver, now end
  local fv, fa = tonumber(c[5] or '0'), tonumber(c[6] or '0')
  local cut = now - tonumber(c[3]) * 1000
  if fa >= cut then return fv, fa end
  local r = redis.call('ZRANGE', hist .. 't', cut, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1)
  if r[1] and vof(r[1]) > fv then fv = vof(r[1]) end
  return fv, cut
end
local function resolve(kind, p)
  local fv, fa = from()
  if kind == 'v' then
    local v = tonumber(p)
    if v == ver then return v, now end
    if v > ver then return nil, redis.error_reply('INVALID_POINT version ' .. p .. ' is above the namespace\\'s ' .. ver) end
    if v < fv then return nil, redis.error_reply('HISTORY_EXPIRED version ' .. p .. ' is older than the history, which begins at ' .. fv) end
    local at = redis.call('ZSCORE', hist .. 't', hpad(v + 1))
    return v, tonumber(at or now)
  end
  local at = tonumber(p)
  if at > now then return nil, redis.error_reply('INVALID_POINT a time in the future') end
  if at < fa then return nil, redis.error_reply('HISTORY_EXPIRED at ' .. fa) end
  if not hist then return ver, at end
  local r = redis.call('ZRANGE', hist .. 't', at, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1)
  local v = fv
  if r[1] and vof(r[1]) > v then v = vof(r[1]) end
  return v, at
end
-- A kept state as { kind, version, expiry, metadata, value }.
local function unpackState(r)
  local kind, n, x, ml, rest = string.match(r, '^(%a)(%d+):(%d*):(%d*):()')
  local m = ''
  local mlen = tonumber(ml) or 0
  if mlen > 0 then m = string.sub(r, rest, rest + mlen - 1) end
  return kind, n, x, m, string.sub(r, rest + mlen)
end
-- The key at the point (version p, expiries judged at time tp): { version, x, v, m } or nil.
local function stateAt(k, p, tp)
  local e = redis.call('HMGET', ent .. k, 'n', 'x', 'v', 'm')
  if e[1] and tonumber(e[1]) <= p then
    if e[2] and tonumber(e[2]) <= tp then return nil end
    return {e[1], e[2] or false, e[3], e[4] or false}
  end
  if not hist then return nil end
  local r = redis.call('ZRANGE', hist .. 'k:' .. k, p, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1)
  if not r[1] then return nil end
  local kind, n, x, m, v = unpackState(r[1])
  if kind == 'd' then return nil end
  if x ~= '' and tonumber(x) <= tp then return nil end
  if x == '' then x = false end
  if m == '' then m = false end
  return {n, x, v, m}
end
`

/**
 * setWindow: ARGV seconds, bytes. Turning a window on starts the history at the current
 * version; changing it keeps what is kept (writes trim to the new bound); turning it off
 * starts a new epoch and returns the old epoch's prefix for sweeping (HISTORY_SWEEP), else ''.
 */
export const HISTORY_SET = `
local meta = KEYS[1]
local base = string.sub(meta, 1, -2)
local c = redis.call('HMGET', meta, 'g', 'ver', 'hs', 'he', 'hc', 'hb')
if not c[1] then return redis.error_reply('NAMESPACE_NOT_FOUND') end
local seconds, bytes = tonumber(ARGV[1]), tonumber(ARGV[2])
local he = tonumber(c[4] or '0')
if seconds <= 0 or bytes <= 0 then
  if not c[3] then return '' end
  redis.call('HDEL', meta, 'hs', 'hb', 'hv', 'ha', 'hy')
  redis.call('HSET', meta, 'he', he + 1)
  return base .. c[1] .. ':h' .. he .. ':'
end
if c[3] then
  if tonumber(c[3]) ~= seconds or tonumber(c[6]) ~= bytes then
    redis.call('HSET', meta, 'hs', seconds, 'hb', bytes)
  end
  return ''
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(c[5] or '0') > now then now = tonumber(c[5]) end
local ver = tonumber(c[2] or '0')
redis.call('HSET', meta, 'hs', seconds, 'hb', bytes, 'hv', ver, 'ha', now, 'hy', 0, 'hc', now, 'he', he)
redis.call('ZADD', base .. c[1] .. ':h' .. he .. ':t', now, string.format('%016d', ver))
return ''
`

/**
 * sweep: ARGV a history prefix no namespace reads any more (a window turned off, a namespace
 * dropped). Deletes the key sets of up to 500 kept states; returns how many remain.
 */
export const HISTORY_SWEEP = `
local hist = ARGV[1]
local log = hist .. 'l'
local page = redis.call('XRANGE', log, '-', '+', 'COUNT', 500)
local ids = {}
for _, en in ipairs(page) do
  redis.call('UNLINK', hist .. 'k:' .. en[2][2])
  ids[#ids + 1] = en[1]
end
if #ids > 0 then redis.call('XDEL', log, unpack(ids)) end
local left = redis.call('XLEN', log)
if left == 0 then redis.call('UNLINK', log, hist .. 't', hist .. 'd') end
return left
`

/**
 * getAt: ARGV kind ('v' or 't'), point, key. Returns { version at the point, state } where
 * state is { version, expiresAt or false, value, metadata or false } or false.
 */
export const HISTORY_GET = `${HISTORY_READ}
local p, tp = resolve(ARGV[1], ARGV[2])
if not p then return tp end
return {p, stateAt(ARGV[3], p, tp) or false}
`

/**
 * window: Returns { from version, from time, bytes kept }.
 */
export const HISTORY_WINDOW = `${HISTORY_READ}
local fv, fa = from()
return {fv, fa, tonumber(c[7] or '0')}
`

/**
 * versions: ARGV key, limit, before ('' for none). The key's versions within the history,
 * newest first: { from version, from time, rows... }, a row { kind ('p' live or kept, 'd'),
 * version, commit time or false, expiresAt or false, value or false, metadata or false }.
 */
export const HISTORY_VERSIONS = `${HISTORY_READ}
local k, limit, before = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local fv, fa = from()
local out = {fv, fa}
local function timeOf(n)
  if not hist then return false end
  local at = redis.call('ZSCORE', hist .. 't', hpad(tonumber(n)))
  return at or false
end
local e = redis.call('HMGET', ent .. k, 'n', 'x', 'v', 'm')
local newer = nil
if e[1] then
  newer = tonumber(e[1])
  if not before or newer < before then
    out[#out + 1] = {'p', e[1], timeOf(e[1]), e[2] or false, e[3], e[4] or false}
  end
end
if not hist then return out end
local hk = hist .. 'k:' .. k
local top = '+inf'
if newer then top = '(' .. newer end
while #out - 2 < limit do
  local r = redis.call('ZRANGE', hk, top, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 100)
  if #r == 0 then break end
  for _, s in ipairs(r) do
    local kind, n, x, m, v = unpackState(s)
    -- Superseded at or before the oldest readable point: not part of the history.
    if newer and newer <= fv then return out end
    if #out - 2 >= limit then return out end
    if not before or tonumber(n) < before then
      if kind == 'd' then
        out[#out + 1] = {'d', n, timeOf(n), false, false, false}
      else
        out[#out + 1] = {'p', n, timeOf(n), x ~= '' and x or false, v, m ~= '' and m or false}
      end
    end
    newer = tonumber(n)
  end
  top = '(' .. newer
end
return out
`

/**
 * listAt: ARGV kind, point, prefix, start, end, after, limit, reverse ('1' or ''), include
 * ('' keys only, else 'e'). The keys in the index and those with kept states (:d) are walked
 * together in order, each read at the point; at most 2,000 are looked at in one call.
 * Returns { version at the point, more (1 or 0), resume key or false, rows... }: a row is the
 * key, or { key, version, expiresAt or false, value, metadata or false }. resume, when set,
 * is where the next page goes on (the walk stopped before the page was full).
 */
export const HISTORY_LIST = `${HISTORY_READ}${RANGE_BOUNDS}
local p, tp = resolve(ARGV[1], ARGV[2])
if not p then return tp end
local prefix, first, stop, after = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local limit, rev, inc = tonumber(ARGV[7]), ARGV[8] == '1', ARGV[9]
local lo, hi = bounds(prefix, first, stop, after, rev)
local out = {p, 0, false}
local sets = {idx}
if hist then sets[2] = hist .. 'd' end
local W = math.min(limit + 1, 500)
local looked, count = 0, 0
local function range(set)
  if rev then return redis.call('ZRANGE', set, hi, lo, 'BYLEX', 'REV', 'LIMIT', 0, W) end
  return redis.call('ZRANGE', set, lo, hi, 'BYLEX', 'LIMIT', 0, W)
end
local function before(a, b) if rev then return a > b end return a < b end
while true do
  -- Up to where every set's page is complete, the keys of all of them, in order.
  local horizon, keys, seen = nil, {}, {}
  for _, set in ipairs(sets) do
    local page = range(set)
    if #page == W and (not horizon or before(page[W], horizon)) then horizon = page[W] end
    for _, k in ipairs(page) do
      if not seen[k] then seen[k] = true; keys[#keys + 1] = k end
    end
  end
  if #keys == 0 then return out end
  table.sort(keys, before)
  for _, k in ipairs(keys) do
    if horizon and before(horizon, k) then break end
    looked = looked + 1
    local s = stateAt(k, p, tp)
    if s then
      if count >= limit then
        out[2] = 1
        return out
      end
      count = count + 1
      if inc == '' then out[#out + 1] = k else out[#out + 1] = {k, s[1], s[2], s[3], s[4]} end
    end
    -- Bounded work: past 2,000 keys looked at, the page ends here (the next goes on after k).
    if looked >= 2000 then
      out[2] = 1
      if count < limit then out[3] = k end
      return out
    end
    if rev then hi = '(' .. k else lo = '(' .. k end
  end
  if not horizon then return out end
end
`
