// Debian's Chromium driven by playwright-core, as every browser test launches it. Tests
// skip with `skip`'s message when it is not installed (.ci/run installs it).
import fs from 'node:fs'
import { type Browser, chromium } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'
export const skip = fs.existsSync(CHROMIUM)
  ? false
  : `needs Chromium at ${CHROMIUM} (apt-get install chromium); .ci/run installs it`

interface Tap {
  teardown(fn: () => unknown): void
}

/** A headless Chromium that closes when the test ends. */
export async function launchChromium(t: Tap): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    // Without the networking flags Chromium keeps calling home, which this machine refuses.
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  })
  t.teardown(() => browser.close())
  return browser
}
