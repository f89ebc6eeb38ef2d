// Reads an environment variable where the runtime has one, without ever failing or
// prompting: browsers and Workers have no `process`, and Deno asks for permission.

/** The variable's value, or undefined when it is unset, empty or unreadable here. */
export function envVar(name: string): string | undefined {
  const g = globalThis as {
    Deno?: {
      permissions?: { querySync?(d: { name: 'env'; variable: string }): { state: string } }
      env?: { get(name: string): string | undefined }
    }
    process?: { env?: Record<string, string | undefined> }
  }
  try {
    if (g.Deno) {
      // Reading without permission would prompt (or throw); only read when already granted.
      if (g.Deno.permissions?.querySync?.({ name: 'env', variable: name }).state !== 'granted') {
        return undefined
      }
      return nonEmpty(g.Deno.env?.get(name))
    }
    return nonEmpty(g.process?.env?.[name])
  } catch {
    return undefined
  }
}

function nonEmpty(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined
}
