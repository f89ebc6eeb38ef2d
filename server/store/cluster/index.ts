// The Redis Cluster store: `cairn serve --store redis://...`. All state lives in Redis:
// entries (entries.ts), the service's records (records.ts) and the token buckets (below),
// so any number of front ends can share it. Layout and rules: docs/redis.md.
import type { Durability } from '../../../engine/types.js'
import type { Store } from '../types.js'
import { Commands } from './commands.js'
import { checkConfiguration } from './config-check.js'
import { connectCluster, parseRedisUrl } from './connect.js'
import { ClusterEntries } from './entries.js'
import { ClusterFeed } from './feed.js'
import { ClusterHealth } from './health.js'
import { ClusterHistory } from './history.js'
import { ClusterHolds } from './holds.js'
import { LeasedBuckets } from './leased-bucket.js'
import { ClusterStorageTotals } from './storage-totals.js'
import { ClusterRecords } from './records.js'
import { redact } from '../url.js'

const READY_MS = 15_000

export async function openRedisStore(
  url: string,
  opts: { durability: Durability },
): Promise<Store> {
  const parsed = parseRedisUrl(url)
  const client = connectCluster(parsed)
  let unchecked: string[] = []
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `Redis Cluster at ${redact(url)} not ready in ${READY_MS / 1000} s${parsed.tls ? ' (rediss:// speaks TLS: do the nodes take TLS on these ports?)' : ''}`,
            ),
          ),
        READY_MS,
      )
      client.once('ready', () => {
        clearTimeout(timer)
        resolve()
      })
      // A wrong password or user will not get better by retrying: say so at once.
      const refused = (err: Error) => {
        if (!/WRONGPASS|NOAUTH|NOPERM|invalid username-password/i.test(String(err?.message))) return
        clearTimeout(timer)
        reject(new Error(`Redis Cluster at ${redact(url)} refused the credentials: ${err.message}`))
      }
      client.on('error', refused)
      client.on('node error', refused)
    })
    unchecked = await checkConfiguration(client, opts.durability)
  } catch (err) {
    client.disconnect()
    throw err
  }
  // The client logs nothing itself; an error event without a listener would throw.
  client.on('error', () => {})
  const cmd = new Commands(client, opts.durability, parsed)
  const entries = new ClusterEntries(cmd)
  const health = new ClusterHealth(client)
  const feed = new ClusterFeed(cmd, entries)
  const holds = new ClusterHolds(cmd)
  return {
    startNotes: unchecked.map(
      (node) =>
        `Redis node ${node} did not answer at start, so its durability settings are unchecked; a restart checks them again`,
    ),
    kind: 'redis',
    supports: { soleWriter: false, metadataOverhead: -1 },
    records: new ClusterRecords(cmd),
    limiter: new LeasedBuckets(cmd),
    holds,
    storageTotals: new ClusterStorageTotals(cmd),
    admin: undefined,
    readLane: () => cmd.laneStats ?? { calls: 0, rerouted: 0, lost: 0 },
    createNamespace: (ns) => entries.createNamespace(ns),
    dropNamespace: (ns) => entries.dropNamespace(ns),
    namespaceCounts: (ns) => entries.namespaceCounts(ns),
    get: (ns, key) => entries.get(ns, key),
    stat: (ns, key) => entries.stat(ns, key),
    put: (ns, key, value, o) => entries.put(ns, key, value, o),
    delete: (ns, key, o) => entries.delete(ns, key, o),
    list: (ns, o) => entries.list(ns, o),
    transact: (ns, ops) => entries.transact(ns, ops),
    countRange: (ns, range) => entries.countRange(ns, range),
    snapshot: (ns, range) => entries.snapshot(ns, range),
    feed,
    history: new ClusterHistory(cmd),
    restore: (ns, rows, version) => entries.restore(ns, rows, version),
    health: () => health.now(),
    flush: async () => {},
    async close() {
      health.close()
      holds.close()
      feed.close()
      cmd.close()
      try {
        await client.quit()
      } catch {
        // A node that does not answer QUIT (frozen, cut off, already gone) holds nothing of
        // ours: every write was answered before this. Its connection is dropped instead, and
        // the close, a command's last step, does not fail for it.
        client.disconnect()
      }
    },
  }
}
