// Accounts and their API keys, kept in the engine's system namespaces and mirrored in memory,
// so that checking a key on a request is a Map lookup. A key seen once is remembered by its
// secret; a new or unknown secret costs one SHA-256.
import { LRUCache } from 'lru-cache'
import type { Engine } from '../engine/types.js'
import type { PlanBook } from './plans.js'
import type { DayCounters } from './usage.js'
import { ServiceError } from './service-error.js'
import {
  hashApiKey,
  hashPassword,
  checkPassword,
  DUMMY_PASSWORD_HASH,
  looksLikeApiKey,
  newApiKey,
  newId,
} from './secrets.js'
import { SYS, entries } from './system.js'

export type Permission = 'read' | 'read-write'

export interface AccountRecord {
  id: string
  email: string
  plan: string
  passwordHash: string | null
  createdAt: string
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
  engineName: string
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
  namespaces = new Map<string, NamespaceInfo>()
  keys = new Set<ApiKey>()
  /** Token bucket state; tokens < 0 means not started yet. */
  tokens = -1
  refilledAt = 0
  deleted = false
  /** Today's usage counters (see usage.ts). */
  usage: DayCounters | undefined = undefined

  constructor(public rec: AccountRecord) {}

  get id(): string {
    return this.rec.id
  }

  view(): AccountView {
    const { id, email, plan, createdAt, passwordHash } = this.rec
    return { id, email, plan, createdAt, hasPassword: passwordHash !== null }
  }
}

export class ApiKey {
  readonly canWrite: boolean
  readonly scope: Set<string> | null
  revoked = false
  /** Last use in ms, kept in memory per request and written out in the background. */
  lastUsedMs = 0
  lastUsedDirty = false

