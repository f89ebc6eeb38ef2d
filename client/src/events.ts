// A minimal event emitter: the client runs where `node:events` does not exist (browsers,
// Workers), and a Keyv store only needs `on`/`off`/`once`/`emit`. Unlike Node's emitter, an
// 'error' with no listener is dropped rather than thrown: the store reports the failure
// through its return value (or throws, when asked to) either way.

type Listener = (...args: any[]) => void

export class Events {
  readonly #listeners = new Map<string, Listener[]>()

  /** Adds `listener` for `event`. */
  on(event: string, listener: Listener): this {
    const list = this.#listeners.get(event)
    if (list) list.push(listener)
    else this.#listeners.set(event, [listener])
    return this
  }

  /** Adds `listener` for the next `event` only. */
  once(event: string, listener: Listener): this {
    const wrapped: Listener = (...args) => {
      this.off(event, wrapped)
      listener(...args)
    }
    return this.on(event, wrapped)
  }

  /** Removes `listener` (its first registration) from `event`. */
  off(event: string, listener: Listener): this {
    const list = this.#listeners.get(event)
    const at = list ? list.indexOf(listener) : -1
    if (at >= 0) list!.splice(at, 1)
    if (list?.length === 0) this.#listeners.delete(event)
    return this
  }

  /** Same as {@link Events.off}. */
  removeListener(event: string, listener: Listener): this {
    return this.off(event, listener)
  }

  /** How many listeners `event` has. */
  listenerCount(event: string): number {
    return this.#listeners.get(event)?.length ?? 0
  }

  /** Calls every listener of `event` in order; true when there was one. */
  emit(event: string, ...args: unknown[]): boolean {
    const list = this.#listeners.get(event)
    if (!list) return false
    for (const listener of list.slice()) listener(...args)
    return true
  }
}
