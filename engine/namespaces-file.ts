// The list of live namespaces and their ids, rewritten whole on create and drop (rare), via
// a temporary file, fsync and rename. Records name a namespace by id, and ids are never
// reused, so records of a dropped namespace are dead the moment this file stops listing it.
import path from 'node:path'
import { crc32 } from 'node:zlib'
import { EngineError } from './errors.js'
import { fsyncDir, io } from './io.js'

export const NAMESPACES_FILE = 'NAMESPACES'

export interface NamespaceTable {
  nextId: number
  list: [number, string][]
}

export function readNamespaces(dir: string): NamespaceTable {
  const file = path.join(dir, NAMESPACES_FILE)
  let text: string
  try {
    text = io.readFileSync(file).toString('utf8')
  } catch {
    return { nextId: 1, list: [] }
  }
  const nl = text.indexOf('\n')
  const body = text.slice(nl + 1)
  if (nl < 0 || Number(text.slice(0, nl)) !== crc32(body)) {
    throw new EngineError('CORRUPT', `${NAMESPACES_FILE}: checksum mismatch at offset 0`)
  }
  return JSON.parse(body) as NamespaceTable
}

export function writeNamespaces(dir: string, table: NamespaceTable): void {
  const file = path.join(dir, NAMESPACES_FILE)
  const body = JSON.stringify(table)
  io.writeFileAtomicSync(file, Buffer.from(`${crc32(body)}\n${body}`))
  fsyncDir(dir)
}
