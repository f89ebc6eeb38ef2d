import { chart } from '../charts.js'
import { api, fmtBytes, fmtNum, h } from '../lib.js'
import { renderLive } from './usage-live.js'

// Colours pass 3:1 against white (WCAG non-text contrast) and differ in lightness too.
const OPERATIONS = [
  ['get', 'reads', '#1f4b99'],
  ['put', 'writes', '#0f7b6c'],
  ['delete', 'deletes', '#a3123d'],
  ['list', 'lists', '#7a3db8'],
  ['namespace', 'namespace calls', '#b35900'],
  ['usage', 'usage calls', '#4d5b6b'],
  ['patch', 'patches', '#006b8f'],
  ['transaction', 'transaction ops', '#9c2f8f'],
  ['deletePrefix', 'prefix deletes', '#6b5a00'],
  ['watch', 'watches opened', '#2e6b1f'],
]

function meter(id, label, used, limit, fmt) {
  const pct = limit ? Math.min(100, (used / limit) * 100) : 0
  const fill = h('span', { class: 'meter-fill' })
  // Set through the CSSOM, which the page's Content-Security-Policy allows (inline styles it does not).
  fill.style.width = `${used > 0 ? Math.max(pct, 1) : 0}%`
  return h(
    'section',
    { class: 'card stat', 'aria-labelledby': `${id}-h` },
    h('h2', { id: `${id}-h`, class: 'stat-label' }, label),
    h(
      'p',
      { class: 'stat-value', id },
      h('span', { class: 'used', 'data-value': String(used) }, fmt(used)),
      h('span', { class: 'of' }, limit === null ? ' · no limit' : ` of ${fmt(limit)}`),
    ),
    limit === null
      ? null
      : h(
          'div',
          {
            class: `meter${pct >= 90 ? ' meter-high' : ''}`,
            role: 'progressbar',
            'aria-valuemin': '0',
            'aria-valuemax': '100',
            'aria-valuenow': pct.toFixed(1),
            'aria-label': `${label}: ${pct < 0.1 && used > 0 ? 'under 0.1' : pct.toFixed(1)}% used`,
          },
          fill,
        ),
  )
}

export async function render(main) {
  const overview = await api('GET', '/overview')
  const { plan, today, storage, days } = overview
  const dates = days.map((d) => d.date)
  main.append(
    h(
      'div',
      { class: 'page-head' },
      h('h1', {}, 'Overview'),
      h('p', { class: 'muted' }, `Figures for today, ${today.date} (UTC), and the last 30 days.`),
    ),
    h(
      'div',
      { class: 'stats' },
      h(
        'section',
        { class: 'card stat', 'aria-labelledby': 'plan-h' },
        h('h2', { id: 'plan-h', class: 'stat-label' }, 'Plan'),
        h('p', { class: 'stat-value', id: 'plan-name' }, plan.name),
        h('p', { class: 'small' }, h('a', { href: '/plan' }, 'Compare plans')),
      ),
      meter('requests-today', 'Requests today', today.requests, plan.requestsPerDay, fmtNum),
      meter('storage-used', 'Storage', storage.bytes, plan.maxStorageBytes, fmtBytes),
      meter('namespaces-used', 'Namespaces', storage.namespaces.length, plan.maxNamespaces, fmtNum),
    ),
  )
  if (storage.namespaces.length === 0 && today.requests === 0) {
    main.append(
      h(
        'section',
        { class: 'card note', 'aria-labelledby': 'start-h' },
        h('h2', { id: 'start-h' }, 'Getting started'),
        h(
          'ol',
          {},
          h('li', {}, h('a', { href: '/keys' }, 'Copy an API key'), ' (or make a new one).'),
          h('li', {}, h('a', { href: '/namespaces' }, 'Create a namespace'), ' to hold your keys.'),
          h('li', {}, 'Store and read values with curl or the cairn-client package.'),
        ),
      ),
    )
  }
  await renderLive(main, overview)
  const charts = h('div', { class: 'charts' })
  main.append(h('h2', { class: 'section-title' }, 'Last 30 days'), charts)
  await chart(charts, {
    id: 'chart-requests',
    title: 'Requests by operation',
    kind: 'stacked',
    days: dates,
    series: OPERATIONS.map(([op, label, color]) => ({
      label,
      color,
      values: days.map((d) => d.operations?.[op] ?? 0),
    })),
    emptyNote: 'No API requests yet. Calls made with your keys show up here.',
  })
  await chart(charts, {
    id: 'chart-errors',
    title: 'Errors and rate-limited requests',
    kind: 'stacked',
    days: dates,
    series: [
      { label: 'errors', values: days.map((d) => d.errors), color: '#a3123d' },
      { label: '429s', values: days.map((d) => d.rateLimited), color: '#b35900' },
    ],
    emptyNote: 'No errors and no 429s in the last 30 days.',
  })
  await chart(charts, {
    id: 'chart-storage',
    title: 'Storage',
    kind: 'area',
    bytes: true,
    days: dates,
    series: [
      { label: 'bytes stored', values: days.map((d) => d.storageBytes ?? 0), color: '#0f7b6c' },
    ],
    emptyNote: 'Nothing stored yet.',
  })
  const ns = storage.namespaces
  main.append(
    h('h2', { class: 'section-title' }, 'Today in detail'),
    h(
      'div',
      { class: 'card table-wrap' },
      h(
        'table',
        { class: 'table', id: 'today-table' },
        h('caption', { class: 'visually-hidden' }, "Today's figures"),
        h(
          'tbody',
          {},
          [
            ['Requests', fmtNum(today.requests)],
            [
              'Left today',
              today.quotaRemaining === null ? 'Unlimited' : fmtNum(today.quotaRemaining),
            ],
            ['Errors', fmtNum(today.errors)],
            ['Rate limited (429)', fmtNum(today.rateLimited)],
            ['Watch events delivered', fmtNum(today.watchEvents ?? 0)],
            ['Bytes in', fmtBytes(today.bytesIn)],
            ['Bytes out', fmtBytes(today.bytesOut)],
            [
              'Keys stored',
              `${fmtNum(storage.keys)} in ${ns.length} namespace${ns.length === 1 ? '' : 's'}`,
            ],
          ].map(([k, v]) =>
            h('tr', {}, h('th', { scope: 'row' }, k), h('td', { class: 'num' }, v)),
          ),
        ),
      ),
    ),
    h('h2', { class: 'section-title', id: 'ops-today-h' }, 'Operations, today and over 30 days'),
    h(
      'div',
      { class: 'card table-wrap' },
      h(
        'table',
        { class: 'table', id: 'ops-today', 'aria-labelledby': 'ops-today-h' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Operation'),
            h('th', { scope: 'col', class: 'num' }, 'Today'),
            h('th', { scope: 'col', class: 'num' }, 'Last 30 days'),
          ),
        ),
        h(
          'tbody',
          {},
          OPERATIONS.map(([op, label]) =>
            h(
              'tr',
              { 'data-op': op },
              h('th', { scope: 'row' }, label[0].toUpperCase() + label.slice(1)),
              h('td', { class: 'num' }, fmtNum(today.operations?.[op] ?? 0)),
              h(
                'td',
                { class: 'num' },
                fmtNum(days.reduce((n, d) => n + (d.operations?.[op] ?? 0), 0)),
              ),
            ),
          ),
        ),
      ),
    ),
  )
}
