// Plans for test servers: roomy by default, so a test meets only the limit it sets itself.
const MiB = 1024 * 1024

export interface PlanFields {
  id: string
  name?: string
  requestsPerDay?: number | null
  ratePerSecond?: number | null
  burst?: number | null
  maxNamespaces?: number | null
  maxStorageBytes?: number | null
  maxValueBytes?: number | null
  maxWatches?: number | null
  historySeconds?: number
  historyBytes?: number
}

export function plan(fields: PlanFields) {
  return {
    name: fields.id,
    priceUsdPerMonth: 0,
    requestsPerDay: null,
    ratePerSecond: 100000,
    burst: 100000,
    maxNamespaces: 1000,
    maxStorageBytes: null,
    maxValueBytes: MiB,
    selfServe: true,
    ...fields,
  }
}

/** A plans file with a roomy `free` plan (the default) and the given ones. */
export function plansFile(...extra: PlanFields[]) {
  return {
    plans: [plan({ id: 'free', name: 'Free' }), ...extra.map(plan)],
    default: 'free',
    upgradeUrl: null,
  }
}
