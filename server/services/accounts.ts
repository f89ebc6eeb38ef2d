// Accounts and their API keys, kept in the store's records, with bounded caches in front:
// checking a key on a request is a cache lookup once its secret has been seen. Where this
// process is the store's only writer (the embedded engine) the caches are kept exact by its
// own writes and never expire. Where other front ends write too (Redis), a cached account
// or key is trusted for REFRESH_MS and then read again, so a revoked key, a plan change or a
// deleted account reaches every front end within that time.
import { LRUCache } from 'lru-cache'
import {
  Account,
  type AccountRecord,
  type AccountView,
  ApiKey,
  type KeyOptions,
  type KeyRecord,
  type KeyView,
  type NamespaceInfo,
  type NewKey,
  checkKeyOptions,
  checkNewPassword,
  keyRecordId,
  normalizeEmail,
} from './account-model.js'
import type { PlanBook } from './plans.js'
import {
  DUMMY_PASSWORD_HASH,
  checkPassword,
  hashApiKey,
  hashPassword,
  looksLikeApiKey,
  newApiKey,
  newId,
} from './secrets.js'
import { ApiError } from '../wire/errors.js'
import { userNamespace } from '../store/names.js'
import type { Records, Store } from '../store/types.js'
import { Claims } from './claims.js'

export * from './account-model.js'

const MAX_KEYS_PER_ACCOUNT = 100
/**
 * On a shared store, how long after finding an email that names no account it is looked at
 * again before it is taken over: a sign-up's claim and its batch are milliseconds apart.
 */
const LEFTOVER_RECHECK_MS = 2000
/** Secrets and accounts held in the caches at most (docs/configuration.md). */
const CACHE_MAX = 100_000
/** How long another front end's change may go unseen here (shared stores only). */
export const REFRESH_MS = 1000

interface NamespaceRecord {
  createdAt: string
}

export class Accounts {
  private readonly records: Records
  private readonly shared: boolean
  private byId: LRUCache<string, Account>
  /** Secrets already checked, so a known key costs one lookup, not a hash and a read. */
  private bySecret: LRUCache<string, ApiKey>
  /** Keys whose last-used time changed since it was last written (flushLastUsed). */
  private lastUsed = new Map<string, ApiKey>()

  constructor(
    store: Store,
    private plans: PlanBook,
  ) {
    this.records = store.records
    this.shared = !store.supports.soleWriter
    const ttl = this.shared ? { ttl: REFRESH_MS } : {}
    this.byId = new LRUCache({ max: CACHE_MAX, ...ttl })
    this.bySecret = new LRUCache({ max: CACHE_MAX, ...ttl })
  }

  /** On a store only this process writes, reads every account in (at start). */
  async load(): Promise<void> {
    if (this.shared) return
    let after: string | undefined
    do {
      const page = await this.records.list<AccountRecord>('account', '', after)
      for (const [, rec] of page.items) {
        if (this.byId.size >= CACHE_MAX) return
        this.byId.set(rec.id, await this.read(rec))
      }
      after = page.next
    } while (after)
  }

  /** An account snapshot: its record and its namespaces. */
  private async read(rec: AccountRecord): Promise<Account> {
    const a = new Account(rec)
    await this.readNamespaces(a)
    return a
  }

  /**
   * The account's namespaces as the store has them now. Where other front ends write too, a
   * listing reads them so (not the snapshot, up to REFRESH_MS old), so a namespace made or
   * dropped elsewhere shows at once; elsewhere the snapshot is exact.
   */
  async readNamespaces(a: Account): Promise<void> {
    const found = new Map<string, NamespaceInfo>()
    let after: string | undefined
    do {
      const page = await this.records.list<NamespaceRecord>('namespace', `${a.id}/`, after)
      for (const [id, ns] of page.items) {
        const name = id.slice(a.id.length + 1)
        found.set(name, { name, storeName: userNamespace(a.id, name), createdAt: ns.createdAt })
      }
      after = page.next
    } while (after)
    a.namespaces.clear()
    for (const [name, info] of found) a.namespaces.set(name, info)
  }

  /** Secrets held in the authentication cache (a metric; bounded). */
  get cachedKeys(): number {
    return this.bySecret.size
  }

