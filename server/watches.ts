// The watches open on this front end: how many each account holds (the plan's limit is per
// account; on a shared store each front end counts its own, so the limit holds per front end)
// and how to end them all when the server stops.

export class Watches {
  private perAccount = new Map<string, number>()
  private enders = new Set<() => void>()

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

  /** Registers how to end an open watch; returns the function that forgets it. */
  track(end: () => void): () => void {
    this.enders.add(end)
    return () => this.enders.delete(end)
  }

  get open(): number {
    return this.enders.size
  }

  /** Ends every open watch (at shutdown: clients resume elsewhere or after the restart). */
  endAll(): void {
    for (const end of [...this.enders]) end()
  }
}
