import { h } from '../lib.js'

export function render(main) {
  document.title = 'Not found · Cairn'
  main.append(
    h(
      'div',
      { class: 'card form-card' },
      h('h1', {}, 'Page not found'),
      h('p', {}, 'There is nothing at this address.'),
      h('p', {}, h('a', { class: 'btn btn-primary', href: '/' }, 'Go to the dashboard')),
    ),
  )
}
