// Running wrk pinned to one core and reading its report.
import { spawn } from 'node:child_process'

export interface WrkResult {
  requests: number
  seconds: number
  rps: number
  /** Latency percentiles in milliseconds. */
  p50: number
  p99: number
  non2xx: number
  errors: number
}

function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim())
  if (!m) return Number.NaN
  const v = Number(m[1])
  return m[2] === 'us' ? v / 1000 : m[2] === 'ms' ? v : m[2] === 's' ? v * 1000 : v * 60_000
}

export function parseWrk(out: string): WrkResult {
  const num = (re: RegExp) => {
    const m = re.exec(out)
    return m ? Number(m[1]) : 0
  }
  const pct = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)
    return m ? ms(m[1]!) : Number.NaN
  }
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  return {
    requests: num(/(\d+) requests in/),
    seconds: num(/requests in ([\d.]+)s/),
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    p50: pct('50'),
    p99: pct('99'),
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/),
    errors: errors ? errors.slice(1).reduce((n, v) => n + Number(v), 0) : 0,
  }
}

export interface WrkOptions {
  url: string
  script?: string
  seconds: number
  connections: number
  core: number
}

export function runWrk(o: WrkOptions): Promise<WrkResult> {
  const args = [
    '-c',
    String(o.core),
    'wrk',
    '-t1',
    `-c${o.connections}`,
    `-d${o.seconds}s`,
    '--latency',
    '--timeout',
    '5s',
  ]
  if (o.script) args.push('-s', o.script)
  args.push(o.url)
  return new Promise((resolve, reject) => {
    const p = spawn('taskset', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    p.stdout.on('data', (d) => {
      out += d
    })
    p.stderr.on('data', (d) => {
      err += d
    })
    p.on('exit', (code) => {
      if (code !== 0) reject(new Error(`wrk exited ${code}: ${err}${out}`))
      else resolve(parseWrk(out))
    })
  })
}
