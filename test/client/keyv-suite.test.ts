// Keyv's own shared test suite (@keyv/test-suite, written for vitest) against KeyvCairn on a
// real server: this starts the server, makes an account and a namespace, and runs vitest on
// test/client/keyv/keyv.spec.ts, reading its JSON report.
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { account, nsName, root, server } from './helpers.js'

// @keyv/test-suite 2.1.2: 38 tests in keyvTestSuite (22 api, 13 values, 3 namespaces) and 4 in
// keyvIteratorTests.
const SUITE_VERSION = '2.1.2'
const EXPECTED_TESTS = 42

interface VitestReport {
  success: boolean
  numTotalTests: number
  numPassedTests: number
  numFailedTests: number
  numPendingTests: number
  numTodoTests: number
  testResults: {
    assertionResults: { fullName: string; status: string; failureMessages: string[] }[]
  }[]
}

t.test('@keyv/test-suite passes against KeyvCairn on a real server', async (t) => {
  const suitePkg = JSON.parse(
    fs.readFileSync(path.join(root, 'node_modules/@keyv/test-suite/package.json'), 'utf8'),
  )
  t.equal(suitePkg.version, SUITE_VERSION, 'the suite version the expected count is for')

  const srv = await server(t)
  const { kv, apiKey } = await account(srv)
  const namespace = nsName('keyv-suite')
  await kv.createNamespace(namespace)

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'keyv-suite-'))
  t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }))
  const report = path.join(tmp, 'report.json')
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
    execFile(
      process.execPath,
      [
        path.join(root, 'node_modules/vitest/vitest.mjs'),
        'run',
        '--config',
        path.join(root, 'test/client/keyv/vitest.config.ts'),
        '--reporter=json',
        `--outputFile=${report}`,
      ],
      {
        cwd: root,
        env: {
          ...process.env,
          KEYV_CAIRN_URL: srv.url,
          KEYV_CAIRN_API_KEY: apiKey,
          KEYV_CAIRN_NAMESPACE: namespace,
          CI: '1',
        },
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) =>
        resolve({
          code: err ? ((err as { code?: number }).code ?? 1) : 0,
          output: `${stdout}\n${stderr}`,
        }),
    )
  })
  t.equal(code, 0, 'vitest exits 0', { output: code === 0 ? undefined : output.slice(-8000) })
  const res = JSON.parse(fs.readFileSync(report, 'utf8')) as VitestReport
  const failed = res.testResults
    .flatMap((f) => f.assertionResults)
    .filter((a) => a.status !== 'passed')
    .map((a) => `${a.fullName}: ${a.status} ${a.failureMessages.join(' ').slice(0, 500)}`)
  t.same(failed, [], 'no suite test failed or was skipped')
  t.equal(res.numTotalTests, EXPECTED_TESTS, 'every suite test ran')
  t.equal(res.numPassedTests, EXPECTED_TESTS, 'every suite test passed')
  t.equal(res.numFailedTests + res.numPendingTests + res.numTodoTests, 0)
  t.equal(res.success, true)

  const names = res.testResults.flatMap((f) => f.assertionResults.map((a) => a.fullName))
  t.ok(
    names.some((n) => n.includes("iterator() doesn't yield expired values, and deletes them")),
    'the iterator tests are among them',
  )
  // The suite wrote through the store: its writes are this namespace's versions.
  const page = await kv.list(namespace)
  t.ok(BigInt(page.version) > 0n, `the suite wrote to the server (namespace at ${page.version})`)
})
