import { announce, api, errorBox, fmtBytes, fmtNum, h, openDialog } from '../lib.js'

const price = (p) => (p.priceUsdPerMonth ? `$${p.priceUsdPerMonth}` : '$0')

export async function render(main, { me }) {
  const info = await api('GET', '/plans')
  const email = me.account.email
  const cards = info.plans.map((p) => {
    const isCurrent = p.id === info.current
    let action
    if (isCurrent) {
      action = h('p', { class: 'current-note' }, 'Your current plan')
    } else if (p.switchable) {
      action = h(
        'button',
        {
          type: 'button',
          class: 'btn btn-primary btn-block',
          'data-plan': p.id,
          onclick: () => choose(p),
        },
        `Switch to ${p.name}`,
      )
    } else if (info.upgradeUrl) {
      const url = new URL(info.upgradeUrl, location.origin)
      url.searchParams.set('plan', p.id)
      url.searchParams.set('email', email)
      action = h(
        'a',
        { class: 'btn btn-primary btn-block', href: url.toString() },
        `Upgrade to ${p.name}`,
      )
    } else {
      action = h(
        'p',
        { class: 'muted small' },
        'Ask the operator to move you to this plan (see below).',
      )
    }
    return h(
      'section',
      {
        class: `card plan${isCurrent ? ' plan-current' : ''}`,
        'aria-labelledby': `plan-${p.id}`,
        'aria-current': isCurrent ? 'true' : null,
      },
      h(
        'h2',
        { id: `plan-${p.id}` },
        p.name,
        isCurrent ? h('span', { class: 'badge badge-current' }, 'Current') : null,
      ),
      h('p', { class: 'price' }, price(p), h('span', { class: 'muted' }, ' / month')),
      h(
        'dl',
        { class: 'limits' },
        [
          ['Requests a day', fmtNum(p.requestsPerDay)],
          [
            'Rate',
            p.ratePerSecond === null
              ? 'Unlimited'
              : `${fmtNum(p.ratePerSecond)}/s (burst ${fmtNum(p.burst)})`,
          ],
          ['Namespaces', fmtNum(p.maxNamespaces)],
          ['Storage', fmtBytes(p.maxStorageBytes)],
          ['Largest value', fmtBytes(p.maxValueBytes)],
        ].map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))),
      ),
      action,
    )
  })

  const choose = (p) => {
    const errors = errorBox()
    const go = h('button', { type: 'button', class: 'btn btn-primary' }, `Switch to ${p.name}`)
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel')
    const dlg = openDialog(
      `Switch to ${p.name}?`,
      h(
        'div',
        {},
        h(
          'p',
          {},
          "The new plan's limits apply at once. Data over a smaller plan's storage stays, but new writes are refused until you are under it.",
        ),
        errors.box,
      ),
      [cancel, go],
    )
    cancel.addEventListener('click', () => dlg.close())
    go.addEventListener('click', async () => {
      go.disabled = true
      try {
        await api('POST', '/plan', { plan: p.id })
        announce(`Switched to ${p.name}`)
        location.reload()
      } catch (err) {
        errors.show(err.message)
        go.disabled = false
      }
    })
  }

  const howTo = info.upgradeUrl
    ? h(
        'p',
        { class: 'muted' },
        'Paid plans are handled on the operator’s upgrade page; your email is passed along.',
      )
    : h(
        'div',
        { class: 'card note', id: 'upgrade-help' },
        h('h2', {}, 'How to upgrade'),
        h(
          'p',
          {},
          'Paid plans are switched on by the operator of this Cairn service. Write to them with your account email (',
          h('strong', {}, email),
          ') and the plan you want. They can move you with:',
        ),
        h('pre', { tabindex: '0' }, h('code', {}, `cairn plan set --email ${email} <plan>`)),
      )

  main.append(
    h(
      'div',
      { class: 'page-head' },
      h('h1', {}, 'Plan'),
      h('p', { class: 'muted' }, 'Limits apply per account, across all its keys.'),
    ),
    h('div', { class: 'plans' }, cards),
    howTo,
  )
}
