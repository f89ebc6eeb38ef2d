// CairnLevel: an abstract-level 3 database over the engine. Its data is one engine namespace;
// keys are bytes mapped to engine keys by keys.ts, values are strings or bytes. The engine
// has no snapshots, and the manifest says so.
import fs from 'node:fs'
import path from 'node:path'
import { AbstractLevel, type AbstractDatabaseOptions } from 'abstract-level'
import type { Db } from '../db.js'
import { open } from '../index.js'
import type { BatchOp, OpenOptions } from '../types.js'
import { Cursor, type RangeOptions } from './cursor.js'
import { LevelError, levelError } from './errors.js'
import { CairnIterator } from './iterator.js'
import { CairnKeyIterator } from './key-iterator.js'
import { type Format, type LevelKey, MAX_ENGINE_KEY_BYTES, toEngineKey } from './keys.js'
import type { Reader } from './read.js'
import { CairnValueIterator } from './value-iterator.js'
import { fromEngineValue, type LevelValue } from './values.js'

/** The engine namespace that holds a CairnLevel's data. */
export const NAMESPACE = 'level'

export interface CairnLevelOptions<K, V> extends AbstractDatabaseOptions<K, V> {
  /**
   * Options of the engine under the database (engine/README.md, "Opening"). `durability`
   * is `none` unless given: a Level write is acknowledged once the OS has it and survives the
   * process being killed; a write with `{ sync: true }` resolves once it is on disk.
   */
  engine?: OpenOptions
}

interface KeyOptions {
  keyEncoding: Format
}
interface ReadOptions extends KeyOptions {
  valueEncoding: Format
}
interface WriteOptions {
  sync?: boolean
}
type LevelOp = { type: 'put'; key: LevelKey; value: LevelValue } | { type: 'del'; key: LevelKey }
interface IteratorOptions extends RangeOptions, ReadOptions {
  keys: boolean
  values: boolean
  limit: number
}

/** Keys are deleted this many to a batch by clear(). */
const CLEAR_BATCH = 1000

export class CairnLevel<KDefault = string, VDefault = string> extends AbstractLevel<
  string | Buffer | Uint8Array,
  KDefault,
  VDefault
