// wire/json-body.ts on its own: PUT bodies are checked without being parsed into objects,
// and the value is kept as its exact text (big integers, member order, escapes), minified
// only outside strings.
import t from 'tap'
import { ApiError } from '../../server/wire/errors.js'
import {
  MAX_DEPTH,
  MAX_METADATA_BYTES,
  bodyMembers,
  parseJsonObject,
  parsePutBody,
  spanString,
  spanText,
} from '../../server/wire/json-body.js'

const b = (s: string) => Buffer.from(s)
const NOW = Date.UTC(2026, 11, 1)
const put = (s: string, max: number | null = null) => parsePutBody(b(s), max, NOW)
const code = (fn: () => unknown): string => {
  try {
    fn()
  } catch (err) {
    return err instanceof ApiError ? err.code : `not an ApiError: ${err}`
  }
  return 'no error'
}

t.test('the value is its exact JSON text', async (t) => {
  t.equal(put('{"value":"world"}').value.toString(), '"world"')
  t.equal(put('{"value":12345678901234567890}').value.toString(), '12345678901234567890')
  t.equal(put('{"value":{"b":1,"a":2}}').value.toString(), '{"b":1,"a":2}', 'member order kept')
  t.equal(put('{"value":"\\u00e9\\n"}').value.toString(), '"\\u00e9\\n"', 'escapes kept')
  t.equal(put('{"value":1.50e+3}').value.toString(), '1.50e+3', 'number text kept')
  t.equal(
    put('{ "value" : { "a" : [ 1 , "x y" ] } }').value.toString(),
    '{"a":[1,"x y"]}',
    'whitespace outside strings goes, inside strings stays',
  )
  t.equal(put('{"value":null}').value.toString(), 'null', 'null is a value')
  t.equal(put('\n{"value":true}\n').value.toString(), 'true', 'whitespace around the body')
})

t.test('ttl, expiresAt and metadata', async (t) => {
  t.same(put('{"value":1,"ttl":60}').ttl, 60)
  const at = NOW / 1000 + 3600
  t.same(put(`{"value":1,"expiresAt":${at}}`).expiresAt, at)
  t.equal(
    code(() => put('{"value":1,"ttl":0}')),
    'invalid_ttl',
  )
  t.equal(
    code(() => put('{"value":1,"ttl":1.5}')),
    'invalid_ttl',
  )
  t.equal(
    code(() => put('{"value":1,"ttl":"60"}')),
    'invalid_ttl',
  )
  t.equal(
    code(() => put(`{"value":1,"ttl":60,"expiresAt":${at}}`)),
    'invalid_ttl',
    'not both',
  )
  t.equal(
    code(() => put(`{"value":1,"expiresAt":${NOW / 1000}}`)),
    'invalid_ttl',
    'not now',
  )
  t.equal(put('{"value":1,"metadata":{"tag":"x"}}').metadata?.toString(), '{"tag":"x"}')
  t.equal(put('{"value":1,"metadata":null}').metadata, undefined, 'null metadata is none')
  t.equal(
    code(() => put(`{"value":1,"metadata":{"a":"${'x'.repeat(MAX_METADATA_BYTES)}"}}`)),
    'invalid_metadata',
    'metadata past its limit',
  )
  t.equal(
    code(() => put('{"value":1,"metadata":[1]}')),
    'invalid_metadata',
    'an object only',
  )
})

t.test('bad bodies get their codes', async (t) => {
  t.equal(
    code(() => put('')),
    'invalid_json',
    'empty',
  )
  t.equal(
    code(() => put('{"value":')),
    'invalid_json',
    'cut short',
  )
  t.equal(
    code(() => put('{"value":1,}')),
    'invalid_json',
    'trailing comma',
  )
  t.equal(
    code(() => put('{"value":1} x')),
    'invalid_json',
    'bytes after the body',
  )
  t.equal(
    code(() => put('{"value":01}')),
    'invalid_json',
    'a leading zero',
  )
  t.equal(
    code(() => put('{"value":"\u0001"}')),
    'invalid_json',
    'a raw control character',
  )
  t.equal(
    code(() => put('{"value":NaN}')),
    'invalid_json',
  )
  t.equal(
    code(() => put('{"other":1}')),
    'missing_value',
  )
  t.equal(
    code(() => put('[1]')),
    'missing_value',
    'valid JSON that is not an object',
  )
  t.equal(
    code(() => put('{"value":"abcdef"}', 4)),
    'value_too_large',
    'past the plan',
  )
  t.equal(put('{"value":"ab"}', 4).value.toString(), '"ab"', 'at the plan: 4 bytes of JSON')
  const deep = `{"value":${'['.repeat(MAX_DEPTH + 1)}${']'.repeat(MAX_DEPTH + 1)}}`
  t.equal(
    code(() => put(deep)),
    'invalid_json',
    'nested past the depth limit',
  )
})

t.test('parseJsonObject and member spans', async (t) => {
  t.same(parseJsonObject(b('{"name":"sessions"}')), { name: 'sessions' })
  t.equal(
    code(() => parseJsonObject(b('[]'))),
    'invalid_request',
    'an object only',
  )
  t.equal(
    code(() => parseJsonObject(b('{"a":'))),
    'invalid_json',
  )
  const body = b('{"key":"k\\u0041","n":[1, 2]}')
  const m = bodyMembers(body)!
  t.ok(m, 'members of an object')
  t.equal(spanString(body, m.get('key')!), 'kA', 'a string member decoded')
  t.equal(spanText(body, m.get('n')!).toString(), '[1,2]', 'a member as minified text')
  t.equal(bodyMembers(b('[1]')), undefined, 'no members in an array')
})
