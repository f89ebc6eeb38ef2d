// Operator commands: the same code answers the command line when it opens a stopped
// server's data directory itself, and the operator endpoint when a running server holds it.
import type { Accounts, KeyOptions, Permission } from '../services/accounts.js'
import type { SessionStore } from '../services/sessions.js'
import type { Namespaces } from '../services/namespaces.js'
import type { PlanBook } from '../services/plans.js'
import type { TestClock } from '../services/clock.js'
import { ApiError } from '../wire/errors.js'
import type { Store } from '../store/types.js'

export interface AdminServices {
  store: Store
  accounts: Accounts
  namespaces: Namespaces
  plans: PlanBook
  sessions: SessionStore
  deleteAccount(accountId: string): Promise<void>
  /** Paid plans through Stripe, when on: `billing flush` sends metered hours through it. */
  billing?: { meter: { flush(): Promise<unknown[]> } }
  /** The clock `clock.advance` moves: only a running server's, and only on CAIRN_TEST_CLOCK. */
  testClock?: TestClock
}

export type AdminArgs = Record<string, unknown>

export const COMMANDS = [
  'account.create',
  'account.list',
  'account.delete',
  'account.password',
  'key.create',
  'key.list',
  'key.rotate',
  'key.revoke',
  'plan.set',
  'backup',
  'compact',
  'billing.flush',
  'clock.advance',
] as const
export type Command = (typeof COMMANDS)[number]

const str = (v: unknown) => (typeof v === 'string' ? v : undefined)

function keyOptions(a: AdminArgs): KeyOptions {
  const namespaces = a.namespaces
  return {
    name: str(a.name),
    permission: str(a.permission) as Permission | undefined,
    namespaces:
      typeof namespaces === 'string'
        ? namespaces
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : (namespaces as string[] | null | undefined),
  }
}

/** The embedded engine's maintenance, or a 400 saying that Redis does its own. */
function embeddedOnly(store: Store, command: string) {
  if (store.admin === undefined)
    throw new ApiError(
      400,
      'not_supported',
      `"${command}" is for the embedded engine; on Redis, use Redis's own tools (docs/scale-out.md).`,
    )
  return store.admin
}

export async function runAdmin(
  svc: AdminServices,
  command: string,
  a: AdminArgs,
): Promise<unknown> {
  switch (command as Command) {
    case 'account.create':
      return svc.accounts.create({ email: a.email, password: a.password, plan: str(a.plan) })
    case 'account.list': {
      const accounts = []
      for await (const acct of svc.accounts.all()) {
        accounts.push({
          ...acct.view(),
          namespaces: acct.namespaces.size,
          keys: await svc.accounts.countKeys(acct),
        })
      }
      return { accounts: accounts.sort((x, y) => x.createdAt.localeCompare(y.createdAt)) }
    }
    case 'account.delete': {
      const acct = await svc.accounts.require(a.email)
      await svc.deleteAccount(acct.id)
      return { deleted: acct.view() }
    }
    case 'account.password': {
      const acct = await svc.accounts.require(a.email)
      // A new password is a reset: whoever was signed in with the old one is signed out,
      // first, so a change the storage refuses part way leaves no such session standing.
      await svc.sessions.destroyAccount(acct.id)
      await svc.accounts.setPassword(acct, a.password)
      // And after: a sign-in with the old password while the new one was hashed and saved.
      await svc.sessions.destroyAccount(acct.id).catch(() => {})
      return { account: acct.view() }
    }
    case 'key.create':
      return svc.accounts.createKey(await svc.accounts.require(a.email), keyOptions(a))
    case 'key.list':
      return { keys: await svc.accounts.listKeys(await svc.accounts.require(a.email)) }
    case 'key.rotate':
      return svc.accounts.rotateKey(await svc.accounts.require(a.email), a.id)
    case 'key.revoke':
      return { revoked: await svc.accounts.revokeKey(await svc.accounts.require(a.email), a.id) }
    case 'plan.set': {
      const acct = await svc.accounts.require(a.email)
      await svc.accounts.setPlan(acct, String(a.plan ?? ''))
      return { account: acct.view() }
    }
    case 'backup': {
      const admin = embeddedOnly(svc.store, 'backup')
      const to = str(a.to)
      if (!to)
        throw new ApiError(
          400,
          'invalid_request',
          'Give the directory to write the backup to (--to DIR).',
        )
      await admin.backup(to)
      return { backup: to }
    }
    case 'compact': {
      const admin = embeddedOnly(svc.store, 'compact')
      const before = admin.stats()
      await admin.compact()
      const after = admin.stats()
      return {
        diskBytesBefore: before.diskBytes,
        diskBytesAfter: after.diskBytes,
        liveBytes: after.liveBytes,
      }
    }
    case 'billing.flush': {
      if (svc.billing === undefined)
        throw new ApiError(
          400,
          'not_supported',
          'Stripe is off: give --stripe-secret-key and --stripe-webhook-secret (or CAIRN_STRIPE_SECRET_KEY and CAIRN_STRIPE_WEBHOOK_SECRET).',
        )
      return { sent: await svc.billing.meter.flush() }
    }
    case 'clock.advance': {
      // Tests only: a server on the wall clock has nothing to move, and says so.
      if (svc.testClock === undefined)
        throw new ApiError(
          400,
          'not_supported',
          'This server runs on the wall clock: clock.advance is for a server started with CAIRN_TEST_CLOCK=1 (tests only).',
        )
      const ms = a.ms
      if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 0)
        throw new ApiError(
          400,
          'invalid_request',
          'ms is a whole number of milliseconds, 0 or more.',
        )
      return { now: svc.testClock.advance(ms) }
    }
    default:
      throw new ApiError(404, 'unknown_command', `There is no command "${command}".`)
  }
}
