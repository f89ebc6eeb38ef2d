// Plans are data: a JSON file the operator edits (server/plans.json holds the defaults).
// The file is checked whole when loaded, so a typo stops the server at start with a message
// naming the field, rather than surfacing as odd limits later.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export interface Plan {
  id: string
  name: string
  priceUsdPerMonth: number | null
  /** null means unlimited, for this and every limit below. */
  requestsPerDay: number | null
  ratePerSecond: number | null
  burst: number | null
  maxNamespaces: number | null
  maxStorageBytes: number | null
  maxValueBytes: number | null
  /** Watches open at once per account (GET /{ns}?watch=1). */
  maxWatches: number | null
  /** How long each namespace keeps the versions its writes supersede, in seconds (0: none). */
  historySeconds: number
  /** At most this many bytes of them per namespace; past it the oldest go first. */
  historyBytes: number
  /** Whether an account may move itself to this plan from the dashboard. */
  selfServe: boolean
  /** A flat monthly Stripe price: with Stripe on, the plan is paid through Checkout. */
  stripePriceId: string | null
  /** A metered Stripe price billing requests past `requestsPerDay` (with meterEventName). */
  stripeMeteredPriceId: string | null
  /** The Stripe billing meter's event name for that price. */
  meterEventName: string | null
  /**
   * What the metered price charges per 1,000 requests past the included quota, in cents of
   * the plan's currency: the same figure as the Stripe price, told to Cairn so it can hold an
   * account to its spending cap. null: no cap can be set on the plan.
   */
  meteredCentsPerThousand: number | null
}

export interface PlansFile {
  plans: Plan[]
  default: string
  /** Where the dashboard sends people who want a plan that is not self-serve; null: none yet. */
  upgradeUrl: string | null
}

/** The limits the API reports in GET /v1/usage: the plan without its commercial fields. */
export type PublicPlan = Omit<
  Plan,
  | 'priceUsdPerMonth'
  | 'selfServe'
  | 'maxWatches'
  | 'historySeconds'
  | 'historyBytes'
  | 'stripePriceId'
  | 'stripeMeteredPriceId'
  | 'meterEventName'
  | 'meteredCentsPerThousand'
>

const here = path.dirname(fileURLToPath(import.meta.url))
/** server/plans.json, found from the source tree and from dist/server/services alike. */
export const DEFAULT_PLANS_FILE = [
  path.join(here, '../plans.json'),
  path.join(here, '../../../server/plans.json'),
].find((p) => fs.existsSync(p))!

const LIMITS = [
  'requestsPerDay',
  'ratePerSecond',
  'burst',
  'maxNamespaces',
  'maxStorageBytes',
  'maxValueBytes',
  'maxWatches',
] as const

/**
 * The contract's watch limits, for plan files written before plans had one: free 5, pro 100,
 * scale 1,000, and 100 for any other plan.
 */
const WATCHES_BY_ID: Record<string, number> = { free: 5, pro: 100, scale: 1000 }

const DAY = 86_400
const MIB = 1024 * 1024
/**
 * The contract's history windows, for plan files written before plans had them: free 1 day
 * and 64 MiB, pro 7 days and 4 GiB, scale 30 days and 64 GiB, and free's for any other plan.
 */
const HISTORY_BY_ID: Record<string, { seconds: number; bytes: number }> = {
  free: { seconds: DAY, bytes: 64 * MIB },
  pro: { seconds: 7 * DAY, bytes: 4096 * MIB },
  scale: { seconds: 30 * DAY, bytes: 65536 * MIB },
}

/** A plan's history field: a whole number >= 0, or its default when left out. */
function historyField(
  p: any,
  field: 'historySeconds' | 'historyBytes',
  at: string,
  bad: (what: string) => PlanError,
): number {
  const v = p[field]
  const byId = HISTORY_BY_ID[p.id] ?? HISTORY_BY_ID.free!
  if (v === undefined) return field === 'historySeconds' ? byId.seconds : byId.bytes
  if (!Number.isSafeInteger(v) || v < 0)
    throw bad(`${at}.${field} must be a whole number >= 0 (0 keeps no history)`)
  return v
}

