// A real full disk: a small tmpfs filled up. Writes are refused with NO_SPACE and leave no
// trace, reads go on, and once space is freed writes resume with nothing lost on reopen.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { open } from '../../engine/index.js'
import { mountTmpfs } from '../helpers/tmpfs.js'
import { errorCode } from './helpers.js'

t.test(
  'disk full, then freed: refused writes leave no trace, acknowledged ones all survive',
  async (t) => {
    const fsys = mountTmpfs(3 * 1024 * 1024)
    if (typeof fsys === 'string') return t.skip(fsys)
    t.teardown(() => fsys.unmount())
    const dir = path.join(fsys.dir, 'db')
    const options = { segmentBytes: 256 * 1024 }
    let db = await open(dir, options)
    await db.createNamespace('d')
    const filler = fsys.fill(600 * 1024)
    const acked = new Map<string, string>()
    const refused: string[] = []
    const states = new Set<string>()
    let i = 0
    // Concurrent writers, so failures land inside group commits with other writes in them.
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (refused.length < 30 && i < 5000) {
          const key = `k${i++}`
          const value = `${key}:${'v'.repeat(3000)}`
          try {
            await db.put('d', key, value)
            acked.set(key, value)
          } catch (err) {
            t.equal((err as { code?: string }).code, 'NO_SPACE', `${key} refused as NO_SPACE`)
            refused.push(key)
            states.add(db.health().state)
          }
        }
      }),
    )
    t.ok(
      refused.length > 0 && acked.size > 0,
      `${acked.size} acknowledged, ${refused.length} refused`,
    )
    t.same([...states], ['no_space'], 'health said the disk was full, and nothing worse')
    for (const key of refused) t.equal(await db.get('d', key), undefined, `${key} not visible`)
    const listed = new Set((await db.list('d', { limit: 100_000 })).keys)
    t.same(
      refused.filter((k) => listed.has(k)),
      [],
      'no refused key is listed',
    )
    t.equal(db.namespaceStats('d')?.keys, acked.size, 'the key count holds only acknowledged keys')
    for (const [key, value] of [...acked].slice(0, 10))
      t.equal((await db.get('d', key))?.value, value, 'reads go on')

    fs.rmSync(filler)
    await db.put('d', 'after', 'room again')
    acked.set('after', 'room again')
    t.equal(db.health().state, 'ok', 'writes resume once space is freed, without a reopen')
    await db.close()
    db = await open(dir, options)
    const wrong: string[] = []
    for (const [key, value] of acked) if ((await db.get('d', key))?.value !== value) wrong.push(key)
    t.same(wrong, [], 'every acknowledged write survives a reopen')
    for (const key of refused) t.equal(await errorCode(db.get('d', key)), 'RESOLVED')
    for (const key of refused) t.equal(await db.get('d', key), undefined)
    await db.close()
  },
)
