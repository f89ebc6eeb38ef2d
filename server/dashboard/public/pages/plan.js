import { announce, api, errorBox, fmtBytes, fmtDate, fmtNum, h, openDialog } from '../lib.js'

const price = (p) => (p.priceUsdPerMonth ? `$${p.priceUsdPerMonth}` : '$0')

export async function render(main, { me }) {
  const info = await api('GET', '/plans')
  const email = me.account.email
  // Stripe on (info.billing not null): paid plans are bought through Checkout, and a paying
  // account changes or cancels its plan in Stripe's portal.
  const billing = info.billing
  const errors = errorBox()
  const cards = info.plans.map((p) => {
    const isCurrent = p.id === info.current
    let action
    if (isCurrent) {
      action = h('p', { class: 'current-note' }, 'Your current plan')
    } else if (billing?.live) {
      action = h('p', { class: 'muted small' }, 'Change plans in the billing portal (below).')
    } else if (p.checkout) {
      action = h(
        'button',
        {
          type: 'button',
          class: 'btn btn-primary btn-block',
          'data-plan': p.id,
          onclick: (e) => subscribe(p, e.currentTarget),
        },
        `Subscribe to ${p.name}`,
      )
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

  const subscribe = async (p, button) => {
    button.disabled = true
    errors.show('')
    try {
      const { url } = await api('POST', '/billing/checkout', { plan: p.id })
      location.assign(url)
    } catch (err) {
      errors.show(err.message)
      button.disabled = false
    }
  }

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

  const subscription = billing ? billingCard(billing, info) : null
  const metered = billing?.metered ? meteredCard(billing.metered, errors) : null
  const askOperator =
    !billing ||
    info.plans.some(
      (p) => p.id !== info.current && !p.switchable && !(p.checkout && !billing?.live),
    )
  const howTo = !askOperator
    ? null
    : info.upgradeUrl
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

  // Element.append would write a left-out part as the text "null".
  const parts = [
    h(
      'div',
      { class: 'page-head' },
      h('h1', {}, 'Plan'),
      h('p', { class: 'muted' }, 'Limits apply per account, across all its keys.'),
    ),
    errors.box,
    returned(),
    h('div', { class: 'plans' }, cards),
    subscription,
    metered,
    howTo,
  ]
  main.append(...parts.filter((p) => p !== null))
}

/** What Stripe's pages sent back in the address: a finished checkout, a portal not reached. */
function returned() {
  const q = new URLSearchParams(location.search)
  if (q.get('checkout') === 'done')
    return h(
      'p',
      { class: 'alert alert-ok', role: 'status' },
      'Thank you. Your plan changes as soon as Stripe confirms the payment, usually within seconds: reload this page to see it.',
    )
  if (q.get('billing') === 'unavailable')
    return h(
      'p',
      { class: 'alert alert-error', role: 'status' },
      'The billing portal could not be opened just now. Try again in a minute.',
    )
  return null
}

/** The account's subscription, and the way to Stripe's portal once there is one. */
function billingCard(billing, info) {
  if (!billing.subscribed) return null
  const name = (id) => info.plans.find((p) => p.id === id)?.name ?? id
  const lines = [
    h('p', {}, `Subscription: ${name(billing.plan)}, ${billing.status.replace(/_/g, ' ')}.`),
  ]
  if (billing.downgradeAt)
    lines.push(
      h(
        'p',
        { id: 'downgrade-note' },
        `Paid until ${fmtDate(billing.downgradeAt)}; then the account moves to the ${name(info.default)} plan.`,
      ),
    )
  else if (billing.live && billing.periodEnd)
    lines.push(h('p', { class: 'muted' }, `Renews ${fmtDate(billing.periodEnd)}.`))
  return h(
    'section',
    { class: 'card note', id: 'billing', 'aria-labelledby': 'billing-title' },
    h('h2', { id: 'billing-title' }, 'Billing'),
    ...lines,
    h(
      'p',
      {},
      h('a', { class: 'btn', href: '/billing/portal' }, 'Manage billing'),
      h(
        'span',
        { class: 'muted small' },
        ' Card, invoices, plan changes and cancelling, at Stripe.',
      ),
    ),
  )
}

const cents = (n) => `$${(n / 100).toFixed(2)}`

/** A metered plan: its monthly spending cap (set here) and the hours sent to Stripe. */
function meteredCard(m, errors) {
  const parts = [
    h(
      'p',
      {},
      `Requests past ${fmtNum(m.includedPerDay)} a day are served and billed`,
      m.centsPerThousand === null ? '.' : ` at ${cents(m.centsPerThousand)} per 1,000.`,
    ),
  ]
  if (m.centsPerThousand !== null) {
    const input = h('input', {
      id: 'spending-cap',
      name: 'cap',
      type: 'number',
      min: '0',
      step: '0.01',
      value: m.spendingCapCents === null ? '' : (m.spendingCapCents / 100).toFixed(2),
    })
    const form = h(
      'form',
      { id: 'spending-cap-form' },
      h('label', { for: 'spending-cap' }, 'Monthly spending cap (USD, empty for none)'),
      input,
      h('button', { class: 'btn', type: 'submit' }, 'Save cap'),
    )
    form.addEventListener('submit', async (e) => {
      e.preventDefault()
      const v = input.value.trim()
      try {
        await api('PUT', '/billing/spending-cap', {
          cents: v === '' ? null : Math.round(Number(v) * 100),
        })
        announce(v === '' ? 'Spending cap removed' : `Spending cap set to $${Number(v).toFixed(2)}`)
      } catch (err) {
        errors.show(err.message)
      }
    })
    parts.push(
      form,
      h(
        'p',
        { class: 'muted small' },
        'Past the cap, requests beyond the daily quota are refused (429 spending_cap_reached) until the month ends.',
      ),
    )
  }
  const rows = m.sent.map((s) =>
    h(
      'tr',
      {},
      h('td', {}, s.hour),
      h('td', {}, fmtNum(s.requests)),
      h('td', {}, fmtDate(s.sentAt)),
    ),
  )
  parts.push(
    h('h3', {}, 'Hours sent to Stripe'),
    rows.length === 0
      ? h('p', { class: 'muted', id: 'meter-none' }, 'None yet: an hour is sent after it ends.')
      : h(
          'table',
          { id: 'meter-hours' },
          h('caption', {}, 'Requests past the included quota, by UTC hour'),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', { scope: 'col' }, 'Hour'),
              h('th', { scope: 'col' }, 'Requests'),
              h('th', { scope: 'col' }, 'Sent'),
            ),
          ),
          h('tbody', {}, ...rows),
        ),
  )
  return h(
    'section',
    { class: 'card note', id: 'metered', 'aria-labelledby': 'metered-title' },
    h('h2', { id: 'metered-title' }, 'Metered usage'),
    ...parts,
  )
}
