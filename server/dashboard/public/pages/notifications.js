// The Account page's "Notifications" section: the webhook usage alerts are sent to. Saving
// a URL makes a new signing secret, shown this once; "Send test" queues a webhook.test
// delivery; "Remove" stops notifications.
import { announce, api, errorBox, field, fmtDate, h } from '../lib.js'

export async function notificationsSection() {
  const url = field({
    label: 'Webhook URL',
    name: 'webhook-url',
    type: 'url',
    autocomplete: 'off',
    placeholder: 'https://example.com/hooks/cairn',
    hint: 'Usage alerts are POSTed here as JSON, signed with the Cairn-Signature header.',
  })
  const errors = errorBox()
  const status = h('div', { class: 'alert alert-ok', role: 'status', hidden: true })
  const current = h('p', { class: 'muted small', id: 'webhook-current' })
  const secretBox = h('div', { id: 'webhook-secret', hidden: true })
  const save = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Save')
  const test = h('button', { type: 'button', class: 'btn', id: 'webhook-test' }, 'Send test')
  const remove = h(
    'button',
    { type: 'button', class: 'btn btn-danger', id: 'webhook-remove' },
    'Remove',
  )

  const show = (hook) => {
    current.textContent = hook
      ? `Alerts go to ${hook.url} (set ${fmtDate(hook.createdAt)}).`
      : 'No webhook set: alerts show only here, in the dashboard.'
    if (hook) url.input.value = hook.url
    test.disabled = !hook
    remove.disabled = !hook
  }
  const say = (text) => {
    status.textContent = text
    status.hidden = false
    announce(text)
  }
  const run = (btn, fn) => async (e) => {
    e?.preventDefault()
    errors.show('')
    status.hidden = true
    btn.disabled = true
    try {
      await fn()
    } catch (err) {
      errors.show(err.message)
    } finally {
      btn.disabled = false
    }
  }

  const form = h(
    'form',
    { class: 'card', id: 'notifications', 'aria-labelledby': 'notifications-h', novalidate: true },
    h('h2', { id: 'notifications-h' }, 'Notifications'),
    h(
      'p',
      {},
      'Cairn warns at 80% and 100% of your daily request quota and of your storage quota. Set a webhook to hear about it where you work.',
    ),
    errors.box,
    status,
    current,
    url.wrap,
    secretBox,
    h('div', { class: 'actions' }, save, test, remove),
  )
  form.addEventListener(
    'submit',
    run(save, async () => {
      const { webhook } = await api('PUT', '/notifications', { url: url.input.value.trim() })
      secretBox.replaceChildren(
        h('p', {}, h('strong', {}, 'Signing secret (shown once; copy it now): ')),
        h('code', { id: 'webhook-secret-value' }, webhook.secret),
      )
      secretBox.hidden = false
      show({ url: webhook.url, createdAt: new Date().toISOString() })
      say('Webhook saved.')
    }),
  )
  test.addEventListener(
    'click',
    run(test, async () => {
      await api('POST', '/notifications/test')
      say('A test notification is on its way.')
    }),
  )
  remove.addEventListener(
    'click',
    run(remove, async () => {
      await api('DELETE', '/notifications')
      url.input.value = ''
      secretBox.hidden = true
      show(null)
      say('Webhook removed.')
    }),
  )
  show((await api('GET', '/notifications')).webhook)
  return form
}
