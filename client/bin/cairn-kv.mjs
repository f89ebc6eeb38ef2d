#!/usr/bin/env node
// cairn-kv: a Cairn namespace's data from the command line (the client package's bin). Flags
// may come before or after the positional arguments; --url and --key, or CAIRN_URL and
// CAIRN_KEY. Exit status: 0 on success, 1 on an API error (its code and message on stderr),
// 2 on bad usage (with a usage line). Exports and imports draw a progress bar on stderr
// when it is a terminal. `history` and `restore` read and restore the namespace's past (the
// contract's "History and restore").
import fs from 'node:fs'
import { Readable } from 'node:stream'
import { Cairn, CairnError } from '../dist/esm/index.js'

const USAGE = `usage: cairn-kv [--url URL] [--key KEY] COMMAND ...
  get NS KEY [--metadata]
  put NS KEY JSON | put NS KEY --file F   [--ttl S] [--metadata JSON]
  delete NS KEY
  list NS [--prefix P] [--start S] [--end E] [--values]
  count NS [--prefix P] [--start S] [--end E]
  export NS [--prefix P] [--start S] [--end E] [--at POINT] [--out F]
  import NS [--mode merge|replace] [--file F] [--prefix P] [--start S] [--end E]
  history NS KEY
  restore NS --at POINT [--prefix P] [--start S] [--end E]
  watch NS [--prefix P] [--since V]
POINT: a version (digits) or an RFC 3339 time such as 2026-12-01T10:00:00Z`

const FLAGS = new Set([
  'url',
  'key',
  'file',
  'ttl',
  'metadata-json',
  'prefix',
  'start',
  'end',
  'out',
  'mode',
  'since',
  'at',
])
const SWITCHES = new Set(['metadata', 'values'])

class Usage extends Error {}

function parse(argv) {
  const pos = []
  const flags = {}
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (!a.startsWith('--')) {
      pos.push(a)
      continue
    }
    let name = a.slice(2)
    let value
    const eq = name.indexOf('=')
    if (eq >= 0) {
      value = name.slice(eq + 1)
      name = name.slice(0, eq)
    }
    // --metadata is a switch for get and takes JSON for put.
    const takes = FLAGS.has(name) || (name === 'metadata' && argv.includes('put'))
    if (takes) {
      if (value === undefined) {
        if (i + 1 >= argv.length) throw new Usage(`--${name} needs a value`)
        value = argv[++i]
      }
      flags[name] = value
    } else if (SWITCHES.has(name) && value === undefined) flags[name] = true
    else throw new Usage(`unknown flag --${name}`)
  }
  return { pos, flags }
}

const out = (s) => process.stdout.write(s)

/** A progress bar on stderr, only when it is a terminal. */
function progress(label, total) {
  if (!process.stderr.isTTY) return { tick() {}, done() {} }
  let last = 0
  const draw = (n, extra) => {
    const width = 30
    const share = total ? Math.min(1, n / total) : 0
    const bar = total
      ? `[${'#'.repeat(Math.round(share * width)).padEnd(width)}] ${Math.round(share * 100)}%`
      : ''
    process.stderr.write(`\r${label} ${bar} ${(n / 1048576).toFixed(1)} MiB ${extra}`)
  }
  return {
    tick(n, extra = '') {
      const now = Date.now()
      if (now - last < 100) return
      last = now
      draw(n, extra)
    },
    done(n, extra = '') {
      draw(n, extra)
      process.stderr.write('\n')
    },
  }
}

async function rawGet(cfg, path) {
  const res = await fetch(`${cfg.url}${path}`, { headers: { 'x-api-key': cfg.key } })
  const text = await res.text()
  if (res.status >= 400) throw apiError(res.status, text)
  return text
}

function apiError(status, text) {
  let code = `http_${status}`
  let message = text
  try {
    const e = JSON.parse(text).error
    code = e.code
    message = e.message + (e.line !== undefined ? ` (line ${e.line})` : '')
  } catch {}
  return Object.assign(new Error(message), { api: true, code })
}

/**
 * The raw text of each item of the JSON array that opens at `text[open]` ('['), byte for byte:
 * a version's value goes out exactly as stored, as `get` prints it.
 */