export class PlanError extends Error {}

/** Stripe object ids (price_..., or an older plan's own id): no spaces, no control characters. */
const STRIPE_ID = /^[A-Za-z0-9_-]{1,255}$/
/** Stripe's meter event names: letters, digits and a little punctuation, up to 100. */
const METER_EVENT = /^[A-Za-z0-9_.:-]{1,100}$/

/** The Stripe fields of a plan, checked: each a string of its form, or left out (null). */
function stripeFields(
  p: any,
  at: string,
  bad: (what: string) => PlanError,
): Pick<Plan, 'stripePriceId' | 'stripeMeteredPriceId' | 'meterEventName'> {
  const pick = (field: string, form: RegExp, what: string): string | null => {
    const v = p[field]
    if (v === undefined || v === null) return null
    if (typeof v !== 'string' || !form.test(v)) throw bad(`${at}.${field} must be ${what} or null`)
    return v
  }
  const out = {
    stripePriceId: pick('stripePriceId', STRIPE_ID, 'a Stripe price id such as "price_1Abc"'),
    stripeMeteredPriceId: pick(
      'stripeMeteredPriceId',
      STRIPE_ID,
      'a Stripe price id such as "price_1Abc"',
    ),
    meterEventName: pick(
      'meterEventName',
      METER_EVENT,
      'a meter event name (letters, digits, _ . : -, up to 100)',
    ),
  }
  if ((out.stripeMeteredPriceId === null) !== (out.meterEventName === null))
    throw bad(`${at}: stripeMeteredPriceId and meterEventName are given together or not at all`)
  if (out.stripeMeteredPriceId !== null && out.stripePriceId === null)
    throw bad(`${at}: a metered plan (stripeMeteredPriceId) needs its flat stripePriceId too`)
  return out
}

