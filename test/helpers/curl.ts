// Runs curl commands as a person would paste them (the README's, the dashboard's examples),
// with fetch: -X, -H, -d and the URL (a bare host:port gets http://), one command a line
// after `\` continuations are joined; anything after a ` # ` is a comment. `> FILE` keeps the
// answer's body under that name and `--data-binary @FILE` sends it back, as a shell would.

/** What `> FILE` wrote, by name, for a later `--data-binary @FILE`. */
const files = new Map<string, string>()

/** Runs each curl command of a shown example as curl would; resolves with each status. */
export async function runCurlExamples(
  text: string,
): Promise<{ command: string; status: number; text: string }[]> {
  const out: { command: string; status: number; text: string }[] = []
  for (const command of text.replace(/\\\n/g, ' ').split(/\n(?:\s*\n)?/)) {
    const tokens = (command.match(/'[^']*'|"[^"]*"|\S+/g) ?? []).map((w) =>
      /^(['"]).*\1$/.test(w) ? w.slice(1, -1) : w,
    )
    if (tokens[0] !== 'curl') continue
    let method = 'GET'
    let url = ''
    let body: string | undefined
    const headers: Record<string, string> = {}
    let saveTo: string | undefined
    for (let i = 1; i < tokens.length; i++) {
      const w = tokens[i]!
      if (w === '-X') method = tokens[++i]!
      else if (w === '-H') {
        const h = tokens[++i]!
        headers[h.slice(0, h.indexOf(':')).trim()] = h.slice(h.indexOf(':') + 1).trim()
      } else if (w === '-d') {
        body = tokens[++i]
        if (method === 'GET') method = 'POST'
      } else if (w === '--data-binary') {
        const d = tokens[++i]!
        body = d.startsWith('@') ? files.get(d.slice(1)) : d
        if (method === 'GET') method = 'POST'
      } else if (w === '>') saveTo = tokens[++i]
      else if (w === '#') break
      else if (/^https?:\/\//.test(w)) url = w
      else if (/^[\w.-]+:\d+\//.test(w)) url = `http://${w}`
    }
    // As curl does: -d without a Content-Type of its own sends a form's.
    const given = Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')
    if (body !== undefined && !given) headers['Content-Type'] = 'application/x-www-form-urlencoded'
    const res = await fetch(url, { method, headers, body })
    const answer = await res.text()
    if (saveTo !== undefined) files.set(saveTo, answer)
    out.push({ command: `${method} ${url}`, status: res.status, text: answer })
  }
  return out
}
