// Log-in floods against a real server: attempts are counted before the password is hashed,
// so concurrent guesses are refused; hashing never stalls storage; the owner is never locked
// out; and a password set from the command line ends the account's sessions.
import t from 'tap'
import { MAX_SESSIONS } from '../../server/services/sessions.js'
import { logIn } from '../helpers/dashboard-api.js'
import { plansFile } from '../helpers/plans.js'
import { startServer } from '../helpers/server.js'
import { Client } from './contract/http.js'

const PASSWORD = 'correct horse battery staple'
const srv = await startServer({ plans: plansFile(), args: ['--trust-proxy'] })
t.teardown(() => srv.stop())
const acct = await srv.createAccount(undefined, { password: PASSWORD })
const api = new Client(srv.baseUrl, acct.apiKey)
await api.createNamespace('lat')
const base = srv.url
const from = (address: string) => ({ 'x-forwarded-for': address })

/** The median time of `n` PUTs, one after another. */
async function putMedian(n: number, label: string): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await api.mustPut('lat', `${label}-${i}`, i)
    times.push(performance.now() - t0)
  }
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)]!
}

t.test('a known address logs in before any flood', async (t) => {
  const res = await logIn(base, acct.email, PASSWORD, from('198.51.100.7'))
  t.equal(res.status, 200)
})

t.test('300 concurrent wrong passwords from one address: counted before hashing', async (t) => {
  const quiet = await putMedian(15, 'quiet')
  const flood = Promise.all(
    Array.from({ length: 300 }, () =>
      logIn(base, acct.email, 'wrong password!', from('203.0.113.1')).then((r) => r.status),
    ),
  )
  const during = await putMedian(15, 'flood')
  const statuses = await flood
  const count = (s: number) => statuses.filter((x) => x === s).length
  t.comment(`PUT median: ${quiet.toFixed(2)} ms quiet, ${during.toFixed(2)} ms during 300 log-ins`)
  t.ok(count(401) <= 5, `at most 5 guesses were checked (${count(401)} got 401)`)
  t.equal(count(401) + count(429), 300, 'every other one was refused with 429')
  // 300 password hashes would hold PUTs up for seconds; a floor of 100 ms leaves room for a
  // slow disk's fsync, which every PUT waits for, without letting hashing through.
  t.ok(during <= Math.max(quiet * 10, 100), 'PUT latency stays within 10x of quiet')
})

t.test('300 wrong passwords spread over 300 addresses: the email slows down', async (t) => {
  const statuses = await Promise.all(
    Array.from({ length: 300 }, (_, i) =>
      logIn(base, acct.email, 'wrong password!', from(`203.0.${114 + (i >> 8)}.${i & 255}`)).then(
        (r) => r.status,
      ),
    ),
  )
  const checked = statuses.filter((s) => s === 401).length
  t.ok(checked <= 15, `only a burst of guesses was checked (${checked} got 401)`)
  t.equal(statuses.filter((s) => s === 429).length, 300 - checked, 'the rest got 429')
})

t.test('the owner is not locked out', async (t) => {
  const known = await logIn(base, acct.email, PASSWORD, from('198.51.100.7'))
  t.equal(known.status, 200, 'from an address that logged in before: at once')
  // From a new address: at most a few seconds of slow-down, never the 15-minute lockout.
  let res = await logIn(base, acct.email, PASSWORD, from('192.0.2.55'))
  const deadline = Date.now() + 20_000
  while (res.status === 429 && Date.now() < deadline) {
    const wait = Number(res.headers.get('retry-after'))
    t.ok(wait >= 1 && wait <= 10, `told to wait ${wait} s`)
    await new Promise((r) => setTimeout(r, wait * 1000))
    res = await logIn(base, acct.email, PASSWORD, from('192.0.2.55'))
  }
  t.equal(res.status, 200, 'from a new address: after a short wait')
})

t.test("a signed-in user's own password check is not blocked by others' guesses", async (t) => {
  const s = await logIn(base, acct.email, PASSWORD, from('198.51.100.7'))
  await Promise.all(
    Array.from({ length: 50 }, () => logIn(base, acct.email, 'guess!!!!!', from('203.0.113.1'))),
  )
  const res = await fetch(`${base}/dashboard/api/password`, {
    method: 'POST',
    headers: {
      origin: base,
      cookie: s.cookie!,
      'x-csrf-token': s.csrf,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ current: PASSWORD, password: `${PASSWORD} 2` }),
  })
  t.equal(res.status, 200, 'the password change goes through')
})