  /**
   * The key behind a secret, or undefined. The hot path: a cache hit answers at once; the
   * embedded store answers a miss at once too; a shared store's miss costs two reads.
   */
  authenticate(secret: string): ApiKey | undefined | Promise<ApiKey | undefined> {
    const hit = this.bySecret.get(secret)
    if (hit !== undefined) return hit.revoked ? undefined : hit
    if (!looksLikeApiKey(secret)) return undefined
    const hash = hashApiKey(secret)
    const r = this.records
    if (r.getNow !== undefined && !this.shared) {
      const id = r.getNow<string>('keyhash', hash)
      const rec = id === undefined ? undefined : r.getNow<KeyRecord>('key', id)
      if (rec === undefined || rec.hash !== hash) return undefined
      const account = this.byId.get(rec.accountId)
      if (account !== undefined) return this.remember(secret, new ApiKey(rec, account))
    }
    // Requests (and a watch's checks, watch-session.ts) that miss together share one load,
    // as when a busy key's cached copy runs out on a shared store.
    let loading = this.loading.get(secret)
    if (loading === undefined) {
      loading = this.loadKey(secret, hash).finally(() => this.loading.delete(secret))
      this.loading.set(secret, loading)
    }
    return loading
  }

  /** Loads under way, by secret: as many as the requests in flight, at most. */
  private loading = new Map<string, Promise<ApiKey | undefined>>()

  private async loadKey(secret: string, hash: string): Promise<ApiKey | undefined> {
    const id = await this.records.get<string>('keyhash', hash)
    const rec = id === undefined ? undefined : await this.records.get<KeyRecord>('key', id)
    // A rotated key's old hash may still point at the record until it is removed.
    if (rec === undefined || rec.hash !== hash) return undefined
    const account = await this.get(rec.accountId)
    if (account === undefined) return undefined
    return this.remember(secret, new ApiKey(rec, account))
  }

  private remember(secret: string, k: ApiKey): ApiKey {
    const pending = this.lastUsed.get(k.recordId)
    if (pending !== undefined && pending.lastUsedMs > k.lastUsedMs)
      k.lastUsedMs = pending.lastUsedMs
    this.bySecret.set(secret, k)
    return k
  }

  /** Notes a request made with `k`; written out by flushLastUsed. */
  touch(k: ApiKey, now: number): void {
    k.lastUsedMs = now
    this.lastUsed.set(k.recordId, k)
  }

  async get(id: string): Promise<Account | undefined> {
    const hit = this.byId.get(id)
    if (hit !== undefined) return hit
    const rec = await this.records.get<AccountRecord>('account', id)
    if (rec === undefined) return undefined
    const a = await this.read(rec)
    this.byId.set(id, a)
    return a
  }

  async find(email: string): Promise<Account | undefined> {
    let e: string
    try {
      e = normalizeEmail(email)
    } catch {
      return undefined
    }
    const id = await this.records.get<string>('email', e)
    return id === undefined ? undefined : this.get(id)
  }

  /** The account for an email, or a 404 ApiError. */
  async require(email: unknown): Promise<Account> {
    const a = await this.find(normalizeEmail(email))
    if (!a)
      throw new ApiError(404, 'account_not_found', `There is no account for ${String(email)}.`)
    return a
  }

  /**
   * The account's namespace, or undefined. A shared store's other front ends may have made
   * it since the snapshot was read: a name not in the snapshot is looked up before it is
   * called missing, so a namespace made on one front end is usable at once on the next.
   */
  namespace(
    a: Account,
    name: string,
  ): NamespaceInfo | undefined | Promise<NamespaceInfo | undefined> {
    const info = a.namespaces.get(name)
    if (info !== undefined || !this.shared) return info
    return this.records.get<NamespaceRecord>('namespace', `${a.id}/${name}`).then((rec) => {
      if (rec === undefined) return undefined
      const made = { name, storeName: userNamespace(a.id, name), createdAt: rec.createdAt }
      a.namespaces.set(name, made)
      return made
    })
  }

