// Usage charts drawn with uPlot, loaded only by the page that charts something. Counts are
// stacked bars per day, storage an area. An empty chart keeps its axes (0 to a small
// number) and says in words that there is no data yet. Each chart also has its figures as
// a table, for screen readers and for anyone who wants exact numbers.
import { fmtBytes, fmtNum, h } from './lib.js'

let loading
function loadUplot() {
  loading ??= new Promise((resolve, reject) => {
    document.head.append(h('link', { rel: 'stylesheet', href: '/assets/vendor/uPlot.min.css' }))
    const s = h('script', { src: '/assets/vendor/uPlot.iife.min.js' })
    s.onload = () => resolve(window.uPlot)
    s.onerror = () => reject(new Error('The chart library did not load.'))
    document.head.append(s)
  })
  return loading
}

const AXIS = { stroke: '#4d5b6b', grid: { stroke: '#e6eaf0' }, ticks: { stroke: '#e6eaf0' } }
const HALF_DAY = 43200
const HALF_HOUR = 1800
/** `2026-12-01T10:00:00Z` as `10:00`, the hour in UTC. */
export const hourLabel = (iso) => `${iso.slice(11, 13)}:00`
const shortDate = (iso) =>
  new Date(`${iso}T00:00:00Z`).toLocaleDateString('en', {
    month: 'short',
    day: 'numeric',
    timeZone: 'UTC',
  })

function dataTable(title, days, series, fmt) {
  return h(
    'details',
    { class: 'chart-data' },
    h('summary', {}, 'Show the figures'),
    h(
      'div',
      { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': `${title}: figures` },
      h(
        'table',
        { class: 'table compact' },
        h('caption', { class: 'visually-hidden' }, `${title}, by UTC day`),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Day'),
            series.map((s) => h('th', { scope: 'col', class: 'num' }, s.label)),
          ),
        ),
        h(
          'tbody',
          {},
          [...days.keys()].reverse().map((i) =>
            h(
              'tr',
              { 'data-date': days[i] },
              h('th', { scope: 'row' }, shortDate(days[i])),
              series.map((s) => h('td', { class: 'num' }, fmt(s.values[i] ?? 0))),
            ),
          ),
        ),
      ),
    ),
  )
}

/**
 * A chart card. `days` are ISO dates, oldest first; `series` [{label, values, color}].
 * kind 'stacked': bars stacked per day; 'area': one filled line. With `hours`, `days` are
 * the hours' ISO times instead (labelled in UTC). `table: false` leaves out the figures
 * (the page shows them in a table of its own); `last` names the last figure in the caption.
 */
export async function chart(
  container,
  {
    id,
    title,
    days,
    series,
    kind,
    bytes = false,
    emptyNote,
    hours = false,
    table = true,
    last = 'Today',
  },
) {
  const fmt = bytes ? fmtBytes : fmtNum
  const total = series.reduce((n, s) => n + s.values.reduce((a, v) => a + (v ?? 0), 0), 0)
  const plotBox = h('div', { class: 'plot', 'aria-hidden': 'true' })
  const today = series.map((s) => `${s.label} ${fmt(s.values.at(-1) ?? 0)}`).join(', ')
  const figure = h(
    'figure',
    { class: 'card chart', id, 'aria-labelledby': `${id}-title` },
    h(
      'figcaption',
      {},
      h('h3', { id: `${id}-title` }, title),
      h('p', { class: 'muted small' }, total === 0 ? emptyNote : `${last}: ${today}`),
    ),
    plotBox,
    table ? dataTable(title, days, series, fmt) : null,
  )
  container.append(figure)
  const uPlot = await loadUplot()
  const xs = days.map((d) => Date.parse(hours ? d : `${d}T00:00:00Z`) / 1000)
  const half = hours ? HALF_HOUR : HALF_DAY
  // Stacking: the first series is on top. Each is drawn at the sum of itself and those
  // below it, top one first, so every lower band is painted over its part of the bar; the
  // legend shows each series' own figure.
  const drawn =
    kind === 'stacked'
      ? series.map((_, i) =>
          xs.map((_, d) => series.slice(i).reduce((n, s) => n + (s.values[d] ?? 0), 0)),
        )
      : series.map((s) => s.values)
  const top = Math.max(0, ...drawn.flat().map((v) => v ?? 0))
  const floor = bytes ? 1024 : 4
  const bars = uPlot.paths.bars({ size: [0.7, 28], align: 0 })
  const width = () => Math.max(240, plotBox.clientWidth)
  const plot = new uPlot(
    {
      width: width(),
      height: 200,
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false }, points: { show: kind !== 'stacked' } },
      scales: {
        x: { time: true, range: (_u, min, max) => [min - half, max + half] },
        y: { range: () => [0, Math.max(floor, top * 1.15)] },
      },
      axes: [
        hours
          ? {
              ...AXIS,
              space: 60,
              values: (_u, vals) => vals.map((v) => hourLabel(new Date(v * 1000).toISOString())),
            }
          : { ...AXIS, space: 60 },
        {
          ...AXIS,
          size: bytes ? 72 : 52,
          // Counts are whole: no 2.5 requests on the axis.
          incrs: bytes
            ? undefined
            : [
                1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5,
                1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8,
              ],
          values: (_u, vals) => vals.map((v) => fmt(v)),
        },
      ],
      series: [
        {
          value: (_u, v) => {
            if (!v) return ''
            const iso = new Date(v * 1000).toISOString()
            return hours
              ? `${shortDate(iso.slice(0, 10))} ${hourLabel(iso)} UTC`
              : shortDate(iso.slice(0, 10))
          },
        },
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          fill: kind === 'stacked' ? s.color : `${s.color}26`,
          width: kind === 'stacked' ? 0 : 2,
          paths: kind === 'stacked' ? bars : undefined,
          points: { show: false },
          value: (_u, _v, _si, idx) => (idx === null ? '' : fmt(s.values[idx] ?? 0)),
        })),
      ],
    },
    [xs, ...drawn],
    plotBox,
  )
  new ResizeObserver(() => plot.setSize({ width: width(), height: 200 })).observe(plotBox)
  return plot
}
