// A pass of background work run every so often, never two at once: a pass still running
// when the next is due is let be, and stop() waits for the one under way, so a shutdown
// does not cut a pass half-way.
export class Periodic {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<unknown> | undefined

  constructor(
    private readonly pass: () => Promise<unknown>,
    /** A pass that failed: logged by the owner, and the next one tries again. */
    private readonly failed: (err: unknown) => void,
  ) {}

  start(everyMs: number): void {
    this.timer = setInterval(() => {
      if (this.running !== undefined) return
      this.running = this.pass()
        .catch(this.failed)
        .finally(() => {
          this.running = undefined
        })
    }, everyMs)
    this.timer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    await this.running
  }
}