  /** Every account, page by page. */
  async *all(): AsyncGenerator<Account> {
    let after: string | undefined
    do {
      const page = await this.records.list<AccountRecord>('account', '', after)
      for (const [, rec] of page.items) yield this.byId.get(rec.id) ?? (await this.read(rec))
      after = page.next
    } while (after)
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
      throw new ApiError(400, 'invalid_plan', `There is no plan "${plan}".`)
    const exists = () =>
      new ApiError(409, 'account_exists', 'An account with that email already exists.')
    return this.signingUp.hold(email, exists, () => this.createNew(email, password, plan, exists))
  }

  /** Emails whose sign-up (or removal) is under way in this process (see emailLeftover). */
  private signingUp = new Claims()

  /**
   * A sign-up's records, in an order safe at any cut: the email is claimed (of two sign-ups
   * with one email, exactly one gets it), the key's hash written (harmless alone: it leads to
   * no key), then the account and its key in one batch, which is the commit. A sign-up that
   * fails before the batch lets the email go; where the store refuses that too, the email
   * record is a leftover that names no account, which the next sign-up takes over.
   */
  private async createNew(
    email: string,
    password: string | null,
    plan: string,
    exists: () => ApiError,
  ): Promise<{ account: AccountView; apiKey: NewKey }> {
    const claimed = await this.records.get<string>('email', email)
    if (claimed !== undefined && !(await this.emailLeftover(claimed))) throw exists()
    const passwordHash = password === null ? null : await hashPassword(password)
    const rec: AccountRecord = {
      id: newId('acct'),
      email,
      plan,
      passwordHash,
      createdAt: new Date().toISOString(),
    }
    if (claimed !== undefined) await this.records.put('email', email, rec.id)
    else {
      const made = await this.records.create('email', email, rec.id).catch(async (err) => {
        // Applied with its answer lost (a shared store): the claim is ours, go on.
        if ((await this.records.get('email', email).catch(() => undefined)) === rec.id)
          return 'created'
        throw err
      })
      if (made !== 'created') throw exists()
    }
    const account = new Account(rec)
    const made = this.keyRecord(account, checkKeyOptions({ name: 'default' }))
    const keyId = keyRecordId(rec.id, made.rec.id)
    try {
      await this.records.put('keyhash', made.rec.hash, keyId)
      await this.records.batch([
        { kind: 'account', id: rec.id, value: rec },
        { kind: 'key', id: keyId, value: made.rec },
      ])
    } catch (err) {
      // On a shared store the batch may have been applied with its answer lost: then the
      // account exists, and the sign-up succeeded. Only a read that says it is not there
      // lets the claims go; a read that fails too leaves them (an email naming no account
      // is taken over by the next sign-up of it).
      const found = await this.records.get('account', rec.id).then(
        (a) => (a === undefined ? 'absent' : 'present'),
        () => 'unknown',
      )
      if (found !== 'present') {
        if (found === 'absent') {
          await this.records.delete('keyhash', made.rec.hash).catch(() => {})
          await this.records.delete('email', email).catch(() => {})
        }
        throw err
      }
    }
    this.byId.set(rec.id, account)
    const k = new ApiKey(made.rec, account)
    return { account: account.view(), apiKey: { key: k.view(), secret: made.secret } }
  }

  /**
   * Whether an email record is a leftover: it names an account that does not exist. On a
   * shared store another front end's sign-up may be between its claim and its batch, so the
   * account is looked for again a moment later before the email is taken over.
   */
  private async emailLeftover(accountId: string): Promise<boolean> {
    if ((await this.records.get('account', accountId)) !== undefined) return false
    if (!this.shared) return true
    await new Promise((resolve) => setTimeout(resolve, LEFTOVER_RECHECK_MS))
    return (await this.records.get('account', accountId)) === undefined
  }

  /** The account when the password matches; the same work is done for an unknown email. */
  async verifyPassword(email: string, password: string): Promise<Account | undefined> {
    const a = await this.find(String(email))
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
      throw new ApiError(400, 'invalid_plan', `There is no plan "${plan}".`)
    await this.save(account, { ...account.rec, plan })
  }

  /**
   * Changes the account's record as storage holds it now, not as this front end's cache last
   * read it (on a shared store up to REFRESH_MS old), so a change made elsewhere meanwhile is
   * kept. Undefined when the account is gone.
   */
  async update(
    account: Account,
    change: (rec: AccountRecord) => AccountRecord,
  ): Promise<AccountRecord | undefined> {
    const now = await this.records.get<AccountRecord>('account', account.id)
    if (now === undefined) return undefined
    const rec = change(now)
    if (rec === now) return now
    if (rec.plan !== now.plan && !this.plans.has(rec.plan))
      throw new ApiError(400, 'invalid_plan', `There is no plan "${rec.plan}".`)
    await this.save(account, rec)
    return rec
  }

