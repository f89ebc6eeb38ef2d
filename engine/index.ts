// The engine's public entry point: `open` and the public types. See README.md for the API
// and engine/FORMAT.md for the files it keeps.
import fs from 'node:fs'
import { Db } from './db.js'
import { fsyncDir } from './io.js'
import { acquireLock } from './lock.js'
import { checkOptions, recover } from './recovery.js'
import type { OpenOptions } from './types.js'

export type * from './types.js'
export { EngineError } from './errors.js'
export type { Db } from './db.js'
export type { RepairReport } from './db.js'

/**
 * Opens (creating if missing) the database in `dir`. Only one process may hold a directory:
 * a second open rejects with code LOCKED. A damaged record in the middle of a segment rejects
 * with CORRUPT naming the file and offset, unless `repair: true`, which keeps what is intact
 * and lists what it left out in `db.repairReport`.
 */
export async function open(dir: string, options: OpenOptions = {}): Promise<Db> {
  checkOptions(options)
  fs.mkdirSync(dir, { recursive: true })
  const release = acquireLock(dir)
  const db = new Db({ dir, options, release })
  try {
    db.repairReport = { dropped: recover(db, options.repair === true) }
    db.log.active = db.log.createSegment(db.log.nextSegId++)
    fsyncDir(dir)
    return db
  } catch (err) {
    for (const seg of db.segments.values()) fs.closeSync(seg.fd)
    release()
    throw err
  }
}
