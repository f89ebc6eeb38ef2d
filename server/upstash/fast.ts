// The two commands most sent, alone (as @upstash/redis's auto-pipelining sends them: a
// one-element pipeline), answered without the general machinery of units: a GET read at once
// where the store can (the embedded engine), a plain SET written as /v1's PUT is. Both give
// exactly the answers run.ts would.
import type { NamespaceInfo } from '../services/accounts.js'
import type { Plan } from '../services/plans.js'
import type { Entry } from '../store/types.js'
import { validKey } from '../wire/keys.js'
import type { UpstashCall } from './call.js'
import { errorMessage } from './run.js'
import { Bulk, OK, type Reply, errorText, resultText } from './reply.js'
import { storedOf } from './values.js'

export interface FastAsk {
  pipeline: boolean
  base64: boolean
  /** The sync token line for an answer that wrote nothing. */
  token: string
}

function answer(call: UpstashCall, ask: FastAsk, r: Reply, version?: number): void {
  const entry = resultText(r, ask.base64)
  const token = version === undefined ? ask.token : `\r\nUpstash-Sync-Token: ${version}`
  call.send(200, ask.pipeline ? `[${entry}]` : entry, token)
}

/** As route.ts answers: a pipeline's entry fails alone; a command alone fails the request. */
function failed(call: UpstashCall, ask: FastAsk, err: unknown): void {
  if (!ask.pipeline) return call.error(err)
  let message: string
  try {
    message = errorMessage(err)
  } catch {
    return call.error(err)
  }
  call.send(200, `[${errorText(message)}]`, ask.token)
}

const isName = (arg: string, upper: string) =>
  arg.length === upper.length && (arg === upper || arg.toUpperCase() === upper)

/** Answers the command when it is one of the fast ones; false leaves it to run.ts. */
export function tryFast(
  call: UpstashCall,
  ask: FastAsk,
  info: NamespaceInfo,
  plan: Plan,
  args: string[],
): boolean {
  const data = call.ctx.data
  if (args.length === 2 && isName(args[0]!, 'GET')) {
    const key = args[1]!
    if (!validKey(key)) return false
    const got = (e: Entry | undefined) =>
      answer(call, ask, e === undefined ? null : new Bulk(e.value))
    if (data.readsNow) {
      let e: Entry | undefined
      try {
        e = data.getNow(info, key)
      } catch (err) {
        failed(call, ask, err)
        return true
      }
      got(e)
      return true
    }
    call.async()
    data.get(info, key).then(got, (err) => failed(call, ask, err))
    return true
  }
  if (args.length === 3 && isName(args[0]!, 'SET') && call.key!.canWrite) {
    const key = args[1]!
    const value = storedOf(args[2]!)
    if (!validKey(key) || (plan.maxValueBytes !== null && value.length > plan.maxValueBytes))
      return false
    call.applyLater(() =>
      data.put(call.account!, info, key, value, {}, plan).then(
        (w) => answer(call, ask, OK, w.version),
        (err) => failed(call, ask, err),
      ),
    )
    return true
  }
  return false
}
