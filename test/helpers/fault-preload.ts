// Loaded into a test server's process with --import: lets a test make the engine's file-I/O
// module fail from outside, by writing the faults to arm into a control file, e.g.
// [{"op":"fsync","code":"EIO"}] ([] lets every call through again); `nth` fails from the
// Nth matching call after arming on. `{"op":"read","hold":true,"path":"..."}` instead holds
// matching reads until it is no longer armed (a slow disk, for as long as a test needs).
// Only the I/O calls are made to fail or wait; the server and its engine run as they are.
import fs from 'node:fs'
import { type IoOp, clearFaults, injectFault, io } from '../../engine/io.js'

const control = process.env.CAIRN_FAULT_CONTROL
/** Paths whose reads are held. */
let holds: RegExp[] = []
if (control) {
  let last = ''
  const poll = () => {
    let text = '[]'
    try {
      text = fs.readFileSync(control, 'utf8')
    } catch {}
    if (text === last) return
    let faults: { op: IoOp; code: string; path?: string; nth?: number; hold?: boolean }[]
    try {
      faults = JSON.parse(text)
    } catch {
      return // caught half-written: read it again on the next poll
    }
    last = text
    clearFaults()
    holds = faults.filter((f) => f.hold).map((f) => new RegExp(f.path ?? ''))
    for (const f of faults.filter((f) => !f.hold))
      injectFault({
        op: f.op,
        code: f.code,
        times: Number.POSITIVE_INFINITY,
        ...(f.path ? { path: new RegExp(f.path) } : {}),
        ...(f.nth ? { nth: f.nth } : {}),
      })
  }
  poll()
  setInterval(poll, 25).unref()

  // Which file each descriptor is, for holds by path.
  const paths = new Map<number, string>()
  const openSync = io.openSync
  io.openSync = (file: string, flags: string) => {
    const fd = openSync.call(io, file, flags)
    paths.set(fd, file)
    return fd
  }
  const read = io.read
  io.read = async (...args: Parameters<typeof read>) => {
    const file = paths.get(args[0]) ?? ''
    while (holds.some((re) => re.test(file))) await new Promise((r) => setTimeout(r, 10))
    return read.apply(io, args)
  }
}
