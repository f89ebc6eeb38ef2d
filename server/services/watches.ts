// The watches open on this front end, how many each account holds, and how to end them: all
// when the server stops, a namespace's when it is dropped here. The plan's limit is the
// account's: on a shared store each watch also takes a hold in the store (Holds), so front
// ends together never open more than the plan allows; alone, this count is the account's.
import { randomBytes } from 'node:crypto'
import type { Holds } from '../store/types.js'

/** Names this front end's holds: `<this>.<sequence>`. */
const FRONT = randomBytes(9).toString('base64url')
let holders = 0

export class Watches {
  private perAccount = new Map<string, number>()
  /** The holds this front end took in the store, by account: release gives back the last. */
  private holders = new Map<string, string[]>()
  /** How to end each open watch, with the store name of the namespace it watches. */
  private enders = new Map<(gone: boolean) => void, string>()

  constructor(private holds?: Holds) {}

  /**
   * Takes a watch for the account unless it holds `max` already (null: no limit), across
   * every front end where the store is shared (then a promise: the store is asked).
   */
  take(accountId: string, max: number | null): boolean | Promise<boolean> {
    const n = this.perAccount.get(accountId) ?? 0
    if (max !== null && n >= max) return false
    // Counted here at once, so this front end's own takes cannot pass the limit meanwhile.
    this.perAccount.set(accountId, n + 1)
    if (max === null || this.holds === undefined) return true
    const holder = `${FRONT}.${++holders}`
    return this.holds.take(`w:${accountId}`, holder, max).then(
      (ok) => {
        if (!ok) this.drop(accountId)
        else {
          const list = this.holders.get(accountId)
          if (list === undefined) this.holders.set(accountId, [holder])
          else list.push(holder)
        }
        return ok
      },
      (err) => {
        this.drop(accountId)
        throw err
      },
    )
  }

  /** How many watches the account holds here. */
  held(accountId: string): number {
    return this.perAccount.get(accountId) ?? 0
  }

  release(accountId: string): void {
    this.drop(accountId)
    const list = this.holders.get(accountId)
    const holder = list?.pop()
    if (list !== undefined && list.length === 0) this.holders.delete(accountId)
    if (holder !== undefined) this.holds?.release(`w:${accountId}`, holder)
  }

  private drop(accountId: string): void {
    const n = (this.perAccount.get(accountId) ?? 1) - 1
    if (n <= 0) this.perAccount.delete(accountId)
    else this.perAccount.set(accountId, n)
  }

  /**
   * Registers how to end an open watch of namespace `ns` (`gone`: because the namespace was
   * dropped); returns the function that forgets it.
   */
  track(ns: string, end: (gone: boolean) => void): () => void {
    this.enders.set(end, ns)
    return () => this.enders.delete(end)
  }

  get open(): number {
    return this.enders.size
  }

  /** Ends every open watch (at shutdown: clients resume elsewhere or after the restart). */
  endAll(): void {
    for (const end of [...this.enders.keys()]) end(false)
  }

  /** Ends the watches of a namespace just dropped, at once and with namespace_not_found. */
  endNamespace(ns: string): void {
    for (const [end, watched] of [...this.enders]) if (watched === ns) end(true)
  }
}
