// engine/record.ts: the segment header's compaction flag, and an entry's fields read back
// through the accessors every reader of entry bytes uses.
import t from 'tap'
import {
  DEL,
  ENTRY_HEADER,
  FLAG_RAW,
  PUT,
  REC_HEADER,
  SEG_COMPACTED,
  SEG_HEADER,
  checkEntry,
  checkRecord,
  entryExpiresAt,
  entryFlags,
  entryKey,
  entryKeyAt,
  entryKeyLen,
  entryLength,
  entryNsId,
  entryType,
  entryValueAt,
  entryValueLen,
  entryVersion,
  isCompactionOutput,
  readSegmentHeader,
  recordBodyLength,
  recordCount,
  sealEntry,
  sealRecord,
  segmentBaseVersion,
  segmentFlags,
  segmentHeader,
} from '../../engine/record.js'

t.test('a segment is compaction output only when its whole header carries the flag', async (t) => {
  const compacted = segmentHeader(7, 42, SEG_COMPACTED)
  const written = segmentHeader(7, 42)
  t.ok(isCompactionOutput(compacted), 'the flag set: compaction output')
  t.notOk(isCompactionOutput(written), 'no flag: the write path wrote it')
  t.equal(segmentFlags(compacted), SEG_COMPACTED)
  t.equal(segmentBaseVersion(compacted), 42)
  t.same(readSegmentHeader(compacted), { segId: 7, baseVersion: 42, flags: SEG_COMPACTED })
})

t.test('a short header is never compaction output', async (t) => {
  const compacted = segmentHeader(7, 42, SEG_COMPACTED)
  // Compaction fsyncs its output whole before naming it: only a segment the write path was
  // starting can be this short, whatever bytes the part that reached the disk holds.
  for (const n of [0, 1, 8, 24, 28, 29, SEG_HEADER - 1])
    t.notOk(isCompactionOutput(compacted.subarray(0, n)), `${n} of ${SEG_HEADER} bytes`)
  t.ok(isCompactionOutput(Buffer.concat([compacted, Buffer.alloc(10)])), 'longer than a header')
})

t.test('an entry reads back through the accessors as it was sealed', async (t) => {
  const key = 'clé/1'
  const keyLen = Buffer.byteLength(key)
  const value = Buffer.from('hello')
  const b = Buffer.alloc(REC_HEADER + ENTRY_HEADER + keyLen + value.length + 3)
  const q = REC_HEADER
  b.write(key, entryKeyAt(q), 'utf8')
  value.copy(b, q + ENTRY_HEADER + keyLen)
  sealEntry(b, q, PUT, FLAG_RAW, keyLen, 9, 1234, 5678.5, value.length)
  sealRecord(b, 0, ENTRY_HEADER + keyLen + value.length, 1)
  const len = ENTRY_HEADER + keyLen + value.length
  t.equal(entryType(b, q), PUT)
  t.equal(entryFlags(b, q), FLAG_RAW)
  t.equal(entryKeyLen(b, q), keyLen)
  t.equal(entryNsId(b, q), 9)
  t.equal(entryVersion(b, q), 1234)
  t.equal(entryExpiresAt(b, q), 5678.5)
  t.equal(entryValueLen(b, q), value.length)
  t.equal(entryLength(b, q), len)
  t.equal(entryKey(b, q), key)
  t.same(b.subarray(entryValueAt(b, q), q + len), value)
  t.equal(checkEntry(b, q, b.length), len, 'its checksum holds')
  t.equal(recordBodyLength(b, 0), len)
  t.equal(recordCount(b, 0), 1)
  t.equal(checkRecord(b, 0, b.length), REC_HEADER + len, 'the record checks out')
  b[entryValueAt(b, q)]! ^= 1
  t.equal(checkEntry(b, q, b.length), -1, 'a flipped value byte fails the checksum')
})

t.test('a tombstone has no value', async (t) => {
  const b = Buffer.alloc(ENTRY_HEADER + 1)
  b.write('k', entryKeyAt(0))
  sealEntry(b, 0, DEL, 0, 1, 1, 2, 0, 0)
  t.equal(entryType(b, 0), DEL)
  t.equal(entryValueAt(b, 0), entryLength(b, 0))
  t.equal(entryKey(b, 0), 'k')
})
