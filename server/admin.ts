// Operator commands: the same code answers the command line when it opens a stopped
// server's data directory itself, and the operator endpoint when a running server holds it.
import type { Accounts, KeyOptions, Permission } from './accounts.js'
import type { SessionStore } from './dashboard/sessions.js'
import type { Engine } from '../engine/types.js'
import type { Namespaces } from './namespaces.js'
import type { PlanBook } from './plans.js'
import { ServiceError } from './service-error.js'

export interface AdminServices {
  engine: Engine
  accounts: Accounts
  namespaces: Namespaces
  plans: PlanBook
  sessions: SessionStore
  deleteAccount(accountId: string): Promise<void>
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

export async function runAdmin(
  svc: AdminServices,
  command: string,
  a: AdminArgs,
): Promise<unknown> {
  switch (command as Command) {
    case 'account.create':
      return svc.accounts.create({ email: a.email, password: a.password, plan: str(a.plan) })
    case 'account.list':
      return {
        accounts: svc.accounts
          .all()
          .map((acct) => ({
            ...acct.view(),
            namespaces: acct.namespaces.size,
            keys: acct.keys.size,
          }))
          .sort((x, y) => x.createdAt.localeCompare(y.createdAt)),
      }
    case 'account.delete': {
      const acct = svc.accounts.require(a.email)
      await svc.deleteAccount(acct.id)
      return { deleted: acct.view() }
    }
    case 'account.password': {
      const acct = svc.accounts.require(a.email)
      await svc.accounts.setPassword(acct, a.password)
      // A new password is a reset: whoever was signed in with the old one is signed out.
      await svc.sessions.destroyAccount(acct.id)
      return { account: acct.view() }
    }
    case 'key.create':
      return svc.accounts.createKey(svc.accounts.require(a.email), keyOptions(a))
    case 'key.list':
      return { keys: svc.accounts.listKeys(svc.accounts.require(a.email)) }
    case 'key.rotate':
      return svc.accounts.rotateKey(svc.accounts.require(a.email), a.id)
    case 'key.revoke':
      return { revoked: await svc.accounts.revokeKey(svc.accounts.require(a.email), a.id) }
    case 'plan.set': {
      const acct = svc.accounts.require(a.email)
      await svc.accounts.setPlan(acct, String(a.plan ?? ''))
      return { account: acct.view() }
    }
    case 'backup': {
      const to = str(a.to)
      if (!to)
        throw new ServiceError(
          400,
          'invalid_request',
          'Give the directory to write the backup to (--to DIR).',
        )
      await svc.engine.backup(to)
      return { backup: to }
    }
    case 'compact': {
      const before = svc.engine.stats()
      await svc.engine.compact()
      const after = svc.engine.stats()
      return {
        diskBytesBefore: before.diskBytes,
        diskBytesAfter: after.diskBytes,
        liveBytes: after.liveBytes,
      }
    }
    default:
      throw new ServiceError(404, 'unknown_command', `There is no command "${command}".`)
  }
}