> {
  readonly location: string
  private readonly engineOptions: OpenOptions
  private engine: Db | undefined

  constructor(location: string, options?: CairnLevelOptions<KDefault, VDefault>) {
    const { engine, ...levelOptions } = options ?? {}
    super(
      {
        encodings: { buffer: true, view: true, utf8: true },
        implicitSnapshots: false,
        explicitSnapshots: false,
        permanence: true,
        seek: true,
        createIfMissing: true,
        errorIfExists: true,
        has: true,
        // level-supports' types predate getSync; abstract-level reads it.
        ...({ getSync: true } as object),
      },
      levelOptions,
    )
    if (typeof location !== 'string' || location === '')
      throw new TypeError("The first argument 'location' must be a non-empty string")
    this.location = location
    this.engineOptions = { durability: 'none', ...engine }
  }

  async _open(options: { createIfMissing: boolean; errorIfExists: boolean }): Promise<void> {
    // Without a namespaces table (FORMAT.md, NAMESPACES) there is no database to open, and
    // opening the engine would make one.
    if (
      !options.createIfMissing &&
      !fs.existsSync(path.join(this.location, 'NAMESPACES')) &&
      !fs.existsSync(path.join(this.location, 'NAMESPACES.copy'))
    )
      throw new Error(`${this.location} does not exist (createIfMissing is false)`)
    let db: Db
    try {
      db = await open(this.location, this.engineOptions)
    } catch (err) {
      throw levelError(err)
    }
    try {
      if (db.hasNamespace(NAMESPACE)) {
        if (options.errorIfExists)
          throw new Error(`${this.location} exists (errorIfExists is true)`)
      } else if (!options.createIfMissing) {
        throw new Error(`${this.location} does not exist (createIfMissing is false)`)
      } else {
        await db.createNamespace(NAMESPACE)
      }
    } catch (err) {
      await db.close()
      throw levelError(err)
    }
    this.engine = db
  }

  async _close(): Promise<void> {
    const db = this.engine
    this.engine = undefined
    await db?.close()
  }

  private get db(): Db {
    if (this.engine === undefined)
      throw new LevelError('Database is not open', 'LEVEL_DATABASE_NOT_OPEN')
    return this.engine
  }

  _getSync(key: LevelKey, options: ReadOptions): LevelValue | undefined {
    try {
      const got = this.db.getNow(NAMESPACE, toEngineKey(key))
      return got === undefined ? undefined : fromEngineValue(got.value, options.valueEncoding)
    } catch (err) {
      throw levelError(err)
    }
  }

  async _get(key: LevelKey, options: ReadOptions): Promise<LevelValue | undefined> {
    return this._getSync(key, options)
  }

  async _getMany(keys: LevelKey[], options: ReadOptions): Promise<(LevelValue | undefined)[]> {
    return keys.map((k) => this._getSync(k, options))
  }

  async _has(key: LevelKey): Promise<boolean> {
    try {
      return (await this.db.stat(NAMESPACE, toEngineKey(key))) !== undefined
    } catch (err) {
      throw levelError(err)
    }
  }

  async _hasMany(keys: LevelKey[]): Promise<boolean[]> {
    return Promise.all(keys.map((k) => this._has(k)))
  }

  _put(key: LevelKey, value: LevelValue, options: WriteOptions): Promise<void> {
    let done: Promise<void>
    try {
      done = this.db.putAck(NAMESPACE, writableKey(key), value)
    } catch (err) {
      return Promise.reject(levelError(err))
    }
    return this.acked(done, options)
  }

  /**
   * A write's answer: its engine promise with engine errors made Level errors, after a flush
   * when it asked for `sync`. The writes of a group share one engine promise, and so one
   * answer here: a write makes no promise of its own.
   */
  private acked(done: Promise<void>, options: WriteOptions): Promise<void> {
    if (options.sync) return done.then(this.flushed, rejectLevel)
    if (done !== this.lastDone) {
      this.lastDone = done
      this.lastAnswer = done.then(undefined, rejectLevel)
    }
    return this.lastAnswer!
  }
  private lastDone: Promise<void> | undefined
  private lastAnswer: Promise<void> | undefined
  private readonly flushed = (): Promise<void> => this.db.flush().catch(rejectLevel)

  async _del(key: LevelKey, options: WriteOptions): Promise<void> {
    const k = toEngineKey(key)
    // A key too long to be written is not there to delete.
    if (engineKeyBytes(k) > MAX_ENGINE_KEY_BYTES) return
    try {
      await this.db.delete(NAMESPACE, k)
      if (options.sync) await this.db.flush()
    } catch (err) {
      throw levelError(err)
    }
  }

  async _batch(operations: LevelOp[], options: WriteOptions): Promise<void> {
    const ops: BatchOp[] = []
    for (const op of operations) {
      if (op.type === 'put')
        ops.push({ type: 'put', ns: NAMESPACE, key: writableKey(op.key), value: op.value })
      else {
        const key = toEngineKey(op.key)
        if (engineKeyBytes(key) <= MAX_ENGINE_KEY_BYTES)
          ops.push({ type: 'delete', ns: NAMESPACE, key })
      }
    }
    if (ops.length === 0) return
    return this.acked(this.db.batchAck(ops), options)
  }

  async _clear(options: RangeOptions & KeyOptions & { limit: number }): Promise<void> {
    const cursor = new Cursor(this.db, NAMESPACE, options)
    let left = options.limit < 0 ? Number.POSITIVE_INFINITY : options.limit
    try {
      while (left > 0) {
        const keys = await cursor.take(Math.min(left, CLEAR_BATCH))
        if (keys.length === 0) break
        left -= keys.length
        await this.db.batch(keys.map((key) => ({ type: 'delete', ns: NAMESPACE, key })))
        if (keys.length < CLEAR_BATCH && left > 0) break
      }
    } catch (err) {
      throw levelError(err)
    }
  }

  _iterator(options: IteratorOptions) {
    return new CairnIterator(this, options, this.reader(options))
  }

  _keys(options: IteratorOptions) {
    return new CairnKeyIterator(this, options, this.reader(options))
  }

  _values(options: IteratorOptions) {
    return new CairnValueIterator(this, options, this.reader(options))
  }

  private reader(options: IteratorOptions): Reader {
    return {
      db: this.db,
      ns: NAMESPACE,
      cursor: new Cursor(this.db, NAMESPACE, options),
      keyFormat: options.keyEncoding,
      valueFormat: options.valueEncoding ?? 'utf8',
    }
  }
}

function rejectLevel(err: unknown): never {
  throw levelError(err)
}

/** The engine key for a write, refused with a Level error when the engine cannot hold it. */
function writableKey(key: LevelKey): string {
  const k = toEngineKey(key)
  const bytes = engineKeyBytes(k)
  if (bytes > MAX_ENGINE_KEY_BYTES)
    throw new LevelError(
      `a key is at most ${MAX_ENGINE_KEY_BYTES} bytes counting each byte from 0x80 twice (and a leading 0x00 once more); this one is ${bytes}`,
      'LEVEL_INVALID_KEY',
    )
  return k
}

/** UTF-8 bytes of an engine key made by toEngineKey (code points up to U+00FF). */
function engineKeyBytes(k: string): number {
  if (k.length * 2 <= MAX_ENGINE_KEY_BYTES) return k.length
  let bytes = k.length
  for (let i = 0; i < k.length; i++) if (k.charCodeAt(i) >= 0x80) bytes++
  return bytes
}
