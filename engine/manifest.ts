// The MANIFEST: which sealed segments the database holds, how long each is, and the checksum
// of its hint, plus which segment was being appended to. Without it, a sealed segment that
// went missing or was cut short looks like one that never existed or a torn tail, and its
// keys vanish without a word. FORMAT.md gives the layout and the rules open applies.
import path from 'node:path'
import { crc32 } from 'node:zlib'
import { EngineError } from './errors.js'
import { fsyncDir, fsyncDirAsync, io } from './io.js'

export const MANIFEST_FILE = 'MANIFEST'

export interface SealedSegment {
  id: number
  /** Bytes in the segment file when it was sealed. */
  size: number
  /** The CRC-32C stored at the end of its hint file. */
  hintCrc: number
}

export interface Manifest {
  /** The segment the write path was appending to when this was written (0: none). */
  active: number
  /**
   * Older segments whose last groups were still in flight when this was written: the write
   * path had moved on to `active` before they were synced. Absent in older manifests.
   */
  writing?: number[]
  /**
   * Segments a compaction replaced whose files may not be deleted yet: open deletes them.
   * Absent when there are none, and in older manifests.
   */
  removed?: number[]
  sealed: SealedSegment[]
  /**
   * Each namespace's version when this was written, as [id, version] pairs: a floor for the
   * versions open recovers, since the tombstone that carried a namespace's newest version
   * may since have been dropped by compaction. Absent in manifests older than per-namespace
   * versions.
   */
  versions?: [number, number][]
}

/** The manifest, undefined when the directory has none (new, or made by an older version). */
export function readManifest(dir: string): Manifest | undefined {
  const file = path.join(dir, MANIFEST_FILE)
  if (!io.existsSync(file)) return undefined
  const text = io.readFileSync(file).toString('utf8')
  const nl = text.indexOf('\n')
  const body = text.slice(nl + 1)
  let m: Manifest | undefined
  if (nl > 0 && Number(text.slice(0, nl)) === crc32(body)) {
    try {
      m = JSON.parse(body) as Manifest
    } catch {}
  }
  if (!m || !Array.isArray(m.sealed) || typeof m.active !== 'number') {
    throw new EngineError(
      'CORRUPT',
      `${MANIFEST_FILE}: damaged (checksum mismatch at offset 0); run \`cairn repair --data ${dir}\` to rebuild it from the segments`,
    )
  }
  return m
}

/** Replaces the manifest durably: a reader sees the old one or the new one, never half. */
export function writeManifest(dir: string, m: Manifest): void {
  io.writeFileAtomicSync(path.join(dir, MANIFEST_FILE), manifestBytes(m))
  fsyncDir(dir)
}

/**
 * The same, written and synced off the event loop. Two of these must never overlap (they
 * share the temporary file): SegmentLog queues them.
 */
export async function writeManifestAsync(dir: string, m: Manifest): Promise<void> {
  await io.writeFileAtomic(path.join(dir, MANIFEST_FILE), manifestBytes(m))
  await fsyncDirAsync(dir)
}

function manifestBytes(m: Manifest): Buffer {
  const body = JSON.stringify(m)
  return Buffer.from(`${crc32(body)}\n${body}`)
}

/** The checksum a hint file ends with, which names that exact hint. */
export function hintCrcOf(hint: Buffer): number {
  return hint.readUInt32LE(hint.length - 4)
}
