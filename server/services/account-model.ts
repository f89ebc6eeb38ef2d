// What an account is: its record, its API keys' records, what the outside sees of them,
// and the rules their fields follow. Accounts (accounts.ts) keeps them in the store.
import { ApiError } from '../wire/errors.js'

export type Permission = 'read' | 'read-write'

export interface AccountRecord {
  id: string
  email: string
  plan: string
  passwordHash: string | null
  createdAt: string
  /** The account's side of paid plans through Stripe (services/billing/), once it has one. */
  stripe?: StripeState
  /** On a metered plan: the most its requests past the included quota may cost a month. */
  spendingCapCents?: number
}

/** What Cairn keeps of an account's Stripe customer and subscription. */
export interface StripeState {
  /** Made on the account's first checkout, with its email. */
  customerId: string
  subscriptionId?: string
  /** The subscription's status as last read from Stripe (active, past_due, canceled, ...). */
  status?: string
  /** The plan the subscription pays for. */
  plan?: string
  /** When the paid period ends (ms since the epoch). */
  periodEnd?: number
  /** When the account moves to the default plan (ms), once the subscription lapsed. */
  downgradeAt?: number
}

export interface KeyRecord {
  id: string
  accountId: string
  name: string
  /** The first characters of the secret, to tell keys apart in lists. */
  prefix: string
  hash: string
  permission: Permission
  /** null: every namespace of the account. */
  namespaces: string[] | null
  createdAt: string
  lastUsedAt: string | null
}

export interface NamespaceInfo {
  name: string
  /** The store's name for it (store/names.ts). */
  storeName: string
  createdAt: string
}

/** What an account looks like from outside: never its password hash. */
export interface AccountView {
  id: string
  email: string
  plan: string
  createdAt: string
  hasPassword: boolean
}

export type KeyView = Omit<KeyRecord, 'hash' | 'accountId'>

export interface NewKey {
  key: KeyView
  /** Shown once; only its hash is kept. */
  secret: string
}

export class Account {
  /** The account's namespaces by name, as this front end last read them. */
  namespaces = new Map<string, NamespaceInfo>()
  deleted = false

  constructor(public rec: AccountRecord) {}

  get id(): string {
    return this.rec.id
  }

  view(): AccountView {
    const { id, email, plan, createdAt, passwordHash } = this.rec
    return { id, email, plan, createdAt, hasPassword: passwordHash !== null }
  }
}

export const keyRecordId = (accountId: string, keyId: string) => `${accountId}/${keyId}`

export class ApiKey {
  readonly canWrite: boolean
  readonly scope: Set<string> | null
  revoked = false
  /** Last use in ms, kept in memory per request and written out in the background. */
  lastUsedMs = 0

  constructor(
    public rec: KeyRecord,
    readonly account: Account,
  ) {
    this.canWrite = rec.permission === 'read-write'
    this.scope = rec.namespaces ? new Set(rec.namespaces) : null
    this.lastUsedMs = rec.lastUsedAt ? Date.parse(rec.lastUsedAt) : 0
  }

  /** The key's record id in the store: `<account id>/<key id>`. */
  get recordId(): string {
    return keyRecordId(this.rec.accountId, this.rec.id)
  }

  allows(ns: string): boolean {
    return this.scope === null || this.scope.has(ns)
  }

  view(): KeyView {
    const { hash: _h, accountId: _a, ...rest } = this.rec
    return { ...rest, lastUsedAt: this.lastUsedMs ? new Date(this.lastUsedMs).toISOString() : null }
  }
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
export const NAMESPACE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/

export function normalizeEmail(email: unknown): string {
  if (typeof email !== 'string') throw new ApiError(400, 'invalid_email', 'Give an email address.')
  const e = email.trim().toLowerCase()
  if (e.length > 254 || !EMAIL.test(e)) {
    throw new ApiError(400, 'invalid_email', 'That does not look like an email address.')
  }
  return e
}

export function checkNewPassword(password: unknown): string {
  if (typeof password !== 'string' || password.length < 8 || password.length > 200) {
    throw new ApiError(400, 'invalid_password', 'A password is 8 to 200 characters long.')
  }
  return password
}

export interface KeyOptions {
  name?: string
  permission?: Permission
  namespaces?: string[] | null
}

export function checkKeyOptions(opts: KeyOptions): {
  name: string
  permission: Permission
  namespaces: string[] | null
} {
  const name = (opts.name ?? 'default').trim()
  if (!name || name.length > 64 || /[\u0000-\u001f\u007f]/.test(name)) {
    throw new ApiError(
      400,
      'invalid_key_name',
      'A key name is 1 to 64 characters, no control characters.',
    )
  }
  const permission = opts.permission ?? 'read-write'
  if (permission !== 'read' && permission !== 'read-write') {
    throw new ApiError(400, 'invalid_permission', 'permission is "read" or "read-write".')
  }
  let namespaces: string[] | null = null
  if (opts.namespaces != null) {
    if (
      !Array.isArray(opts.namespaces) ||
      opts.namespaces.length === 0 ||
      opts.namespaces.length > 100
    ) {
      throw new ApiError(
        400,
        'invalid_namespace',
        'Limit a key to 1 to 100 namespaces, or to none (all).',
      )
    }
    for (const n of opts.namespaces) {
      if (typeof n !== 'string' || !NAMESPACE_NAME.test(n)) {
        throw new ApiError(400, 'invalid_namespace', `"${String(n)}" is not a namespace name.`)
      }
    }
    namespaces = [...new Set(opts.namespaces)]
  }
  return { name, permission, namespaces }
}
