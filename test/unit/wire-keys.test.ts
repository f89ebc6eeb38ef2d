// wire/keys.ts on its own: a raw path segment decoded into a key, or refused, by the
// contract's rules (README, "Keys"), and validKey for keys given as strings.
import t from 'tap'
import { decodeKey, validKey } from '../../server/wire/keys.js'

t.test('plain segments are the key as they are', async (t) => {
  t.equal(decodeKey('user'), 'user')
  t.equal(decodeKey('a/b/c'), 'a/b/c', 'a raw / is part of one key')
  t.equal(decodeKey('x'.repeat(512)), 'x'.repeat(512), '512 bytes is the most')
  t.equal(decodeKey('x'.repeat(513)), undefined, '513 is too many')
  t.equal(decodeKey(''), undefined, 'an empty key is no key')
})

t.test('percent-encoding is decoded as UTF-8', async (t) => {
  t.equal(decodeKey('a%2Fb'), 'a/b', '%2F is the same as /')
  t.equal(decodeKey('%3F%23'), '?#', '? and # come percent-encoded')
  t.equal(decodeKey('caf%C3%A9'), 'café')
  t.equal(decodeKey('%c3%a9'), 'é', 'hex digits in either case')
  t.equal(decodeKey('%F0%9F%98%80'), '😀', 'four-byte characters')
  t.equal(decodeKey('café'), 'café', 'a raw non-ASCII character as uWS decoded it')
  t.equal(decodeKey('😀x'), '😀x', 'a raw surrogate pair')
})

t.test('malformed encodings and bad bytes are refused', async (t) => {
  for (const raw of ['%', '%4', '%zz', 'a%G1', '%C3', '%C3%28', '%FF', '%ED%A0%80']) {
    t.equal(decodeKey(raw), undefined, `${raw} is refused`)
  }
  t.equal(decodeKey('a\uFFFDb'), undefined, 'U+FFFD stands for bytes uWS could not decode')
  t.equal(decodeKey('%00'), undefined, 'NUL')
  t.equal(decodeKey('a%0Ab'), undefined, 'a newline')
  t.equal(decodeKey('%7F'), undefined, 'DEL')
  t.equal(decodeKey('%1F'), undefined, 'the last control character')
  t.equal(decodeKey('%20'), ' ', 'a space is a character like any other')
})

t.test('the byte limit counts decoded bytes', async (t) => {
  t.equal(decodeKey('%C3%A9'.repeat(256)), 'é'.repeat(256), '256 two-byte characters: 512 bytes')
  t.equal(decodeKey(`${'%C3%A9'.repeat(256)}x`), undefined, 'one byte more is too many')
  t.equal(decodeKey(`${'é'.repeat(256)}`), 'é'.repeat(256), 'raw characters count the same')
  t.equal(decodeKey(`${'é'.repeat(256)}%41`), undefined)
})

t.test('dot segments are refused, dots elsewhere are not', async (t) => {
  for (const raw of ['.', '..', 'a/./b', 'a/../b', '..%2Fx', '%2E', '%2E%2E', 'a/.']) {
    t.equal(decodeKey(raw), undefined, `${raw} is a dot segment`)
  }
  for (const raw of ['.a', 'a.', '...', 'a/.b/c', 'v1.2']) t.equal(decodeKey(raw), raw, `${raw}`)
})

t.test('validKey applies the same rules to a string', async (t) => {
  t.ok(validKey('a/b'))
  t.ok(validKey('é'.repeat(256)))
  t.notOk(validKey('é'.repeat(256) + 'x'), 'past 512 bytes')
  t.notOk(validKey(''), 'empty')
  t.notOk(validKey('\ud800'), 'a lone surrogate has no UTF-8 form')
  t.notOk(validKey('a\u0000'), 'NUL')
  t.notOk(validKey('a\u007f'), 'DEL')
  t.notOk(validKey('a/../b'), 'a dot segment')
  t.ok(validKey('😀'), 'a surrogate pair is one character')
})