function arrayItems(text, open) {
  const items = []
  let depth = 0
  let from = open + 1
  for (let i = open; i < text.length; i++) {
    const c = text[i]
    if (c === '"') {
      // Past the string, escapes included.
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++
    } else if (c === '[' || c === '{') depth++
    else if (c === ']' || c === '}') {
      depth--
      if (depth === 0) {
        const last = text.slice(from, i).trim()
        if (last !== '') items.push(last)
        return items
      }
    } else if (c === ',' && depth === 1) {
      items.push(text.slice(from, i).trim())
      from = i + 1
    }
  }
  throw Object.assign(new Error('The server sent a history that is not whole.'), {
    api: true,
    code: 'invalid_response',
  })
}

const enc = (s) => encodeURIComponent(s)
const keyPath = (k) => k.split('/').map(enc).join('/')
const range = (f) => ({ prefix: f.prefix, start: f.start, end: f.end })

async function main(argv) {
  const { pos, flags } = parse(argv)
  const [cmd, ns, key, ...rest] = pos
  const url = (flags.url ?? process.env.CAIRN_URL ?? '').replace(/\/+$/, '')
  const apiKey = flags.key ?? process.env.CAIRN_KEY
  if (!cmd) throw new Usage('no command')
  if (!url) throw new Usage('give --url or CAIRN_URL (the /v1 base URL)')
  if (!apiKey) throw new Usage('give --key or CAIRN_KEY')
  if (!ns) throw new Usage(`${cmd} needs a namespace`)
  if (flags.at !== undefined && cmd !== 'export' && cmd !== 'restore')
    throw new Usage(`--at is for export and restore, not ${cmd}`)
  const cfg = { url, key: apiKey }
  const kv = new Cairn(apiKey, { baseUrl: url, retries: 2 })
  const need = (n) => {
    if (pos.length !== n) throw new Usage(`${cmd} takes ${n - 1} arguments`)
  }
  switch (cmd) {
    case 'get': {
      need(3)
      const body = await rawGet(
        cfg,
        `/${enc(ns)}/${keyPath(key)}${flags.metadata ? '?metadata=1' : ''}`,
      )
      // {"value":<the stored text>}: the stored text, byte for byte.
      out(`${flags.metadata ? body : body.slice('{"value":'.length, -1)}\n`)
      return
    }
    case 'put': {
      let text
      if (flags.file !== undefined) {
        need(3)
        text = fs.readFileSync(flags.file, 'utf8')
      } else {
        need(4)
        text = rest[0]
      }
      let body = `{"value":${text}`
      if (flags.ttl !== undefined) {
        if (!/^[1-9][0-9]*$/.test(flags.ttl)) throw new Usage('--ttl is whole seconds')
        body += `,"ttl":${flags.ttl}`
      }
      if (flags.metadata !== undefined) body += `,"metadata":${flags.metadata}`
      body += '}'
      const res = await fetch(`${url}/${enc(ns)}/${keyPath(key)}`, {
        method: 'PUT',
        headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
        body,
      })
      const answer = await res.text()
      if (res.status >= 400) throw apiError(res.status, answer)
      out(`${answer}\n`)
      return
    }
    case 'delete': {
      need(3)
      await kv.delete(ns, key).then((deleted) => {
        if (!deleted)
          throw Object.assign(new Error('There is no such key in this namespace.'), {
            api: true,
            code: 'key_not_found',
          })
      })
      out('{"deleted":true}\n')
      return
    }
    case 'list': {
      need(2)
      if (flags.values) {
        // An export's entry lines: every value exactly as stored, in key order.
        await exportTo(kv, ns, flags, process.stdout, true)
        return
      }
      for await (const k of kv.keys(ns, range(flags))) out(`${k}\n`)
      return
    }
    case 'count': {
      need(2)
      const c = await kv.count(ns, range(flags))
      out(`${JSON.stringify({ count: c.count, bytes: c.bytes, version: c.version })}\n`)
      return
    }
    case 'export': {
      need(2)
      const sink = flags.out === undefined ? process.stdout : fs.createWriteStream(flags.out)
      await exportTo(kv, ns, flags, sink, false)
      return
    }
    case 'import': {
      need(2)
      if (flags.mode !== undefined && flags.mode !== 'merge' && flags.mode !== 'replace')
        throw new Usage('--mode is merge or replace')
      const total = flags.file === undefined ? 0 : fs.statSync(flags.file).size
      const input = flags.file === undefined ? process.stdin : fs.createReadStream(flags.file)
      const bar = progress('import', total)
      let sent = 0
      input.on('data', (c) => {
        sent += c.length
        bar.tick(sent)
      })
      const r = await kv.importNamespace(ns, Readable.toWeb(input), {
        ...range(flags),
        mode: flags.mode,
      })
      bar.done(sent, `${r.imported} imported, ${r.deleted} deleted`)
      out(`${JSON.stringify(r)}\n`)
      return
    }
    case 'history': {
      need(3)
      // Every version, newest first, a page at a time; each line as the server wrote it.
      let cursor
      do {
        const q = `?history=1&limit=1000${cursor === undefined ? '' : `&cursor=${enc(cursor)}`}`
        const body = await rawGet(cfg, `/${enc(ns)}/${keyPath(key)}${q}`)
        const open = body.indexOf('[')
        if (!body.startsWith('{"versions":') || open < 0)
          throw Object.assign(new Error('The server sent no "versions".'), {
            api: true,
            code: 'invalid_response',
          })
        for (const item of arrayItems(body, open)) out(`${item}\n`)
        cursor = JSON.parse(body).cursor
      } while (cursor !== undefined)
      return
    }
    case 'restore': {
      need(2)
      if (flags.at === undefined || flags.at === '') throw new Usage('restore needs --at POINT')
      const r = await kv.restore(ns, { ...range(flags), at: flags.at })
      out(`${JSON.stringify({ restored: r.restored, version: r.version })}\n`)
      return
    }
    case 'watch': {
      need(2)
      for await (const e of kv.watch(ns, { prefix: flags.prefix, since: flags.since })) {
        if (e.type === 'progress') continue
        out(`${JSON.stringify(e, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))}\n`)
      }
      return
    }
    default:
      throw new Usage(`unknown command ${cmd}`)
  }
}

