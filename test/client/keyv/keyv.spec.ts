// @keyv/test-suite, assertions untouched, against KeyvCairn on the real server whose URL, API
// key and namespace test/client/keyv-suite.test.ts passes in the environment.
import keyvTestSuite, { keyvIteratorTests } from '@keyv/test-suite'
import Keyv from 'keyv'
import * as test from 'vitest'
import { KeyvCairn } from '../../../client/src/keyv.js'

const url = process.env.KEYV_CAIRN_URL
const apiKey = process.env.KEYV_CAIRN_API_KEY
const namespace = process.env.KEYV_CAIRN_NAMESPACE
if (!url || !apiKey || !namespace) {
  throw new Error('KEYV_CAIRN_URL, KEYV_CAIRN_API_KEY and KEYV_CAIRN_NAMESPACE must be set')
}

const store = () => new KeyvCairn({ url, apiKey, namespace })

keyvTestSuite(test, Keyv, store)

// Keyv 5 turns keyv.iterator() on only for the dialects it lists, and Cairn is not one of
// them; an application turns it on with Keyv's own generateIterator, as this Keyv does.
class KeyvIterable extends Keyv {
  constructor(...args: ConstructorParameters<typeof Keyv>) {
    super(...args)
    const s = this.store as KeyvCairn
    this.iterator = this.generateIterator(s.iterator.bind(s))
  }
}
keyvIteratorTests(test, KeyvIterable as typeof Keyv, store)
