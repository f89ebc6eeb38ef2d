// On the embedded store, a transaction planned on a write still in flight that then fails:
// its refusal (a check, a key not there) or its nothing-to-do (a delete that found nothing)
// is not answered from that write, which never happened, but fails with it. The real engine
// on a real directory; only its file I/O fails.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { clearFaults, injectFault } from '../../engine/io.js'
import { openStore } from '../../server/store/open.js'

const code = (p: Promise<unknown>) =>
  p.then(
    () => 'RESOLVED',
    (err: { code?: string }) => String(err.code),
  )

t.test('a transaction planned on a write that fails is answered with its failure', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-staged-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  t.teardown(clearFaults)
  const store = await openStore({ dataDir: dir, durability: 'always' })
  t.teardown(() => store.close())
  await store.createNamespace('n')
  await store.put('n', 'gone', Buffer.from('1'))
  injectFault({ op: 'fsync', code: 'EIO' })
  // Staged in one group: the put and the delete, then transactions planned on them.
  const answers = await Promise.all(
    [
      store.put('n', 'k', Buffer.from('"A"')),
      store.delete('n', 'gone'),
      store.transact('n', [
        { op: 'check', key: 'k', version: null },
        { op: 'put', key: 'x', value: Buffer.from('1') },
      ]),
      store.transact('n', [{ op: 'delete', key: 'gone' }]),
    ].map(code),
  )
  t.same(
    answers,
    ['IO_ERROR', 'IO_ERROR', 'IO_ERROR', 'IO_ERROR'],
    'none answered from the failed writes',
  )
})