t.test('cairn account password ends the account’s dashboard sessions', async (t) => {
  const s = await logIn(base, acct.email, `${PASSWORD} 2`, from('198.51.100.7'))
  t.equal(s.status, 200)
  const me = () => fetch(`${base}/dashboard/api/me`, { headers: { cookie: s.cookie! } })
  t.equal((await me()).status, 200, 'signed in')
  await srv.operator('account.password', { email: acct.email, password: `${PASSWORD} 3` })
  t.equal((await me()).status, 401, 'signed out once the password was set again')
})

t.test('a flood of distinct addresses keeps every per-client map bounded', async (t) => {
  const rssBefore = await rss()
  const N = 20_000
  for (let i = 0; i < N; i += 500) {
    await Promise.all(
      Array.from({ length: 500 }, (_, j) =>
        fetch(`${srv.baseUrl}/lat/k`, {
          headers: {
            'x-api-key': 'cairn_wrong',
            ...from(`10.${(i + j) >> 16}.${((i + j) >> 8) & 255}.${(i + j) & 255}`),
          },
        }).then((r) => r.arrayBuffer()),
      ),
    )
  }
  const metrics = await (await fetch(`${srv.url}/metrics`)).text()
  const held = Number(/cairn_bounded_entries\{map="bad_key_addresses"\} (\d+)/.exec(metrics)?.[1])
  t.ok(held > 0 && held <= 100_000, `the bad-key limiter holds ${held} addresses (bound 100,000)`)
  const growth = (await rss()) - rssBefore
  t.comment(`RSS grew ${(growth / 1048576).toFixed(1)} MiB over ${N} distinct addresses`)
  t.ok(growth < 100 * 1048576, 'memory stays flat (well under 100 MiB of growth)')
})

async function rss(): Promise<number> {
  const text = await (await fetch(`${srv.url}/metrics`)).text()
  return Number(/cairn_process_resident_memory_bytes (\d+)/.exec(text)?.[1])
}

/** A sign-up as the dashboard's page sends it, from `address`. */
async function signUp(email: string, address: string): Promise<number> {
  const pre = await fetch(`${base}/signup`, { headers: from(address) })
  const cookie = pre.headers.getSetCookie().find((c) => c.startsWith('cairn_pre='))!
  const token = /name="csrf-token" content="([^"]+)"/.exec(await pre.text())![1]!
  const res = await fetch(`${base}/dashboard/api/signup`, {
    method: 'POST',
    headers: {
      origin: base,
      cookie: cookie.split(';')[0]!,
      'x-csrf-token': token,
      'content-type': 'application/json',
      ...from(address),
    },
    body: JSON.stringify({ email, password: 'long enough password' }),
  })
  await res.arrayBuffer()
  return res.status
}

t.test('sign-ups sent together from one address: still 20 an hour', async (t) => {
  // Two waves of 15 (under the 16 password hashes let run at once, which refuse the rest
  // with 429 by themselves).
  const wave = (n: number) =>
    Promise.all(
      Array.from({ length: 15 }, (_, i) => signUp(`burst${n}-${i}@example.com`, '192.0.2.50')),
    )
  const statuses = [...(await wave(1)), ...(await wave(2))]
  const made = statuses.filter((s) => s === 201).length
  t.equal(made, 20, `20 accounts made (${statuses.join(',')})`)
  t.equal(statuses.filter((s) => s === 429).length, 10, 'the rest refused with 429')
  // Asking which emails have accounts counts the same as signing up.
  const taken = await Promise.all(
    Array.from({ length: 25 }, () => signUp(acct.email, '192.0.2.51')),
  )
  t.equal(taken.filter((s) => s === 409).length, 20, 'an email already taken: 409, counted')
  t.equal(taken.filter((s) => s === 429).length, 5, 'then 429')
})

t.test('an account keeps its newest sessions, the oldest end past the bound', async (t) => {
  const me = (cookie: string) =>
    fetch(`${base}/dashboard/api/me`, { headers: { cookie } }).then((r) => r.status)
  // An account of its own: the floods above slowed the first one's email down.
  const own = await srv.createAccount(undefined, { password: PASSWORD })
  const cookies: string[] = []
  for (let i = 0; i <= MAX_SESSIONS; i++) {
    const r = await logIn(base, own.email, PASSWORD, from('198.51.100.60'))
    t.equal(r.status, 200)
    cookies.push(r.cookie!)
  }
  t.equal(await me(cookies[0]!), 401, `the oldest of ${MAX_SESSIONS + 1} sign-ins is signed out`)
  t.equal(await me(cookies[1]!), 200, 'the next one is not')
  t.equal(await me(cookies.at(-1)!), 200, 'nor the newest')
})
