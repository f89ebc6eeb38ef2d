// A test server on the harness's Redis Cluster (`--store`), an account on it with its client,
// and a cluster connection of the test's own, for tests that look at Redis or write to it as
// another writer would. Undefined, with the test skipped, where no cluster can be started.
import { Cluster } from 'ioredis'
import type { Test } from 'tap'
import { Client } from '../server/contract/http.js'
import { clusterFor } from './redis-cluster.js'
import { type MadeAccount, type TestServer, startServer } from './server.js'

export interface ClusterServer {
  srv: TestServer
  made: MadeAccount
  api: Client
  redis: Cluster
}

export async function serverOnCluster(t: Test): Promise<ClusterServer | undefined> {
  const cluster = await clusterFor(t)
  if (!cluster) return undefined
  const srv = await startServer({ args: ['--store', cluster.url] })
  t.teardown(() => srv.stop())
  const made = await srv.createAccount()
  const api = new Client(srv.baseUrl, made.apiKey)
  const redis = new Cluster([{ host: '127.0.0.1', port: cluster.nodes[0]!.port }])
  t.teardown(() => redis.disconnect())
  return { srv, made, api, redis }
}
