// The usage banner every signed-in page shows while an alert holds: which threshold, and
// what to do about it. Drawn at the top of the page, and again whenever a page refreshes
// its figures (the overview does, every few seconds).
import { api, fmtBytes, fmtNum, h } from './lib.js'

const cents = (n) => `$${(n / 100).toFixed(2)}`

function message(a) {
  const plan = h('a', { href: '/plan' }, 'move to a larger plan')
  if (a.metric === 'requests') {
    return a.percent >= 100
      ? [
          `Daily request quota reached: ${fmtNum(a.value)} of ${fmtNum(a.limit)} requests today. `,
          'Requests are refused (429 quota_exceeded) until midnight UTC. To go on now, ',
          plan,
          '.',
        ]
      : [
          `80% of today's request quota used: ${fmtNum(a.value)} of ${fmtNum(a.limit)}. `,
          'At 100%, requests are refused until midnight UTC. Slow down, or ',
          plan,
          '.',
        ]
  }
  if (a.metric === 'storage') {
    return a.percent >= 100
      ? [
          `Storage quota reached: ${fmtBytes(a.value)} of ${fmtBytes(a.limit)}. `,
          'Writes that add data are refused (403 storage_quota_exceeded); reads and deletes still work. Delete keys you no longer need, or ',
          plan,
          '.',
        ]
      : [
          `80% of your storage quota used: ${fmtBytes(a.value)} of ${fmtBytes(a.limit)}. `,
          'Delete keys you no longer need, or ',
          plan,
          ', before writes are refused.',
        ]
  }
  return a.percent >= 100
    ? [
        `Monthly spending cap reached: ${cents(a.value)} of ${cents(a.limit)}. `,
        'Requests past the included quota are refused (429 spending_cap_reached). Raise the cap on the ',
        h('a', { href: '/plan' }, 'plan page'),
        '.',
      ]
    : [
        `80% of your monthly spending cap used: ${cents(a.value)} of ${cents(a.limit)}. `,
        'Raise the cap on the ',
        h('a', { href: '/plan' }, 'plan page'),
        ' if you need more.',
      ]
}

/** Draws (or clears) the banner at the top of `main`. */
export async function showAlerts(main) {
  let box = document.getElementById('usage-alerts')
  if (!box) {
    box = h('div', { id: 'usage-alerts' })
    main.prepend(box)
  }
  let alerts
  try {
    alerts = (await api('GET', '/alerts')).alerts
  } catch {
    return // the page says what failed where it matters; the banner waits for the next draw
  }
  const shown = JSON.stringify(alerts)
  if (box.dataset.shown === shown) return
  box.dataset.shown = shown
  box.replaceChildren(
    ...alerts.map((a) =>
      h(
        'div',
        {
          class: `alert ${a.percent >= 100 ? 'alert-error' : 'alert-warn'} usage-banner`,
          role: 'alert',
          'data-metric': a.metric,
          'data-percent': String(a.percent),
        },
        message(a),
      ),
    ),
  )
}
