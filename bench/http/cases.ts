// The embedded Cairn cases `--cases` can pick, by name. Some names hold a comma (the watcher
// cases), so a list is read by matching known names, longest first, at each comma; `;` also
// separates, for lists that should not depend on that.

/** Watchers on the namespace while PUTs are measured (the watch fan-out cases). */
export const WATCHERS = 100

export const ONE_WRITER = 'PUT existing, 1 writer'
export const ONE_WRITER_WATCHED = `PUT existing, 1 writer, ${WATCHERS} watchers`
export const WATCHED = `PUT existing, ${WATCHERS} watchers`

/** PUT existing on the bench's plan (history kept) beside a plan that keeps none. */
export const HISTORY_ON = 'PUT existing, history on'
export const HISTORY_OFF = 'PUT existing, history off'

/** Names that pick a group of cases: `watch` its three, `after restart` GET and LIST 100. */
const GROUPS: Record<string, string[]> = {
  watch: [ONE_WRITER, ONE_WRITER_WATCHED, WATCHED],
  'after restart': ['GET after restart', 'LIST 100 after restart'],
}

/** Every case, in the order a run measures them. */
export const CAIRN_CASES = [
  'GET',
  'UPSTASH GET',
  'PUT new',
  'PUT existing',
  'UPSTASH SET',
  HISTORY_ON,
  HISTORY_OFF,
  'TX 10 PUTs',
  'INCR hot key',
  ...GROUPS.watch!,
  'LIST 100',
  'GET 90 / PUT 10',
  'GET during compaction',
  ...GROUPS['after restart']!,
]

/**
 * The cases a `--cases` list names (a group's name stands for its cases); throws for a name
 * that is none of them, listing those there are.
 */
export function pickCases(list: string): Set<string> {
  const known = [...CAIRN_CASES, ...Object.keys(GROUPS)].sort((a, b) => b.length - a.length)
  const picked = new Set<string>()
  for (const part of list.split(';')) {
    let rest = part.trim()
    while (rest !== '') {
      const name = known.find((n) => rest === n || rest.startsWith(`${n},`))
      if (name === undefined)
        throw new Error(
          `--cases: no case is named "${rest.split(',')[0]}"; the cases: ${[...CAIRN_CASES, ...Object.keys(GROUPS)].map((n) => `"${n}"`).join('; ')}`,
        )
      for (const c of GROUPS[name] ?? [name]) picked.add(c)
      rest = rest.slice(name.length + 1).trim()
    }
  }
  return picked
}