  private planHooks: ((account: Account) => Promise<void>)[] = []

  /** Calls `fn` after an account's plan changed here (its namespaces' history windows follow). */
  onPlanChanged(fn: (account: Account) => Promise<void>): void {
    this.planHooks.push(fn)
  }

  private async save(account: Account, rec: AccountRecord): Promise<void> {
    const moved = rec.plan !== account.rec.plan
    await this.records.put('account', rec.id, rec)
    account.rec = rec
    if (moved) for (const fn of this.planHooks) await fn(account)
  }

  private async keyRecords(account: Account): Promise<KeyRecord[]> {
    const out: KeyRecord[] = []
    let after: string | undefined
    do {
      const page = await this.records.list<KeyRecord>('key', `${account.id}/`, after)
      for (const [, rec] of page.items) out.push(rec)
      after = page.next
    } while (after)
    return out
  }

  /** Removes the account record, its email and its keys; the caller removes its data first. */
  async remove(account: Account): Promise<void> {
    // A sign-up of the same email here waits for this to finish (409 meanwhile), so the
    // email's removal below cannot take the new account's claim with it.
    const email = account.rec.email
    const busy = () =>
      new ApiError(409, 'busy', 'That account is being changed; try again shortly.')
    await this.signingUp.hold(email, busy, () => this.removeNow(account))
  }

  private async removeNow(account: Account): Promise<void> {
    account.deleted = true
    let keys: KeyRecord[]
    try {
      keys = await this.keyRecords(account)
      // The commit: the account and its keys go together, and from then on no secret of the
      // account authenticates anywhere (a hash entry without its key record leads nowhere).
      await this.records.batch([
        ...keys.map((k) => ({
          kind: 'key' as const,
          id: keyRecordId(k.accountId, k.id),
          delete: true as const,
        })),
        { kind: 'account', id: account.id, delete: true },
      ])
    } catch (err) {
      // Still there: a retry (from the dashboard, which refuses a deleted account) must work.
      account.deleted = false
      throw err
    }
    this.forgetKeys(account.id)
    this.byId.delete(account.id)
    // What is left leads nowhere; an email that names no account is a leftover the next
    // sign-up takes over (createNew). The email first, and only while it still names this
    // account: on a shared store another front end may take it over once it is a leftover.
    const email = account.rec.email
    await this.records
      .get<string>('email', email)
      .then((id) => (id === account.id ? this.records.delete('email', email) : false))
      .catch(() => {})
    for (const k of keys) await this.records.delete('keyhash', k.hash).catch(() => {})
  }

  /** Drops cached secrets of one key (or of every key of an account). */
  private forgetKeys(accountId: string, keyId?: string): void {
    for (const [secret, k] of this.bySecret.entries()) {
      if (k.rec.accountId === accountId && (keyId === undefined || k.rec.id === keyId)) {
        k.revoked = true
        this.bySecret.delete(secret)
      }
    }
  }

  async countKeys(account: Account): Promise<number> {
    return (await this.keyRecords(account)).length
  }

  async listKeys(account: Account): Promise<KeyView[]> {
    return (await this.keyRecords(account))
      .map((rec) => {
        const k = new ApiKey(rec, account)
        const pending = this.lastUsed.get(k.recordId)
        if (pending !== undefined && pending.lastUsedMs > k.lastUsedMs)
          k.lastUsedMs = pending.lastUsedMs
        return k.view()
      })
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
  }

