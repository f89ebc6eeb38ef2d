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

/** fsyncDir, off the event loop: for compaction, which runs while requests are served. */
export async function fsyncDirAsync(dir: string): Promise<void> {
  const h = await fs.promises.open(dir, 'r')
  try {
    await h.sync()
  } finally {
    await h.close()
  }
}
