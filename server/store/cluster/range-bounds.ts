/**
 * Where a range's keys lie in the ordered index, as ZRANGE BYLEX bounds, in Lua, for every
 * script that walks a range (LIST, HISTORY_LIST, COUNT_RANGE, SNAP_READ):
 * bounds(prefix, first, stop, after, rev) gives lo, hi for the keys within the prefix, >= first
 * and < stop, and past `after` in the walk's direction ('' for each, or after nil: none). Keys
 * are UTF-8, which never holds the byte 0xFF: prefix .. 0xFF bounds a prefix.
 */
export const RANGE_BOUNDS = `
local function bounds(prefix, first, stop, after, rev)
  local lo, hi = '-', '+'
  if prefix ~= '' then lo, hi = '[' .. prefix, '(' .. prefix .. '\\255' end
  if first ~= '' and (lo == '-' or first > string.sub(lo, 2)) then lo = '[' .. first end
  if stop ~= '' and (hi == '+' or stop <= string.sub(hi, 2)) then hi = '(' .. stop end
  if after and after ~= '' then
    if rev then
      if hi == '+' or after < string.sub(hi, 2) then hi = '(' .. after end
    elseif lo == '-' or after >= string.sub(lo, 2) then
      lo = '(' .. after
    end
  end
  return lo, hi
end
`