  private keyRecord(
    account: Account,
    o: { name: string; permission: KeyRecord['permission']; namespaces: string[] | null },
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

  /**
   * The hash first (alone it leads to no key), then the key's record, which is the commit: a
   * key that failed is neither listed nor holds one of the account's slots.
   */
  async createKey(account: Account, opts: KeyOptions): Promise<NewKey> {
    const made = this.keyRecord(account, checkKeyOptions(opts))
    const id = keyRecordId(account.id, made.rec.id)
    await this.records.put('keyhash', made.rec.hash, id)
    let res: Awaited<ReturnType<Records['create']>>
    try {
      res = await this.records.create('key', id, made.rec, { maxInGroup: MAX_KEYS_PER_ACCOUNT })
    } catch (err) {
      // Applied with its answer lost (a shared store): the key exists, and is handed out.
      await this.keyWritten(id, made.rec.hash, err)
      res = 'created'
    }
    if (res !== 'created') {
      await this.records.delete('keyhash', made.rec.hash).catch(() => {})
      throw new ApiError(
        403,
        'key_quota_exceeded',
        `An account holds at most ${MAX_KEYS_PER_ACCOUNT} keys.`,
      )
    }
    return { key: new ApiKey(made.rec, account).view(), secret: made.secret }
  }

  private async ownKey(account: Account, keyId: unknown): Promise<KeyRecord> {
    const rec =
      typeof keyId === 'string' && /^key_[A-Za-z0-9]{1,40}$/.test(keyId)
        ? await this.records.get<KeyRecord>('key', keyRecordId(account.id, keyId))
        : undefined
    if (!rec)
      throw new ApiError(404, 'key_not_found', `There is no key ${String(keyId)} on this account.`)
    return rec
  }

  /** A new secret for the same name and scope; the old secret stops working at once. */
  async rotateKey(account: Account, keyId: unknown): Promise<NewKey> {
    const old = await this.ownKey(account, keyId)
    const { secret, prefix, hash } = newApiKey()
    const rec: KeyRecord = { ...old, prefix, hash, lastUsedAt: null }
    const id = keyRecordId(account.id, rec.id)
    // The new hash entry first: it leads to the record, which names the old hash until the
    // record's write, the commit. From that write on the old secret's lookup finds a record
    // whose hash is not its own and is refused, and the new one's is accepted; a rotation that
    // fails before it leaves the old secret working.
    await this.records.put('keyhash', hash, id)
    try {
      await this.records.put('key', id, rec)
    } catch (err) {
      // Applied with its answer lost (a shared store), the rotation happened: the new secret
      // is the only one that works, so it must be handed out.
      await this.keyWritten(id, hash, err)
    }
    this.forgetKeys(account.id, rec.id)
    this.lastUsed.delete(id)
    // Leads to a record that no longer names it: harmless where the store refuses this.
    await this.records.delete('keyhash', old.hash).catch(() => {})
    return { key: new ApiKey(rec, account).view(), secret }
  }

  /**
   * After a key record's write failed: returns if the record names `hash` all the same (the
   * write was applied and its answer lost, on a shared store); else lets the hash entry go,
   * where the record is known not to name it, and throws `err`. A read that fails too leaves
   * the entry, which leads nowhere unless the record names it.
   */
  private async keyWritten(id: string, hash: string, err: unknown): Promise<void> {
    const now = await this.records.get<KeyRecord>('key', id).then(
      (r) => r,
      () => null,
    )
    if (now?.hash === hash) return
    if (now !== null) await this.records.delete('keyhash', hash).catch(() => {})
    throw err
  }

  async revokeKey(account: Account, keyId: unknown): Promise<KeyView> {
    const rec = await this.ownKey(account, keyId)
    const id = keyRecordId(account.id, rec.id)
    // The record first, the commit: a hash entry without its record authenticates nobody.
    await this.records.delete('key', id)
    this.forgetKeys(account.id, rec.id)
    this.lastUsed.delete(id)
    await this.records.delete('keyhash', rec.hash).catch(() => {})
    return new ApiKey(rec, account).view()
  }

  /** Writes out the last-used times that changed since the last call (in the background). */
  async flushLastUsed(): Promise<void> {
    const dirty = [...this.lastUsed.values()]
    this.lastUsed.clear()
    for (const k of dirty) {
      if (k.revoked) continue
      const rec = await this.records.get<KeyRecord>('key', k.recordId)
      // Gone or rotated meanwhile (perhaps on another front end): nothing to update.
      if (rec === undefined || rec.hash !== k.rec.hash) continue
      const at = new Date(k.lastUsedMs).toISOString()
      if (rec.lastUsedAt !== null && rec.lastUsedAt >= at) continue
      await this.records.put('key', k.recordId, { ...rec, lastUsedAt: at })
    }
  }
}
