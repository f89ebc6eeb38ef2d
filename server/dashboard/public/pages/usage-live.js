// The overview's live part: requests by UTC hour over the last 48 hours and by namespace
// today, each a chart with a table beside it, refreshed while the page is open.
//
// Refreshed by a short poll of the overview every REFRESH_MS, not a watch. Counts reach
// storage once per usage pass (every 2 s by default), so a watch could not make them fresher
// than that; it would hold a connection (and one of the plan's watches) per open tab, and
// would need a change feed of its own for counters, which are not namespace data. A poll
// every 5 s keeps the figures at most 5 s plus one pass old (under the 10 s promised), costs
// one small dashboard call per 5 s per open tab (dashboard calls are not /v1 requests, so it
// never shows in the figures it draws), works through any proxy, and stops by itself when
// the tab is closed. It pauses while the tab is hidden and catches up when it is shown.
import { showAlerts } from '../banner.js'
import { chart, hourLabel } from '../charts.js'
import { api, fmtBytes, fmtNum, h } from '../lib.js'

export const REFRESH_MS = 5000

function hourRows(hours) {
  return [...hours]
    .reverse()
    .map((x) =>
      h(
        'tr',
        { 'data-hour': x.hour },
        h(
          'th',
          { scope: 'row' },
          h('time', { datetime: x.hour }, `${x.hour.slice(0, 10)} ${hourLabel(x.hour)}`),
        ),
        h('td', { class: 'num', 'data-field': 'requests' }, fmtNum(x.requests)),
        h('td', { class: 'num', 'data-field': 'errors' }, fmtNum(x.errors)),
        h('td', { class: 'num', 'data-field': 'rateLimited' }, fmtNum(x.rateLimited)),
      ),
    )
}

function namespaceRows(namespaces) {
  return namespaces.map((n) =>
    h(
      'tr',
      { 'data-namespace': n.name },
      h(
        'th',
        { scope: 'row' },
        h('a', { href: `/namespaces/${encodeURIComponent(n.name)}` }, n.name),
      ),
      h('td', { class: 'num', 'data-field': 'requests' }, fmtNum(n.today.requests)),
      h('td', { class: 'num' }, fmtNum(n.keys)),
      h('td', { class: 'num' }, fmtBytes(n.bytes)),
    ),
  )
}

function namespaceBars(namespaces) {
  const top = Math.max(1, ...namespaces.map((n) => n.today.requests))
  const rows = [...namespaces].sort((a, b) => b.today.requests - a.today.requests).slice(0, 12)
  if (rows.every((n) => n.today.requests === 0))
    return h('p', { class: 'muted small' }, 'No requests to a namespace yet today.')
  return h(
    'ul',
    { class: 'ns-bars', 'aria-hidden': 'true' },
    rows.map((n) => {
      const fill = h('span', { class: 'meter-fill' })
      // Through the CSSOM, which the Content-Security-Policy allows (inline styles it does not).
      fill.style.width = `${n.today.requests > 0 ? Math.max(1, (n.today.requests / top) * 100) : 0}%`
      return h(
        'li',
        {},
        h('span', { class: 'ns-bar-name' }, n.name),
        h('span', { class: 'meter' }, fill),
        h('span', { class: 'num' }, fmtNum(n.today.requests)),
      )
    }),
  )
}

function table(id, caption, columns, rows) {
  return h(
    'div',
    { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': caption },
    h(
      'table',
      { class: 'table compact', id },
      h('caption', {}, caption),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          columns.map(([label, num]) =>
            h('th', { scope: 'col', class: num ? 'num' : null }, label),
          ),
        ),
      ),
      h('tbody', {}, rows),
    ),
  )
}

async function drawHourChart(box, hours) {
  box.replaceChildren()
  await chart(box, {
    id: 'chart-hours',
    title: 'Requests by hour (UTC)',
    kind: 'stacked',
    hours: true,
    table: false,
    last: 'This hour',
    days: hours.map((x) => x.hour),
    series: [
      {
        label: 'requests',
        color: '#1f4b99',
        values: hours.map((x) => x.requests - x.errors),
      },
      { label: 'errors', color: '#a3123d', values: hours.map((x) => x.errors) },
      { label: '429s', color: '#b35900', values: hours.map((x) => x.rateLimited) },
    ],
    emptyNote: 'No API requests in the last 48 hours.',
  })
}

/** Draws the hours and namespaces into `main`, and keeps them fresh while the page is open. */
export async function renderLive(main, first) {
  const hourChart = h('div', { class: 'charts one' })
  const hourTable = table(
    'hours-table',
    'Requests by hour (UTC)',
    [
      ['Hour (UTC)', false],
      ['Requests', true],
      ['Errors', true],
      ['Rate limited (429)', true],
    ],
    hourRows(first.hours),
  )
  const bars = h(
    'div',
    { class: 'card ns-chart', id: 'chart-namespaces' },
    namespaceBars(first.namespaces),
  )
  const nsTable = table(
    'namespaces-table',
    'Requests by namespace',
    [
      ['Namespace', false],
      ['Requests today', true],
      ['Keys', true],
      ['Stored', true],
    ],
    namespaceRows(first.namespaces),
  )
  const updated = h('p', { class: 'muted small', id: 'live-updated', 'aria-live': 'off' })
  const stamp = () => {
    updated.textContent = `Updated ${new Date().toISOString().slice(11, 19)} UTC; refreshed every ${REFRESH_MS / 1000} s while this page is open.`
  }
  stamp()
  main.append(
    h('h2', { class: 'section-title', id: 'hours-h' }, 'Last 48 hours (UTC)'),
    updated,
    h(
      'div',
      { class: 'side-by-side' },
      hourChart,
      h('div', { class: 'card table-wrap' }, hourTable),
    ),
    h('h2', { class: 'section-title', id: 'namespaces-h' }, 'Requests by namespace today'),
    h('div', { class: 'side-by-side' }, bars, h('div', { class: 'card table-wrap' }, nsTable)),
  )
  await drawHourChart(hourChart, first.hours)

  let busy = false
  const refresh = async () => {
    if (busy || document.hidden || !main.isConnected) return
    busy = true
    try {
      const next = await api('GET', '/overview')
      hourTable.querySelector('tbody').replaceChildren(...hourRows(next.hours))
      nsTable.querySelector('tbody').replaceChildren(...namespaceRows(next.namespaces))
      bars.replaceChildren(namespaceBars(next.namespaces))
      await drawHourChart(hourChart, next.hours)
      await showAlerts(main)
      stamp()
    } catch {
      // A moment without figures (a restart, the network): the next tick tries again.
    } finally {
      busy = false
    }
  }
  const timer = setInterval(refresh, REFRESH_MS)
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) refresh()
  })
  window.addEventListener('pagehide', () => clearInterval(timer))
}
