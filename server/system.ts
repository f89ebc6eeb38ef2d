// Where the server keeps its own records in the engine. Every name here contains a `/`,
// which no namespace name in the API may contain, so no API call can reach them.
import type { Engine } from '../engine/types.js'

export const SYS = {
  accounts: 'sys/accounts',
  /** lower-cased email -> account id, so sign-in and uniqueness need no scan. */
  emails: 'sys/emails',
  keys: 'sys/keys',
  /** `<account id>/<name>` -> { createdAt } */
  namespaces: 'sys/namespaces',
  /** `<YYYY-MM-DD>/<account id>` -> that day's counters, so a day's records list by prefix. */
  usage: 'sys/usage',
  sessions: 'sys/sessions',
} as const

/** The engine's name for an account's namespace. */
export const userNamespace = (accountId: string, name: string) => `u/${accountId}/${name}`
export const USER_PREFIX = 'u/'

export async function ensureSystemNamespaces(engine: Engine): Promise<void> {
  for (const ns of Object.values(SYS)) await engine.createNamespace(ns)
}

/** Every key and value of a namespace (or of one prefix of it), page by page. */
export async function* entries<T>(
  engine: Engine,
  ns: string,
  prefix?: string,
): AsyncGenerator<[string, T]> {
  let after: string | undefined
  for (;;) {
    const page = await engine.list(ns, { prefix, after, limit: 1000 })
    for (const key of page.keys) {
      const got = await engine.get(ns, key)
      if (got) yield [key, got.value as T]
    }
    if (!page.next) return
    after = page.next
  }
}
