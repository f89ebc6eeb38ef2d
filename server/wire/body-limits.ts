// How large a request body may be, by plan: one rule for /v1 and the dashboard's data view,
// which take the same values.

/** What these rules read of a plan: its largest value, or null for no limit. */
export interface ValueLimit {
  maxValueBytes: number | null
}

/** Room for the body's envelope and whitespace around a value of the plan's largest size. */
const SLACK = 64 * 1024
/** At least this much room, whatever the plan: metadata alone may be 1 KiB. */
const MIN_SLACK = 4 * 1024

/** The envelope's room beside a value of `max` bytes. */
const slackFor = (max: number) => Math.min(Math.max(max, MIN_SLACK), SLACK)
/** The most a body may be when the plan sets no value limit. */
const UNLIMITED_BODY = 256 * 1024 * 1024

/** Room for a body of the plan's largest value and its envelope. */
export function bodyLimit(plan: ValueLimit): number {
  const max = plan.maxValueBytes
  return max === null ? UNLIMITED_BODY : max + slackFor(max)
}

/** What a transaction's body may hold beyond the plan's largest value (the contract's rule). */
export const TX_EXTRA_BODY = 10 * 1024 * 1024

/** The most a transaction's body may be on the plan. */
export function txBodyLimit(plan: ValueLimit): number {
  return plan.maxValueBytes === null ? UNLIMITED_BODY : plan.maxValueBytes + TX_EXTRA_BODY
}

/** The largest body any plan reads. */
export function largestBody(plans: Iterable<ValueLimit>): number {
  let most = 0
  for (const p of plans) most = Math.max(most, bodyLimit(p))
  return most
}
