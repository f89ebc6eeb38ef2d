// POST /v1/{namespace}: a transaction. Each op counts as a request toward usage and the daily
// quota, and takes a token from the rate bucket (at most the plan's burst for one
// transaction): the request's own token was taken on the way in, the rest here.
import { newBucket, takeAccountToken } from '../services/limits.js'
import { quotaRefusal } from './quota.js'
import type { HttpRequest } from '../http/uws.js'
import type { Plan } from '../services/plans.js'
import type { Bucket } from '../store/types.js'
import { parseTxBody } from '../wire/tx-body.js'
import { readRequestBody, typeRefusal } from './body.js'
import type { Call } from './call.js'
import { missingRefusal, useRefusal, withNamespace } from './checks.js'
import { txBodyLimit } from '../wire/body-limits.js'
import type { Parsed } from './paths.js'
import { resultText } from './tx-results.js'
import { showBucket } from './admission.js'

export function runTransaction(call: Call, req: HttpRequest, parsed: Parsed, plan: Plan): void {
  const ns = parsed.ns
  // A read-only key may still check and get (refused below once the body shows a write).
  const refused = useRefusal(call.key!, ns, false) ?? typeRefusal(req) ?? missingRefusal(call, ns)
  if (refused !== undefined) return call.refuse(refused)
  readRequestBody(
    call,
    req,
    txBodyLimit(plan),
    (body) => {
      let tx: ReturnType<typeof parseTxBody>
      try {
        tx = parseTxBody(body, plan.maxValueBytes, call.ctx.clock.now())
      } catch (err) {
        return call.error(err)
      }
      if (tx.writes > 0 && !call.key!.canWrite)
        return call.fail(
          'forbidden',
          'This API key may only read: its transactions may only check and get.',
        )
      const n = tx.ops.length
      call.count = n
      const now = call.ctx.clock.now()
      const ctx = call.ctx
      const account = call.account!
      const refused = quotaRefusal(ctx, account, plan, n, now)
      if (refused !== null) {
        call.count = 1
        return call.fail(refused.code, refused.message, `\r\nRetry-After: ${refused.retryAfter}`)
      }
      const go = () =>
        withNamespace(call, ns, (info) => {
          const apply = () =>
            ctx.data.transact(account, info, tx.ops, plan).then(
              (done) =>
                call.send(
                  200,
                  `{"version":"${done.version}","results":[${done.results.map(resultText).join(',')}]}`,
                ),
              (err) => call.error(err),
            )
          if (tx.writes > 0) call.applyLater(() => void apply())
          else {
            call.async()
            void apply()
          }
        })
      // The first token was the request's own.
      const extra = Math.min(n, plan.burst ?? n) - 1
      if (extra <= 0) return go()
      const out: Bucket = newBucket()
      const admitted = (b: Bucket) => {
        showBucket(call, b)
        if (!b.ok) {
          call.count = 1
          return call.fail(
            'rate_limited',
            `This transaction's ${n} ops need ${extra + 1} tokens from the rate bucket.`,
            `\r\nRetry-After: ${b.retryAfter}`,
          )
        }
        go()
      }
      const b = takeAccountToken(ctx.store.limiter, account.id, plan, now, out, extra)
      if (!(b instanceof Promise)) return admitted(b)
      call.async()
      b.then(admitted, (err) => call.error(err))
    },
    'transaction_too_large',
  )
}
