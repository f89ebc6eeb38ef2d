// Loaded into a test server's process with --import: lets a test make the engine's file-I/O
// module fail from outside, by writing the faults to arm into a control file, e.g.
// [{"op":"fsync","code":"EIO"}] ([] lets every call through again); `nth` fails from the
// Nth matching call after arming on. Only the I/O calls are
// made to fail; the server and its engine run as they are.
import fs from 'node:fs'
import { type IoOp, clearFaults, injectFault } from '../../engine/io.js'

const control = process.env.CAIRN_FAULT_CONTROL
if (control) {
  let last = ''
  const poll = () => {
    let text = '[]'
    try {
      text = fs.readFileSync(control, 'utf8')
    } catch {}
    if (text === last) return
    let faults: { op: IoOp; code: string; path?: string; nth?: number }[]
    try {
      faults = JSON.parse(text)
    } catch {
      return // caught half-written: read it again on the next poll
    }
    last = text
    clearFaults()
    for (const f of faults)
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
}
