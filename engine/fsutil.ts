import fs from 'node:fs'

/** Makes a directory's entries (new, renamed or removed files) durable. */
export function fsyncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r')
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}