/** The export's bytes to `sink`; with `entriesOnly`, its entry lines alone. */
async function exportTo(kv, ns, flags, sink, entriesOnly) {
  const stream = await kv.exportStream(ns, { ...range(flags), at: flags.at })
  const bar = progress('export', 0)
  let bytes = 0
  let lines = 0
  let tail = ''
  let ended = false
  const write = (chunk) =>
    new Promise((resolve, reject) => {
      if (sink.write(chunk)) resolve()
      else {
        sink.once('drain', resolve)
        sink.once('error', reject)
      }
    })
  for await (const chunk of stream) {
    bytes += chunk.length
    const text = tail + Buffer.from(chunk).toString('utf8')
    const cut = text.lastIndexOf('\n') + 1
    tail = text.slice(cut)
    const whole = text.slice(0, cut)
    for (let i = whole.indexOf('\n'); i >= 0; i = whole.indexOf('\n', i + 1)) lines++
    if (whole.includes('{"end":true')) ended = true
    if (!entriesOnly) await write(whole)
    else {
      const keep = whole
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('{"cairn":') && !l.startsWith('{"end":true'))
      if (keep.length > 0) await write(`${keep.join('\n')}\n`)
    }
    bar.tick(bytes, `${Math.max(0, lines - 1)} entries`)
  }
  if (sink !== process.stdout) await new Promise((r) => sink.end(r))
  bar.done(bytes, `${Math.max(0, lines - 2)} entries`)
  if (!ended)
    throw Object.assign(new Error('The export ended without its end line: it was cut short.'), {
      api: true,
      code: 'export_cut_short',
    })
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err) => {
    if (err instanceof Usage) {
      process.stderr.write(`cairn-kv: ${err.message}\n${USAGE}\n`)
      process.exit(2)
    }
    if (err instanceof CairnError || err?.api) {
      const line = err.line !== undefined && !err.api ? ` (line ${err.line})` : ''
      process.stderr.write(`cairn-kv: ${err.code}: ${err.message}${line}\n`)
      process.exit(1)
    }
    process.stderr.write(`cairn-kv: ${err?.message ?? err}\n`)
    process.exit(1)
  },
)
