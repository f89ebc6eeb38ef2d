// Refusing to start on a Redis whose configuration cannot keep the durability asked for,
// rather than acknowledging writes it may lose. 'always' needs every node (replicas become
// masters) to append every write to its AOF and fsync it before answering; 'interval'
// needs the AOF at least (fsync every second); 'none' takes Redis as it is.
import type { Cluster } from 'ioredis'
import type { Durability } from '../../../engine/types.js'

async function setting(node: { call(...a: string[]): Promise<unknown> }, name: string) {
  const r = (await node.call('CONFIG', 'GET', name)) as string[]
  return String(r[1] ?? '')
}

export async function checkConfiguration(client: Cluster, durability: Durability): Promise<void> {
  if (durability === 'none') return
  const problems: string[] = []
  for (const node of client.nodes('all')) {
    const at = `${node.options.host}:${node.options.port}`
    const aof = await setting(node as any, 'appendonly')
    const fsync = await setting(node as any, 'appendfsync')
    if (aof !== 'yes')
      problems.push(`${at} has appendonly ${aof || 'unknown'} (set appendonly yes)`)
    else if (durability === 'always' && fsync !== 'always')
      problems.push(`${at} has appendfsync ${fsync} (set appendfsync always)`)
  }
  if (problems.length > 0) {
    throw new Error(
      `Redis cannot keep --durability ${durability}: ${problems.join('; ')}. ` +
        'Change the Redis configuration, or start with --durability none to accept losing acknowledged writes.',
    )
  }
}
