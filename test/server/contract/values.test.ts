// Values come back byte-exact: the JSON text of `value` as sent (without insignificant
// whitespace) is the JSON text returned.
import t from 'tap'
import { freshNamespace, setup } from './setup.js'

const { api } = await setup(t)
const ns = await freshNamespace(api)

const exact = [
  '12345678901234567890123456789012345678901234567890',
  '-9007199254740993',
  '9007199254740993',
  '3.14159265358979323846264338327950288419716939937510',
  '0.1000000000000000055511151231257827',
  '-0',
  '-0.0',
  '1e400',
  '1E-7',
  '2.50e+10',
  '{"b":1,"a":2,"c":{"z":0,"y":1,"x":[3,2,1]}}',
  '"\\u00e9\\ud83d\\ude00\\n\\"\\\\\\/\\u0000"',
  '"日本語 é 😀"',
  '{"__proto__":{"polluted":true},"constructor":{"prototype":1}}',
  '{"__proto__":null}',
  'null',
  'true',
  'false',
  '[]',
  '{}',
  '""',
  '[[[[[[[[[[1]]]]]]]]]]',
  '{"":"empty name","a\\u0000b":1}',
  '[1,-0,1.0,1e2,-1.5E-3,100000000000000000000000]',
]

t.test('values round-trip byte-exact', async (t) => {
  let i = 0
  for (const text of exact) {
    const key = `v${i++}`
    const put = await api.put(`/${ns}/${key}`, `{"value":${text}}`)
    t.equal(put.status, 201, `store ${text}`)
    const got = await api.get(`/${ns}/${key}`)
    t.equal(got.status, 200)
    t.equal(got.text, `{"value":${text}}`, `round trip of ${text}`)
  }
  t.equal(
    ({} as Record<string, unknown>).polluted,
    undefined,
    'no prototype pollution in the test process',
  )
})

t.test('the value member may come anywhere, beside ttl, with whitespace', async (t) => {
  const body = '{ "ttl" : 3600 ,\n\t"value" :\r\n [ 1 , { "k" : "v" } ] }'
  t.equal((await api.put(`/${ns}/ws`, body)).status, 201)
  const got = await api.get(`/${ns}/ws`)
  t.same(JSON.parse(got.text), { value: [1, { k: 'v' }] })
  t.match(got.text, /^\{"value":/, 'the body holds only value')
})

t.test('null is stored; missing is not the same as null', async (t) => {
  t.equal((await api.put(`/${ns}/nul`, '{"value":null}')).status, 201)
  const got = await api.get(`/${ns}/nul`)
  t.equal(got.status, 200)
  t.equal(got.text, '{"value":null}')
  const missing = await api.get(`/${ns}/not-there`)
  t.equal(missing.status, 404)
  t.equal(missing.json.error.code, 'key_not_found')
})

t.test('UTF-8 text in values survives byte for byte', async (t) => {
  const body = Buffer.from('{"value":"\u{10FFFF} \u2028 \u00a0 \uFEFF ok"}', 'utf8')
  t.equal((await api.put(`/${ns}/utf8`, body)).status, 201)
  const got = await api.get(`/${ns}/utf8`)
  t.equal(got.text, body.toString('utf8'))
})

t.test('invalid UTF-8 inside a value is invalid_json', async (t) => {
  const body = Buffer.concat([
    Buffer.from('{"value":"'),
    Buffer.from([0xff, 0xfe]),
    Buffer.from('"}'),
  ])
  const res = await api.put(`/${ns}/badutf8`, body)
  t.equal(res.status, 400)
  t.equal(res.json?.error?.code, 'invalid_json')
})

t.test('very deep JSON is refused with 400, not a crash', async (t) => {
  const deep = `{"value":${'['.repeat(100000)}${']'.repeat(100000)}}`
  const res = await api.put(`/${ns}/deep`, deep)
  t.equal(res.status, 400)
  t.equal((await api.get(`/${ns}/v0`)).status, 200, 'the server still answers')
})