export function parsePlans(text: string, source: string): PlansFile {
  let raw: any
  try {
    raw = JSON.parse(text)
  } catch (err) {
    throw new PlanError(`${source}: not valid JSON (${(err as Error).message})`)
  }
  const bad = (what: string) => new PlanError(`${source}: ${what}`)
  if (!raw || typeof raw !== 'object' || !Array.isArray(raw.plans) || raw.plans.length === 0) {
    throw bad('expected {"plans": [...], "default": "<plan id>", "upgradeUrl": null}')
  }
  const plans: Plan[] = raw.plans.map((p: any, i: number) => {
    const at = `plans[${i}]`
    if (!p || typeof p !== 'object') throw bad(`${at} is not an object`)
    if (typeof p.id !== 'string' || !/^[a-z0-9][a-z0-9_-]{0,31}$/.test(p.id)) {
      throw bad(`${at}.id must match ^[a-z0-9][a-z0-9_-]{0,31}$`)
    }
    const plan: Plan = {
      id: p.id,
      name: typeof p.name === 'string' && p.name ? p.name : p.id,
      priceUsdPerMonth: p.priceUsdPerMonth ?? null,
      requestsPerDay: null,
      ratePerSecond: null,
      burst: null,
      maxNamespaces: null,
      maxStorageBytes: null,
      maxValueBytes: null,
      maxWatches: p.maxWatches === undefined ? (WATCHES_BY_ID[p.id] ?? 100) : null,
      historySeconds: historyField(p, 'historySeconds', at, bad),
      historyBytes: historyField(p, 'historyBytes', at, bad),
      selfServe: p.selfServe === true,
      ...stripeFields(p, at, bad),
      meteredCentsPerThousand: null,
    }
    const cents = p.meteredCentsPerThousand
    if (cents !== undefined && cents !== null) {
      if (typeof cents !== 'number' || !Number.isFinite(cents) || cents < 0)
        throw bad(`${at}.meteredCentsPerThousand must be a number >= 0 or null`)
      if (plan.stripeMeteredPriceId === null)
        throw bad(`${at}: meteredCentsPerThousand is for a metered plan (stripeMeteredPriceId)`)
      plan.meteredCentsPerThousand = cents
    }
    if (
      plan.priceUsdPerMonth !== null &&
      !(typeof plan.priceUsdPerMonth === 'number' && plan.priceUsdPerMonth >= 0)
    ) {
      throw bad(`${at}.priceUsdPerMonth must be a number >= 0 or null`)
    }
    for (const field of LIMITS) {
      const v = p[field]
      if (v === null || v === undefined) continue
      if (!Number.isSafeInteger(v) || v < 0)
        throw bad(`${at}.${field} must be a whole number >= 0 or null (unlimited)`)
      plan[field] = v
    }
    if ((plan.ratePerSecond === null) !== (plan.burst === null)) {
      throw bad(`${at}: ratePerSecond and burst are both numbers or both null`)
    }
    if (plan.ratePerSecond === 0 || plan.burst === 0)
      throw bad(`${at}: a rate limit of 0 lets nothing through`)
    if (plan.stripeMeteredPriceId !== null && plan.requestsPerDay === null)
      throw bad(`${at}: a metered plan's requestsPerDay is its included quota, so a number`)
    return plan
  })
  const ids = new Set<string>()
  for (const p of plans) {
    if (ids.has(p.id)) throw bad(`plan id "${p.id}" appears twice`)
    ids.add(p.id)
  }
  const def = raw.default ?? plans[0]!.id
  if (!ids.has(def)) throw bad(`default "${def}" is not one of the plans`)
  // The default plan is where a lapsed subscription ends up: it cannot itself need one.
  if (plans.find((p) => p.id === def)!.stripePriceId !== null)
    throw bad(`the default plan "${def}" cannot have a stripePriceId`)
  const prices = new Map<string, string>()
  for (const p of plans) {
    for (const price of [p.stripePriceId, p.stripeMeteredPriceId]) {
      if (price === null) continue
      const other = prices.get(price)
      if (other !== undefined && other !== p.id)
        throw bad(`Stripe price "${price}" is named by both "${other}" and "${p.id}"`)
      prices.set(price, p.id)
    }
  }
  const upgradeUrl = raw.upgradeUrl ?? null
  if (upgradeUrl !== null && (typeof upgradeUrl !== 'string' || !/^https?:\/\//.test(upgradeUrl))) {
    throw bad('upgradeUrl must be an http(s) URL or null')
  }
  return { plans, default: def, upgradeUrl }
}

export function loadPlans(file: string): PlansFile {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    throw new PlanError(
      `cannot read the plans file ${file}: ${(err as NodeJS.ErrnoException).code}`,
    )
  }
  return parsePlans(text, file)
}

/** The plans in force; `reload` swaps them whole (SIGHUP), so a request sees one version. */
export class PlanBook {
  private byId = new Map<string, Plan>()
  private file: PlansFile

  constructor(
    file: PlansFile,
    readonly source: string,
  ) {
    this.file = file
    this.index()
  }

  static load(source: string): PlanBook {
    return new PlanBook(loadPlans(source), source)
  }

  reload(): void {
    this.file = loadPlans(this.source)
    this.index()
  }

  private index(): void {
    this.byId = new Map(this.file.plans.map((p) => [p.id, p]))
  }

  has(id: string): boolean {
    return this.byId.has(id)
  }

  /** The plan; an id no longer in the file falls back to the default plan. */
  get(id: string): Plan {
    return this.byId.get(id) ?? this.byId.get(this.file.default)!
  }

  get defaultId(): string {
    return this.file.default
  }

  /** The plan a Stripe price pays for, if any plan names it. */
  byStripePrice(price: string): Plan | undefined {
    return this.file.plans.find((p) => p.stripePriceId === price)
  }

  info(): PlansFile {
    return this.file
  }
}

export function publicPlan(p: Plan): PublicPlan {
  return {
    id: p.id,
    name: p.name,
    requestsPerDay: p.requestsPerDay,
    ratePerSecond: p.ratePerSecond,
    burst: p.burst,
    maxNamespaces: p.maxNamespaces,
    maxStorageBytes: p.maxStorageBytes,
    maxValueBytes: p.maxValueBytes,
  }
}
