// The namespace page's Export, Import and "Restore to a point in time". Export is a download
// of the server's NDJSON (the browser saves it as it streams). Import uploads a file with
// XMLHttpRequest, whose upload events drive the progress bar, then says what it did; a bad
// line is named and nothing is applied. The restore's Preview counts the keys a restore
// would write, writing none; Restore is offered once a preview of the same time and prefix
// has been seen.
import { announce, csrfToken, errorBox, field, h, openDialog } from '../lib.js'

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`

/** The datetime-local value of a moment, in UTC, to the second. */
const utcInput = (ms) => new Date(ms).toISOString().slice(0, 19)

/** POSTs to the dashboard API with XMLHttpRequest; `onProgress(loaded, total)` as it uploads. */
function upload(path, file, onProgress) {
  const xhr = new XMLHttpRequest()
  const done = new Promise((resolve, reject) => {
    xhr.open('POST', `/dashboard/api${path}`)
    xhr.setRequestHeader('Content-Type', 'application/x-ndjson')
    xhr.setRequestHeader('X-CSRF-Token', csrfToken())
    xhr.setRequestHeader('Accept', 'application/json')
    xhr.upload.addEventListener('progress', (e) => {
      if (e.lengthComputable) onProgress(e.loaded, e.total)
    })
    xhr.addEventListener('load', () => {
      let data = {}
      try {
        data = JSON.parse(xhr.responseText)
      } catch {}
      if (xhr.status >= 200 && xhr.status < 300) resolve(data)
      else {
        const err = new Error(data.error?.message ?? `Request failed (${xhr.status}).`)
        err.status = xhr.status
        err.line = data.error?.line
        reject(err)
      }
    })
    xhr.addEventListener('error', () =>
      reject(new Error('Cannot reach the server. Check your connection and try again.')),
    )
    xhr.addEventListener('abort', () => reject(new Error('The upload was stopped.')))
    xhr.send(file)
  })
  return { done, abort: () => xhr.abort() }
}

async function post(path, body) {
  const res = await fetch(`/dashboard/api${path}`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: {
      Accept: 'application/json',
      'Content-Type': 'application/json',
      'X-CSRF-Token': csrfToken(),
    },
    body: JSON.stringify(body),
  })
  const data = await res.json().catch(() => ({}))
  if (!res.ok) throw new Error(data.error?.message ?? `Request failed (${res.status}).`)
  return data
}

function exportButton(base, nsName) {
  return h(
    'button',
    {
      type: 'button',
      class: 'btn',
      id: 'export',
      onclick: () => {
        // A link the browser follows as a download: the file streams to disk, never whole
        // in the page's memory.
        const a = h('a', { href: `/dashboard/api${base}/export`, download: `${nsName}.ndjson` })
        document.body.append(a)
        a.click()
        a.remove()
        announce(`Exporting ${nsName}`)
      },
    },
    'Export',
  )
}

function importDialog(base, nsName, list) {
  const file = field({
    label: 'Import file',
    name: 'import-file',
    type: 'file',
    accept: '.ndjson,.jsonl,.json,application/x-ndjson',
    hint: 'NDJSON as Export writes it: one {"key", "value"} object a line.',
  })
  const mode = (value, label, hint, checked) =>
    h(
      'label',
      { class: 'check' },
      h('input', { type: 'radio', name: 'import-mode', value, checked }),
      label,
      h('span', { class: 'muted small' }, hint),
    )
  const modes = h(
    'fieldset',
    { class: 'field' },
    h('legend', {}, 'Mode'),
    mode('merge', 'Merge', 'puts every entry of the file, leaves other keys alone', true),
    mode('replace', 'Replace', 'the namespace then holds exactly the file’s entries'),
  )
  const progress = h('progress', {
    id: 'import-progress',
    'aria-label': 'Import progress',
    max: '1',
    value: '0',
    hidden: true,
  })
  const result = h('div', { class: 'alert alert-ok', role: 'status', hidden: true })
  const errors = errorBox()
  const go = h('button', { type: 'button', class: 'btn btn-primary' }, 'Import')
  const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel')
  const dlg = openDialog(
    `Import into ${nsName}`,
    h('div', {}, file.wrap, modes, progress, result, errors.box),
    [cancel, go],
  )
  dlg.id = 'import-dialog'
  let sending
  dlg.addEventListener('close', () => sending?.abort())
  cancel.addEventListener('click', () => dlg.close())
  go.addEventListener('click', async () => {
    errors.show('')
    result.hidden = true
    const chosen = file.input.files?.[0]
    file.setError(chosen ? '' : 'Choose a file to import.')
    if (!chosen) return file.input.focus()
    const how = modes.querySelector('input:checked').value
    go.disabled = true
    progress.hidden = false
    progress.max = chosen.size || 1
    progress.value = 0
    sending = upload(`${base}/import?mode=${how}`, chosen, (loaded, total) => {
      progress.max = total
      progress.value = loaded
    })
    try {
      const r = await sending.done
      progress.value = progress.max
      result.textContent =
        how === 'replace'
          ? `${r.imported} imported, ${r.deleted} deleted`
          : `${r.imported} imported`
      result.hidden = false
      cancel.textContent = 'Close'
      announce(result.textContent)
      await list.reload()
    } catch (err) {
      progress.hidden = true
      errors.show(
        err.line === undefined
          ? err.message
          : `Line ${err.line}: ${err.message} Nothing was imported.`,
      )
    } finally {
      sending = undefined
      go.disabled = false
    }
  })
}

function restoreDialog(base, nsName, list) {
  const when = field({
    label: 'Restore to',
    name: 'restore-at',
    type: 'datetime-local',
    step: '1',
    value: utcInput(Date.now()),
    hint: 'A time in UTC, to the second: every key is put back as it was then.',
  })
  const prefix = field({
    label: 'Prefix',
    name: 'restore-prefix',
    autocomplete: 'off',
    spellcheck: 'false',
    value: list.prefix(),
    hint: 'Only keys beginning with it; empty for the whole namespace.',
  })
  const preview = h('button', { type: 'button', class: 'btn' }, 'Preview')
  const go = h('button', { type: 'button', class: 'btn btn-primary', disabled: true }, 'Restore')
  const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel')
  const said = h('div', { class: 'alert alert-ok', role: 'status', hidden: true })
  const errors = errorBox()
  const dlg = openDialog(
    `Restore ${nsName} to a point in time`,
    h('div', {}, when.wrap, prefix.wrap, said, errors.box),
    [cancel, preview, go],
  )
  dlg.id = 'restore-dialog'
  /** The time and prefix the preview was made for: Restore restores exactly those. */
  let previewed = null
  const point = () => {
    const v = when.input.value
    if (!v) return null
    // datetime-local leaves the seconds out when they are 0.
    return `${v.length === 16 ? `${v}:00` : v}Z`
  }
  const reset = () => {
    previewed = null
    go.disabled = true
  }
  when.input.addEventListener('input', reset)
  prefix.input.addEventListener('input', reset)
  cancel.addEventListener('click', () => dlg.close())
  const show = (text) => {
    said.textContent = text
    said.hidden = false
    announce(text)
  }
  preview.addEventListener('click', async () => {
    errors.show('')
    said.hidden = true
    const at = point()
    when.setError(at ? '' : 'Choose the time to restore to.')
    if (!at) return when.input.focus()
    preview.disabled = true
    try {
      const r = await post(`${base}/restore`, { at, prefix: prefix.input.value, preview: true })
      show(
        r.changes === 0
          ? 'No keys will change: they are already as they were then.'
          : `${plural(r.changes, 'key', 'keys')} will change`,
      )
      previewed = r.changes === 0 ? null : { at, prefix: prefix.input.value }
      go.disabled = previewed === null
    } catch (err) {
      errors.show(err.message)
    } finally {
      preview.disabled = false
    }
  })
  go.addEventListener('click', async () => {
    if (!previewed) return
    errors.show('')
    go.disabled = true
    try {
      const r = await post(`${base}/restore`, previewed)
      show(`${plural(r.restored, 'key', 'keys')} restored`)
      previewed = null
      cancel.textContent = 'Close'
      await list.reload()
    } catch (err) {
      errors.show(err.message)
      go.disabled = false
    }
  })
}

/** The namespace page's Export, Import… and Restore to a point in time… buttons. */
export function transferButtons(base, nsName, list) {
  return [
    exportButton(base, nsName),
    h(
      'button',
      {
        type: 'button',
        class: 'btn',
        id: 'import',
        onclick: () => importDialog(base, nsName, list),
      },
      'Import',
    ),
    h(
      'button',
      {
        type: 'button',
        class: 'btn',
        id: 'restore-point',
        onclick: () => restoreDialog(base, nsName, list),
      },
      'Restore to a point in time',
    ),
  ]
}
