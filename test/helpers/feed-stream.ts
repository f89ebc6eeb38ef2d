// Where a namespace's change feed is on Redis, for tests that write to it as a writer of
// another version would: its stream `c:{n:<store name>}:<g>:f` and its meta hash beside it,
// found by the namespace's name (the store name holds it) on whichever master has them.
import type { Cluster } from 'ioredis'

export async function feedKeysOf(
  redis: Cluster,
  name: string,
): Promise<{ feed: string; meta: string } | undefined> {
  for (const node of redis.nodes('master')) {
    const [, keys] = await node.scan('0', 'MATCH', `*${name}*:f`, 'COUNT', 1000)
    const feed = keys[0]
    if (feed !== undefined) return { feed, meta: feed.replace(/:[^:]+:f$/, ':m') }
  }
  return undefined
}
