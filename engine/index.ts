// The engine's public entry point: `open`, `repair` and the public types. See engine/README.md for
// the API and engine/FORMAT.md for the files it keeps.
import { type Db as DbClass, Db, type RepairReport } from './db.js'
import { asEngineError } from './errors.js'
import { fsyncDir, io } from './io.js'
import { acquireLock } from './lock.js'
import { checkOptions, recover } from './recovery.js'
import type { Dropped } from './segment-scan.js'
import type { OpenOptions } from './types.js'

export type * from './types.js'
export { EngineError } from './errors.js'
export { nameRuns, ownName } from './process-name.js'
export type { Db } from './db.js'
export type { CommitListener, RepairReport } from './db.js'
export type { CommittedChange } from './db-core.js'

/**
 * Opens (creating if missing) the database in `dir`. Only one process may hold a directory:
 * a second open rejects with code LOCKED. Damage (a damaged record, a sealed segment missing
 * or cut short, a damaged manifest) rejects with CORRUPT naming the file and offset, unless
 * `repair: true`, which reads every record, keeps what is intact and lists what it left out
 * in `db.repairReport`. The directory is made private (0700, its files 0600).
 */
export async function open(dir: string, options: OpenOptions = {}): Promise<DbClass> {
  checkOptions(options)
  try {
    return openLocked(dir, options)
  } catch (err) {
    throw asEngineError(err, 'open')
  }
}

function openLocked(dir: string, options: OpenOptions): DbClass {
  io.mkdirSync(dir)
  io.makePrivate(dir)
  const lock = acquireLock(dir)
  const release = () => lock.release()
  const db = new Db({ dir, options, release, checkLock: () => lock.check() })
  try {
    // Before recovery, which tells the history windows what a crash kept them from seeing.
    db.windows.load()
    const found = recover(db, options.repair === true)
    db.repairReport = report(db, found.dropped, found.kept)
    db.log.active = db.log.createSegment(db.log.nextSegId++)
    fsyncDir(dir)
    db.log.writeManifestNow()
    db.windows.opened()
    db.watchLock()
    db.opened()
    return db
  } catch (err) {
    db.windows.close()
    for (const seg of db.segments.values()) {
      try {
        io.closeSync(seg.fd)
      } catch {}
    }
    release()
    throw err
  }
}

/**
 * Offline repair, like `redis-check-aof --fix`: reads every record of every segment ignoring
 * hints and the manifest, keeps every intact record, drops the damaged ones, rebuilds hints
 * and the manifest, and reports what it dropped. Rejects with LOCKED while the directory is
 * open elsewhere.
 */
export async function repair(dir: string): Promise<RepairReport> {
  const db = await open(dir, { repair: true, autoCompact: false })
  const out = db.repairReport
  await db.close()
  return out
}

function report(db: Db, dropped: Dropped[], kept: number): RepairReport {
  const out: RepairReport = { kept, dropped: [] }
  const nsName = (id: number) => db.table.list.find(([n]) => n === id)?.[1]
  for (const d of dropped) {
    if (!d.keys || d.keys.length === 0) {
      out.dropped.push({ file: d.file, offset: d.from, reason: d.reason })
      continue
    }
    for (const k of d.keys) {
      const namespace = nsName(k.nsId)
      out.dropped.push({
        file: d.file,
        offset: d.from,
        reason: d.reason,
        ...(namespace === undefined ? {} : { namespace }),
        key: k.key,
      })
    }
  }
  return out
}
export { KEEP_BYTES, KEEP_CHANGES } from './history-file.js'
export {
  type FoundChanges,
  type Wanted,
  namespaceChanges,
  namespacesChanges,
} from './history.js'
