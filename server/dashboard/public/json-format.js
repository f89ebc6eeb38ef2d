/** Where the JSON string starting at `i` (a quote) ends: the index of its closing quote. */
function stringEnd(text, i) {
  let j = i + 1
  while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1
  return j
}

// Indents JSON text without parsing it, so numbers keep every digit and members keep
// their order. The text must already be valid JSON.
export function formatJson(text, indent = '  ') {
  let out = ''
  let depth = 0
  const n = text.length
  const pad = () => `\n${indent.repeat(depth)}`
  for (let i = 0; i < n; i++) {
    const c = text[i]
    if (c === '"') {
      const j = stringEnd(text, i)
      out += text.slice(i, j + 1)
      i = j
    } else if (c === '{' || c === '[') {
      let j = i + 1
      while (j < n && /\s/.test(text[j])) j++
      if (text[j] === '}' || text[j] === ']') {
        out += c + text[j]
        i = j
      } else {
        depth++
        out += c + pad()
      }
    } else if (c === '}' || c === ']') {
      depth--
      out += pad() + c
    } else if (c === ',') {
      out += `,${pad()}`
    } else if (c === ':') {
      out += ': '
    } else if (!/\s/.test(c)) {
      out += c
    }
  }
  return out
}

/** Drops the whitespace between tokens without parsing, so the text stays exact. */
export function compactJson(text) {
  let out = ''
  const n = text.length
  for (let i = 0; i < n; i++) {
    const c = text[i]
    if (c === '"') {
      const j = stringEnd(text, i)
      out += text.slice(i, j + 1)
      i = j
    } else if (!/\s/.test(c)) out += c
  }
  return out
}
