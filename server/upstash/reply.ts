// What a command answers, and its JSON text as Upstash sends it. With `Upstash-Encoding:
// base64` every string is base64 of its UTF-8 bytes except the status reply "OK" (the client
// decodes every other string); integers and nulls go as they are.

/** A stored value's JSON text, answered as the Redis string it stands for (values.ts). */
export class Bulk {
  constructor(readonly stored: Buffer) {}
}

/** The status reply "OK". */
export const OK = Symbol('OK')

export type Reply = null | number | bigint | string | Bulk | typeof OK | Reply[]

const QUOTE = 0x22
const BACKSLASH = 0x5c

function base64OfStored(v: Buffer): string {
  if (v[0] !== QUOTE) return v.toString('base64')
  // A JSON string without escapes holds the string's UTF-8 bytes between its quotes.
  const inner = v.subarray(1, v.length - 1)
  if (inner.indexOf(BACKSLASH) < 0) return inner.toString('base64')
  return Buffer.from(JSON.parse(v.toString('utf8')) as string).toString('base64')
}

function plainOfStored(v: Buffer): string {
  // A stored string's JSON text is already the JSON string to send.
  if (v[0] === QUOTE) return v.toString('utf8')
  return JSON.stringify(v.toString('utf8'))
}

/** The JSON text of a reply. */
export function replyText(r: Reply, base64: boolean): string {
  if (r === null) return 'null'
  switch (typeof r) {
    case 'number':
    case 'bigint':
      return String(r)
    case 'string':
      return base64 ? `"${Buffer.from(r).toString('base64')}"` : JSON.stringify(r)
    case 'symbol':
      return '"OK"'
  }
  if (r instanceof Bulk) return base64 ? `"${base64OfStored(r.stored)}"` : plainOfStored(r.stored)
  let out = '['
  for (let i = 0; i < r.length; i++) out += (i === 0 ? '' : ',') + replyText(r[i]!, base64)
  return `${out}]`
}

/** `{"result": ...}`: a command's answer, alone or as a pipeline's entry. */
export const resultText = (r: Reply, base64: boolean) => `{"result":${replyText(r, base64)}}`

/** `{"error": "..."}`. */
export const errorText = (message: string) => `{"error":${JSON.stringify(message)}}`
