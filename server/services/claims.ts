// Names whose making is under way in this process (an account's email at sign-up, a
// namespace being created): a second request for the same name while the first is under
// way is refused at once, so only one of them ever reaches the store's create, and a
// leftover check never takes a name that is being made.
export class Claims {
  private held = new Set<string>()

  /** Runs `make` holding `name`; throws `taken()` while another holds it. */
  async hold<T>(name: string, taken: () => Error, make: () => Promise<T>): Promise<T> {
    if (this.held.has(name)) throw taken()
    this.held.add(name)
    try {
      return await make()
    } finally {
      this.held.delete(name)
    }
  }
}
