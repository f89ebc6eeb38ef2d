// The /v1 route table, the one place that says, for each route and method: the OpenAPI
// operation, the metrics label, the usage counter and the function that answers it. The
// handler (handler.ts) reads it for 405s, Allow headers, metrics, usage and dispatch; a
// test holds it against the OpenAPI document.
import type { HttpRequest } from '../http/uws.js'
import { R } from '../metrics.js'
import type { Plan } from '../services/plans.js'
import { OP } from '../services/usage.js'
import type { Call } from './call.js'
import { deleteEntry, getEntry, putEntry } from './entries.js'
import { deleteByPrefix } from './delete-prefix.js'
import { listKeys } from './list-keys.js'
import { restoreAsked, restoreNamespace } from './history.js'
import { patchEntry } from './patch.js'
import { postNamespace } from './import.js'
import { createNamespace, deleteNamespace, listNamespaces } from './namespace-routes.js'
import { type Parsed, Route } from './paths.js'
import { usageReportRoute } from './usage-route.js'

export interface Operation {
  /** The OpenAPI document's operationId. */
  id: string
  /** The metrics label (metrics.ts ROUTES). */
  metric: number
  /** The usage counter (usage.ts OP), or -1 for a route that is not counted. */
  usage: number
  run(call: Call, req: HttpRequest, parsed: Parsed, plan: Plan): void
}

export interface RouteEntry {
  /** The path as the OpenAPI document writes it. */
  path: string
  methods: Partial<Record<'get' | 'put' | 'post' | 'patch' | 'delete', Operation>>
  /** The methods, as the Allow header lists them. */
  allow: string
}

const route = (path: string, methods: RouteEntry['methods']): RouteEntry => ({
  path,
  methods,
  allow: Object.keys(methods)
    .map((m) => m.toUpperCase())
    .join(', '),
})

export const ROUTES: Record<Exclude<Route, Route.NotFound>, RouteEntry> = {
  [Route.Namespaces]: route('/namespaces', {
    get: {
      id: 'listNamespaces',
      metric: R.list_namespaces,
      usage: OP.namespace,
      run: (c) => listNamespaces(c),
    },
    post: {
      id: 'createNamespace',
      metric: R.create_namespace,
      usage: OP.namespace,
      run: (c, req) => createNamespace(c, req),
    },
  }),
  [Route.Namespace]: route('/namespaces/{name}', {
    delete: {
      id: 'deleteNamespace',
      metric: R.delete_namespace,
      usage: OP.namespace,
      run: (c, _r, p) => deleteNamespace(c, p),
    },
  }),
  [Route.Usage]: route('/usage', {
    get: { id: 'getUsage', metric: R.usage, usage: OP.usage, run: (c) => usageReportRoute(c) },
  }),
  [Route.OpenApi]: route('/openapi.json', {
    // Answered before authentication, in handler.ts: the document is public.
    get: { id: 'getOpenApi', metric: R.openapi, usage: -1, run: () => {} },
  }),
  [Route.Keys]: route('/{namespace}', {
    // With watch=1 the same operation streams changes (watch.ts), counted as `watch`.
    get: { id: 'listKeys', metric: R.list_keys, usage: OP.list, run: listKeys },
    post: {
      id: 'runTransaction',
      metric: R.transaction,
      usage: OP.transaction,
      // With restore=1 the same path restores the namespace to a point (history.ts); with
      // import=1 it imports NDJSON (import.ts), counted as `import`.
      run: (c, req, p, plan) =>
        restoreAsked(req) ? restoreNamespace(c, req, p, plan) : postNamespace(c, req, p, plan),
    },
    delete: {
      id: 'deleteByPrefix',
      metric: R.delete_prefix,
      usage: OP.deletePrefix,
      run: (c, req, p) => deleteByPrefix(c, req, p),
    },
  }),
  [Route.Entry]: route('/{namespace}/{key}', {
    get: {
      id: 'getValue',
      metric: R.get_value,
      usage: OP.get,
      run: (c, req, p) => getEntry(c, req, p),
    },
    put: { id: 'putValue', metric: R.put_value, usage: OP.put, run: putEntry },
    patch: { id: 'patchValue', metric: R.patch_value, usage: OP.patch, run: patchEntry },
    delete: {
      id: 'deleteValue',
      metric: R.delete_value,
      usage: OP.delete,
      run: (c, req, p) => deleteEntry(c, req, p),
    },
  }),
}

/** The operation for a route and a (lower-case) method, or undefined (404 or 405). */
export function operation(route: Route, method: string): Operation | undefined {
  if (route === Route.NotFound) return undefined
  return ROUTES[route].methods[method as keyof RouteEntry['methods']]
}
