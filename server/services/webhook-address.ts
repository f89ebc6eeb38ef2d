// Where a notification webhook may point: http or https, to a host that is not, and does not
// resolve to, a loopback, private, link-local or otherwise non-public address (so an account
// cannot make the server call into its own network). The same check runs when a URL is
// saved and on every send, at connection time: the address connected to is the address
// checked, so a name that resolves elsewhere later (DNS rebinding) gains nothing.
import dns from 'node:dns'
import net from 'node:net'

const BLOCKED = new net.BlockList()
for (const [a, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const)
  BLOCKED.addSubnet(a, bits, 'ipv4')
for (const [a, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const)
  BLOCKED.addSubnet(a, bits, 'ipv6')

/** Whether an IP address is one a webhook may not reach. */
export function privateAddress(address: string): boolean {
  const v = net.isIP(address)
  if (v === 0) return true
  if (v === 6) {
    // An IPv4 address written as IPv6 (::ffff:127.0.0.1) is that IPv4 address.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
    if (mapped) return BLOCKED.check(mapped[1]!, 'ipv4')
    return BLOCKED.check(address, 'ipv6')
  }
  return BLOCKED.check(address, 'ipv4')
}

export class WebhookUrlError extends Error {}

/** The URL parsed, or WebhookUrlError saying what is wrong with it. */
export function parseWebhookUrl(text: unknown): URL {
  if (typeof text !== 'string' || text.length === 0 || text.length > 2048)
    throw new WebhookUrlError(
      'Give the webhook as an http or https URL of at most 2,048 characters.',
    )
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new WebhookUrlError('That is not a URL.')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new WebhookUrlError('The webhook URL must start with http:// or https://.')
  if (url.username !== '' || url.password !== '')
    throw new WebhookUrlError('The webhook URL may not hold a user name or password.')
  return url
}

const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1')

/**
 * Resolves the URL's host and refuses it (WebhookUrlError) when any address it has is not
 * public, unless private addresses are allowed.
 */
export async function checkWebhookHost(url: URL, allowPrivate: boolean): Promise<void> {
  if (allowPrivate) return
  const host = hostOf(url)
  let addresses: string[]
  if (net.isIP(host) !== 0) addresses = [host]
  else {
    try {
      addresses = (await dns.promises.lookup(host, { all: true, verbatim: true })).map(
        (a) => a.address,
      )
    } catch {
      throw new WebhookUrlError(`The host ${host} could not be resolved.`)
    }
  }
  if (addresses.length === 0 || addresses.some(privateAddress))
    throw new WebhookUrlError(
      `The host ${host} is, or resolves to, a loopback, private or link-local address.`,
    )
}

/**
 * A `lookup` for http.request that resolves as usual and refuses a non-public address, so
 * the address connected to is the one checked.
 */
export function publicLookup(allowPrivate: boolean): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, found) => {
      if (err) return callback(err, '', 0)
      const list = found as unknown as dns.LookupAddress[]
      const refused = !allowPrivate && list.some((a) => privateAddress(a.address))
      if (refused || list.length === 0)
        return callback(
          Object.assign(new Error(`${hostname} resolves to a non-public address`), {
            code: 'PRIVATE_ADDRESS',
          }),
          '',
          0,
        )
      if ((options as { all?: boolean }).all) return callback(null, list as never, 0)
      callback(null, list[0]!.address, list[0]!.family)
    })
  }
}