  constructor(
    public rec: KeyRecord,
    readonly account: Account,
  ) {
    this.canWrite = rec.permission === 'read-write'
    this.scope = rec.namespaces ? new Set(rec.namespaces) : null
    this.lastUsedMs = rec.lastUsedAt ? Date.parse(rec.lastUsedAt) : 0
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
const MAX_KEYS_PER_ACCOUNT = 100
const AUTH_CACHE_MAX = 100_000

export function normalizeEmail(email: unknown): string {
  if (typeof email !== 'string')
    throw new ServiceError(400, 'invalid_email', 'Give an email address.')
  const e = email.trim().toLowerCase()
  if (e.length > 254 || !EMAIL.test(e)) {
    throw new ServiceError(400, 'invalid_email', 'That does not look like an email address.')
  }
  return e
}

export function checkNewPassword(password: unknown): string {
  if (typeof password !== 'string' || password.length < 8 || password.length > 200) {
    throw new ServiceError(400, 'invalid_password', 'A password is 8 to 200 characters long.')
  }
  return password
}

export interface KeyOptions {
  name?: string
  permission?: Permission
  namespaces?: string[] | null
}

function checkKeyOptions(opts: KeyOptions): {
  name: string
  permission: Permission
  namespaces: string[] | null
} {
  const name = (opts.name ?? 'default').trim()
  if (!name || name.length > 64 || /[\u0000-\u001f\u007f]/.test(name)) {
    throw new ServiceError(
      400,
      'invalid_key_name',
      'A key name is 1 to 64 characters, no control characters.',
    )
  }
  const permission = opts.permission ?? 'read-write'
  if (permission !== 'read' && permission !== 'read-write') {
    throw new ServiceError(400, 'invalid_permission', 'permission is "read" or "read-write".')
  }
  let namespaces: string[] | null = null
  if (opts.namespaces != null) {
    if (
      !Array.isArray(opts.namespaces) ||
      opts.namespaces.length === 0 ||
      opts.namespaces.length > 100
    ) {
      throw new ServiceError(
        400,
        'invalid_namespace',
        'Limit a key to 1 to 100 namespaces, or to none (all).',
      )
    }
    for (const n of opts.namespaces) {
      if (typeof n !== 'string' || !NAMESPACE_NAME.test(n)) {
        throw new ServiceError(400, 'invalid_namespace', `"${String(n)}" is not a namespace name.`)
      }
    }
    namespaces = [...new Set(opts.namespaces)]
  }
  return { name, permission, namespaces }
}

export class Accounts {
  private byId = new Map<string, Account>()
  private byEmail = new Map<string, Account>()
  private keysByHash = new Map<string, ApiKey>()
  private keysById = new Map<string, ApiKey>()
  /** Secrets already checked, so a known key costs one lookup, not a hash (bounded). */
  private authCache = new LRUCache<string, ApiKey>({ max: AUTH_CACHE_MAX })

  constructor(
    private engine: Engine,
    private plans: PlanBook,
  ) {}

  /** Reads every account and key into memory (at start). */
  async load(): Promise<void> {
    for await (const [, rec] of entries<AccountRecord>(this.engine, SYS.accounts)) {
      const a = new Account(rec)
      this.byId.set(rec.id, a)
      this.byEmail.set(rec.email, a)
    }
    for await (const [, rec] of entries<KeyRecord>(this.engine, SYS.keys)) {
      const a = this.byId.get(rec.accountId)
      if (a) this.addKey(new ApiKey(rec, a))
    }
  }

  private addKey(k: ApiKey): void {
    this.keysByHash.set(k.rec.hash, k)
    this.keysById.set(k.rec.id, k)
    k.account.keys.add(k)
  }

  private dropKey(k: ApiKey): void {
    k.revoked = true
    this.keysByHash.delete(k.rec.hash)
    this.keysById.delete(k.rec.id)
    k.account.keys.delete(k)
    // The cache is keyed by secret, which is not kept; revoked entries fail the check below
    // and are cleared out with the rest when the cache is next emptied.
  }

  /** Secrets held in the authentication cache (a metric; bounded). */
  get cachedKeys(): number {
    return this.authCache.size
  }

  /** The key behind a secret, or undefined. The hot path: a Map lookup for a known secret. */
  authenticate(secret: string): ApiKey | undefined {
    const hit = this.authCache.get(secret)
    if (hit !== undefined) return hit.revoked ? undefined : hit
    if (!looksLikeApiKey(secret)) return undefined
    const k = this.keysByHash.get(hashApiKey(secret))
    if (!k) return undefined
    this.authCache.set(secret, k)
    return k
  }

  get(id: string): Account | undefined {
    return this.byId.get(id)
  }

  find(email: string): Account | undefined {
    return this.byEmail.get(email.trim().toLowerCase())
  }

  /** The account for an email, or a 404 ServiceError. */
  require(email: unknown): Account {
    const a = this.byEmail.get(normalizeEmail(email))
    if (!a)
      throw new ServiceError(404, 'account_not_found', `There is no account for ${String(email)}.`)
    return a
  }

  all(): Account[] {
    return [...this.byId.values()]
  }

  async create(opts: {
    email: unknown
    password?: unknown
    plan?: string
  }): Promise<{ account: AccountView; apiKey: NewKey }> {
    const email = normalizeEmail(opts.email)
    const password =
      opts.password === undefined || opts.password === null ? null : checkNewPassword(opts.password)
    const plan = opts.plan ?? this.plans.defaultId
    if (!this.plans.has(plan))
      throw new ServiceError(400, 'invalid_plan', `There is no plan "${plan}".`)
    if (this.byEmail.has(email))
      throw new ServiceError(409, 'account_exists', 'An account with that email already exists.')
    const passwordHash = password === null ? null : await hashPassword(password)
    if (this.byEmail.has(email))
      throw new ServiceError(409, 'account_exists', 'An account with that email already exists.')
    const now = new Date().toISOString()
    const rec: AccountRecord = { id: newId('acct'), email, plan, passwordHash, createdAt: now }
    const account = new Account(rec)
    // Claimed before the write so a second sign-up with the same email waits for nothing and fails.
    this.byEmail.set(email, account)
    this.byId.set(rec.id, account)
    const made = this.keyRecord(account, checkKeyOptions({ name: 'default' }))
    try {
      await this.engine.batch([
        { type: 'put', ns: SYS.accounts, key: rec.id, value: rec },
        { type: 'put', ns: SYS.emails, key: email, value: rec.id },
        { type: 'put', ns: SYS.keys, key: made.rec.id, value: made.rec },
      ])
    } catch (err) {
      this.byEmail.delete(email)
      this.byId.delete(rec.id)
      throw err
    }
    this.addKey(new ApiKey(made.rec, account))
    return {
      account: account.view(),
      apiKey: { key: new ApiKey(made.rec, account).view(), secret: made.secret },
    }
  }

  /** The account when the password matches; the same work is done for an unknown email. */
  async verifyPassword(email: string, password: string): Promise<Account | undefined> {
    const a = this.find(String(email))
    const ok = await checkPassword(
      String(password),
      a ? (a.rec.passwordHash ?? DUMMY_PASSWORD_HASH) : DUMMY_PASSWORD_HASH,
    )
    return ok && a && !a.deleted ? a : undefined
  }

  async setPassword(account: Account, password: unknown): Promise<void> {
    const hash = await hashPassword(checkNewPassword(password))
    await this.save(account, { ...account.rec, passwordHash: hash })
  }

  async setPlan(account: Account, plan: string): Promise<void> {
    if (!this.plans.has(plan))
      throw new ServiceError(400, 'invalid_plan', `There is no plan "${plan}".`)
    await this.save(account, { ...account.rec, plan })
  }

  private async save(account: Account, rec: AccountRecord): Promise<void> {
    await this.engine.put(SYS.accounts, rec.id, rec)
    account.rec = rec
  }

  /** Removes the account record, its email and its keys; the caller removes its data first. */
  async remove(account: Account): Promise<void> {
    account.deleted = true
    const keys = [...account.keys]
    for (const k of keys) this.dropKey(k)
    this.byEmail.delete(account.rec.email)
    this.byId.delete(account.id)
    await this.engine.batch([
      ...keys.map((k) => ({ type: 'delete' as const, ns: SYS.keys, key: k.rec.id })),
      { type: 'delete', ns: SYS.emails, key: account.rec.email },
      { type: 'delete', ns: SYS.accounts, key: account.id },
    ])
  }

  listKeys(account: Account): KeyView[] {
    return [...account.keys]
      .map((k) => k.view())
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
  }

  private keyRecord(
    account: Account,
    o: { name: string; permission: Permission; namespaces: string[] | null },
  ): { rec: KeyRecord; secret: string } {
    const { secret, prefix, hash } = newApiKey()
    const rec: KeyRecord = {
      id: newId('key'),
      accountId: account.id,
      name: o.name,
      prefix,
      hash,
      permission: o.permission,
      namespaces: o.namespaces,
      createdAt: new Date().toISOString(),
      lastUsedAt: null,
    }
    return { rec, secret }
  }

  async createKey(account: Account, opts: KeyOptions): Promise<NewKey> {
    if (account.keys.size >= MAX_KEYS_PER_ACCOUNT) {
      throw new ServiceError(
        403,
        'key_quota_exceeded',
        `An account holds at most ${MAX_KEYS_PER_ACCOUNT} keys.`,
      )
    }
    const made = this.keyRecord(account, checkKeyOptions(opts))
    await this.engine.put(SYS.keys, made.rec.id, made.rec)
    const k = new ApiKey(made.rec, account)
    this.addKey(k)
    return { key: k.view(), secret: made.secret }
  }

  private ownKey(account: Account, keyId: unknown): ApiKey {
    const k = typeof keyId === 'string' ? this.keysById.get(keyId) : undefined
    if (!k || k.account !== account)
      throw new ServiceError(
        404,
        'key_not_found',
        `There is no key ${String(keyId)} on this account.`,
      )
    return k
  }

  /** A new secret for the same name and scope; the old secret stops working at once. */
  async rotateKey(account: Account, keyId: unknown): Promise<NewKey> {
    const old = this.ownKey(account, keyId)
    const { secret, prefix, hash } = newApiKey()
    const rec: KeyRecord = { ...old.rec, prefix, hash, lastUsedAt: null }
    this.dropKey(old)
    await this.engine.put(SYS.keys, rec.id, rec)
    const k = new ApiKey(rec, account)
    this.addKey(k)
    return { key: k.view(), secret }
  }

  async revokeKey(account: Account, keyId: unknown): Promise<KeyView> {
    const k = this.ownKey(account, keyId)
    this.dropKey(k)
    await this.engine.delete(SYS.keys, k.rec.id)
    return k.view()
  }

  /** Writes out the last-used times that changed since the last call (in the background). */
  async flushLastUsed(): Promise<void> {
    const ops = []
    for (const k of this.keysById.values()) {
      if (!k.lastUsedDirty) continue
      k.lastUsedDirty = false
      k.rec = { ...k.rec, lastUsedAt: new Date(k.lastUsedMs).toISOString() }
      ops.push({ type: 'put' as const, ns: SYS.keys, key: k.rec.id, value: k.rec })
    }
    if (ops.length > 0) await this.engine.batch(ops)
  }
}
