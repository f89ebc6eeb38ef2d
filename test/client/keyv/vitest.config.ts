// Runs only keyv.spec.ts: @keyv/test-suite is written for vitest. test/client/keyv-suite.test.ts
// starts the server and runs this; tap's own include (test/**/*.test.ts) never sees the spec.
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const here = path.dirname(fileURLToPath(import.meta.url))

export default defineConfig({
  root: here,
  // Vite's cache would otherwise land in a node_modules folder beside this file.
  cacheDir: path.join(os.tmpdir(), 'cairn-keyv-suite-vite'),
  test: {
    include: ['keyv.spec.ts'],
    // The suite shares one Cairn namespace and clears it before each test: one file, in order.
    fileParallelism: false,
    sequence: { concurrent: false },
    // The machine running the tests may be loaded; a request can take longer than vitest's 5 s.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})
