// What a backend says it is (Store.supports) against what it does: counts across front ends
// are there exactly when the store is not its sole writer, and metadata adds to a namespace's
// bytes what metadataOverhead says (nothing at -1).
import type { Test } from 'tap'
import type { Store } from '../../../server/store/types.js'

export async function supportsSuite(t: Test, store: Store): Promise<void> {
  const { soleWriter, metadataOverhead } = store.supports
  t.type(soleWriter, 'boolean', 'soleWriter is said')
  t.equal(store.holds === undefined, soleWriter, 'holds exactly when other front ends write')
  t.equal(
    store.storageTotals === undefined,
    soleWriter,
    'storage totals exactly when other front ends write',
  )
  const ns = 'm/supports'
  t.equal(await store.createNamespace(ns), true)
  const value = Buffer.from('"v"')
  const metadata = Buffer.from('{"tag":"x"}')
  await store.put(ns, 'plain', value)
  const before = (await store.namespaceCounts(ns))!.bytes
  await store.put(ns, 'with', value, { metadata })
  const added = (await store.namespaceCounts(ns))!.bytes - before
  const plain = Buffer.byteLength('with') + value.length
  t.equal(
    added - plain,
    metadataOverhead < 0 ? 0 : metadata.length + metadataOverhead,
    `metadata adds what metadataOverhead (${metadataOverhead}) says`,
  )
  t.equal(await store.dropNamespace(ns), true)
}
