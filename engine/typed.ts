// Typed arrays hold the index's columns (slots, checkpoint columns, compaction's lists): no
// object per key. They cannot grow in place, so growing one is a copy into a larger one.

type Column = Uint32Array | Int32Array | Float64Array

/** A copy of `a` in an array of the same kind `length` long; the new part holds `fill`. */
export function grown<T extends Column>(a: T, length: number, fill = 0): T {
  const b = new (a.constructor as new (n: number) => T)(length)
  if (fill !== 0) b.fill(fill, a.length)
  b.set(a)
  return b
}
