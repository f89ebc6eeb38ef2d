// The watches open on this front end: how many each account holds (the plan's limit is per
// account; on a shared store each front end counts its own, so the limit holds per front end)
// and how to end them: all when the server stops, a namespace's when it is dropped here.

export class Watches {
  private perAccount = new Map<string, number>()
  /** How to end each open watch, with the store name of the namespace it watches. */
  private enders = new Map<(gone: boolean) => void, string>()

  /** Takes a watch for the account if it holds fewer than `max` (null: no limit). */
  take(accountId: string, max: number | null): boolean {
    const n = this.perAccount.get(accountId) ?? 0
    if (max !== null && n >= max) return false
    this.perAccount.set(accountId, n + 1)
    return true
  }

  /** How many watches the account holds here. */
  held(accountId: string): number {
    return this.perAccount.get(accountId) ?? 0
  }

  release(accountId: string): void {
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
