// The list of live namespaces and their ids, rewritten whole on create and drop (rare), via
// a temporary file, fsync and rename, its copy first. Records name a
// namespace by id, and ids are never reused, so records of a dropped namespace are dead the
// moment this file stops listing it. Names are kept nowhere else, hence the copy.
import path from 'node:path'
import { crc32 } from 'node:zlib'
import { EngineError } from './errors.js'
import { fsyncDir, io } from './io.js'

export const NAMESPACES_FILE = 'NAMESPACES'
/** The same table, written just before NAMESPACES each time. */
export const NAMESPACES_COPY = 'NAMESPACES.copy'

export interface NamespaceTable {
  nextId: number
  list: [number, string][]
}

/**
 * The table as NAMESPACES holds it, or as its copy does when NAMESPACES is damaged (the copy
 * is then written back over it). Only both damaged is CORRUPT: the names live nowhere else.
 */
export function readNamespaces(dir: string): NamespaceTable {
  const primary = parse(path.join(dir, NAMESPACES_FILE))
  // The copy matters only when NAMESPACES is damaged: a copy the disk cannot read beside a
  // good NAMESPACES is left as it is (the next create or drop rewrites it).
  let copy: ReturnType<typeof parse>
  try {
    copy = parse(path.join(dir, NAMESPACES_COPY))
  } catch (err) {
    if (primary === 'damaged') throw err
    copy = 'damaged'
  }
  if (primary !== 'damaged') {
    // A directory from before the copy gets one.
    if (primary !== undefined && copy === undefined) {
      writeOne(dir, NAMESPACES_COPY, primary)
      fsyncDir(dir)
    }
    return primary ?? { nextId: 1, list: [] }
  }
  if (copy === 'damaged' || copy === undefined)
    throw new EngineError(
      'CORRUPT',
      `${NAMESPACES_FILE}: checksum mismatch at offset 0, and ${NAMESPACES_COPY} ${copy === undefined ? 'is missing' : 'is damaged too'}: the namespaces' names are lost; restore the directory from a backup`,
    )
  writeOne(dir, NAMESPACES_FILE, copy)
  fsyncDir(dir)
  return copy
}

/**
 * The table a file holds; undefined when there is no file; 'damaged' when it does not check
 * out. A file the disk fails to read is IO_ERROR: taken for missing, it hid every namespace
 * (and a namespace made again under the same name then let compaction drop the old data).
 */
function parse(file: string): NamespaceTable | undefined | 'damaged' {
  let text: string
  try {
    text = io.readFileSync(file).toString('utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new EngineError(
      'IO_ERROR',
      `reading ${path.basename(file)} failed (${(err as NodeJS.ErrnoException).code ?? 'EIO'}): the namespaces cannot be known; check the disk and open again`,
    )
  }
  const nl = text.indexOf('\n')
  const body = text.slice(nl + 1)
  if (nl < 0 || Number(text.slice(0, nl)) !== crc32(body)) return 'damaged'
  try {
    return JSON.parse(body) as NamespaceTable
  } catch {
    return 'damaged'
  }
}

/**
 * Writes `table` over `prev`: its copy, then NAMESPACES, whose rename is the change's commit
 * (open reads NAMESPACES, and the copy only when NAMESPACES is damaged). A failure before
 * that rename leaves NAMESPACES as it was; a failure after it (the directory's fsync) puts
 * `prev` back, so that a create or drop the caller is told failed does not appear at the next
 * open. Either way the copy is put back to `prev` as far as the disk allows.
 */
export function writeNamespaces(dir: string, table: NamespaceTable, prev?: NamespaceTable): void {
  const back = (err: unknown, names: string[]): never => {
    if (prev === undefined) throw err
    try {
      for (const name of names) writeOne(dir, name, prev)
      fsyncDir(dir)
    } catch {
      // The disk refuses this too: the change may stand on disk, though the caller is told
      // it failed.
      throw new TableUnsure(err)
    }
    throw err
  }
  writeOne(dir, NAMESPACES_COPY, table)
  try {
    writeOne(dir, NAMESPACES_FILE, table)
  } catch (err) {
    back(err, [NAMESPACES_COPY])
  }
  try {
    fsyncDir(dir)
  } catch (err) {
    back(err, [NAMESPACES_FILE, NAMESPACES_COPY])
  }
}

/**
 * A change writeNamespaces could neither make nor undo: the files may hold it. Until the
 * table is written again as it is, a write acknowledged meanwhile (to a namespace whose drop
 * failed) could belong to a namespace the next open does not know.
 */
export class TableUnsure extends Error {
  constructor(readonly failure: unknown) {
    super('the namespace table could not be put back')
  }
}

function writeOne(dir: string, name: string, table: NamespaceTable): void {
  const body = JSON.stringify(table)
  io.writeFileAtomicSync(path.join(dir, name), Buffer.from(`${crc32(body)}\n${body}`))
}
