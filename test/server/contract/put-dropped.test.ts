// A PUT whose namespace is deleted while its body is still arriving: the namespace was found
// before the body was read, and the write that follows is refused as a missing namespace
// would be (404, the namespace named), with nothing stored, on whichever store runs.
import net from 'node:net'
import t from 'tap'
import { setup } from './setup.js'

const { srv, api } = await setup(t)

t.test('the namespace is deleted between the head and the body', async (t) => {
  await api.createNamespace('gone')
  const body = '{"value":"late"}'
  const s = net.connect(srv.port, '127.0.0.1')
  t.teardown(() => s.destroy())
  let text = ''
  const answered = new Promise<void>((resolve) => {
    s.on('data', (d) => {
      text += d.toString('latin1')
      if (/\r\n\r\n[\s\S]*\}$/.test(text)) resolve()
    })
    s.on('close', () => resolve())
  })
  s.on('error', () => {})
  await new Promise<void>((r) => s.once('connect', () => r()))
  s.write(
    `PUT /v1/gone/k HTTP/1.1\r\nHost: x\r\nx-api-key: ${api.key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
  )
  // The head is in and the server waits for the body; the namespace goes meanwhile.
  await new Promise((r) => setTimeout(r, 200))
  t.equal((await api.del('/namespaces/gone')).status, 200, 'deleted while the body is awaited')
  s.write(body)
  await answered
  t.match(text, /^HTTP\/1\.1 404 /, '404')
  t.match(text, /"code":"namespace_not_found"/, 'namespace_not_found')
  t.match(text, /There is no namespace \\"gone\\"\./, 'naming the namespace')
  await api.createNamespace('gone')
  t.equal((await api.get('/gone/k')).status, 404, 'nothing was stored')
})
