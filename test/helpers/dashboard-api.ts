// The dashboard's JSON API as a browser uses it, over fetch: the pre-session cookie and token
// the log-in page hands out, then log-in. For tests that need no rendering.

/** What a browser holds before logging in: the pre-session cookie and the page's token. */
export async function preSession(base: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/login`, { headers })
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('cairn_pre='))!
  const token = /name="csrf-token" content="([^"]+)"/.exec(await res.text())![1]!
  return { setCookie: cookie, cookie: cookie.split(';')[0]!, token }
}

export async function logIn(
  base: string,
  email: string,
  password: string,
  extra: Record<string, string> = {},
) {
  const pre = await preSession(base)
  const res = await fetch(`${base}/dashboard/api/login`, {
    method: 'POST',
    headers: {
      origin: base,
      cookie: pre.cookie,
      'x-csrf-token': pre.token,
      'content-type': 'application/json',
      ...extra,
    },
    body: JSON.stringify({ email, password }),
  })
  const body: any = await res.json()
  const set = res.headers.getSetCookie().find((c) => c.startsWith('cairn_session='))
  return {
    status: res.status,
    body,
    headers: res.headers,
    cookie: set?.split(';')[0],
    csrf: body.csrf,
  }
}
