// A promise's answer, or a stand-in when it fails or is slow: for asking storage nodes that
// may have stopped answering, without holding the caller for their own timeout.

/** What `asked` resolves with; `fallback` if it rejects or takes longer than `ms`. */
export async function within<T, F>(asked: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<F>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms)
  })
  try {
    return await Promise.race([asked.catch(() => fallback), late])
  } finally {
    clearTimeout(timer)
  }
}
