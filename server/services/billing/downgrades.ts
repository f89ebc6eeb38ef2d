// Downgrades due at the end of a paid period, kept in storage (one entry per account,
// `due/<account id>`) so a restart forgets none, and carried out by whichever front end looks
// first: every front end looks every few seconds, and doing one twice changes nothing more.
import type { Logger } from '../../log.js'
import type { Accounts } from '../accounts.js'
import type { PlanBook } from '../plans.js'
import type { Records } from '../../store/types.js'
import { Periodic } from '../periodic.js'

interface DueRecord {
  /** When (ms since the epoch). */
  at: number
}

const dueId = (accountId: string) => `due/${accountId}`

export class Downgrades {
  private readonly every = new Periodic(
    () => this.runDue(),
    (err) => this.log.warn({ err: (err as Error).message }, 'looking for due downgrades failed'),
  )

  constructor(
    private records: Records,
    private accounts: Accounts,
    private plans: PlanBook,
    private log: Logger,
  ) {}

  async schedule(accountId: string, at: number): Promise<void> {
    await this.records.put('downgrade', dueId(accountId), { at } satisfies DueRecord)
  }

  async cancel(accountId: string): Promise<void> {
    await this.records.delete('downgrade', dueId(accountId))
  }

  /** Carries out every downgrade due by `now`; resolves with the accounts moved. */
  async runDue(now = Date.now()): Promise<string[]> {
    const moved: string[] = []
    let after: string | undefined
    do {
      const page = await this.records.list<DueRecord>('downgrade', 'due/', after)
      for (const [id, due] of page.items) {
        if (due.at > now) continue
        const accountId = id.slice('due/'.length)
        if (await this.downgrade(accountId, now)) moved.push(accountId)
      }
      after = page.next
    } while (after)
    return moved
  }

  /**
   * The account's downgrade, as its own record has it (the entry only says when to look):
   * a subscription paid again meanwhile cleared it there, and the entry is then dropped.
   */
  private async downgrade(accountId: string, now: number): Promise<boolean> {
    const account = await this.accounts.get(accountId)
    let moved = false
    let later: number | undefined
    if (account !== undefined) {
      await this.accounts.update(account, (rec) => {
        const s = rec.stripe
        if (s?.downgradeAt === undefined) return rec
        if (s.downgradeAt > now) {
          later = s.downgradeAt
          return rec
        }
        moved = rec.plan === s.plan && rec.plan !== this.plans.defaultId
        const { downgradeAt: _done, ...kept } = s
        return { ...rec, plan: moved ? this.plans.defaultId : rec.plan, stripe: kept }
      })
    }
    if (later !== undefined) await this.schedule(accountId, later)
    else await this.cancel(accountId)
    if (moved)
      this.log.info(
        { account: accountId, plan: this.plans.defaultId },
        'paid period over: moved to the default plan',
      )
    return moved
  }

  /** Looks every `everyMs` until stop(). */
  start(everyMs: number): void {
    this.every.start(everyMs)
  }

  stop(): Promise<void> {
    return this.every.stop()
  }
}
