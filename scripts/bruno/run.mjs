// Runs the reference ASE's Bruno collection against opdesk, request by request, with the real Bruno CLI: the way
// a workshop attendee steps through it. Usage (see ../bruno.sh): node run.mjs COLLECTION_DIR [serve|workshop|both]
//
// For each mode it starts opdesk on loopback (`opdesk serve` with a fresh data dir, or `opdesk workshop
// --headless`: cloud-nine sends, happy-life receives and holds the client wallet, as in the reference's Local
// Playground), writes a Bruno environment for it (the demo wallets, the demo client's key, `signatureUrl` =
// our own signing helper in ./sign.mjs), and runs the requests listed in SEQUENCE one `bru run` each, the
// environment carried from one to the next in the environment file as Bruno persists it. When a response asks
// for interaction (`interact.redirect`), the grant is approved with `opdesk grants approve` on the desk that holds
// it, as the operator would in the console. A request passes when Bruno ran it and every one of its own tests
// passed. Nothing of the collection is copied into this repository: it is read from the user's checkout, copied to
// a scratch directory, and its own package.json installed there.
//
// `class` mode plays one seat of `opdesk workshop --seats 1` with nothing but its handout: the environment is the
// seat's `opdesk.bru` (its wallets, its app's key, `signatureUrl` = the workshop's own signing helper), the flow is
// `Examples/Open Payments`, and consent is given by the seat's owner on the interaction page (signing in with the
// passphrase from `card.txt`, then Approve), as a person would in a browser.
import { execFileSync, spawn } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startSigner } from './sign.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const repo = resolve(here, '../..')
const bru = join(here, 'node_modules/.bin/bru')

/**
 * The requests, in the order an attendee runs them. Folders run in their own `seq` order; the Open Payments APIs
 * folders are each preceded by the collection's own request that gets the token they use (a grant request of the
 * `Examples/Open Payments` flow, or its receiver), since the folders have none of their own.
 */
const SEQUENCE = [
  { folder: 'Examples/Open Payments' },
  { folder: 'Examples/Open Payments Without Quote' },
  { folder: 'Examples/Web Monetization' },
  { folder: 'Examples/Open Payments With Directed Identity' },
  { folder: 'Examples/Vailidating Wallet Address Ownership with Open Payments' },
  { folder: 'SPSP' },
  { folder: 'Open Payments APIs/Wallet Address' },
  // these (and the SPSP query) set senderOpenPaymentsHost to the receiver's host: an attendee reads the sender's
  // wallet address again before paying from it
  { request: 'Examples/Open Payments/Get sender wallet address.bru' },
  { request: 'Examples/Open Payments/Grant Request Incoming Payment.bru' },
  { folder: 'Open Payments APIs/Incoming Payments' },
  // the API folder's quote debits 10.00: it needs a receiver without an incomingAmount, as Web Monetization makes
  { request: 'Examples/Web Monetization/Create Incoming Payment.bru' },
  { request: 'Examples/Open Payments/Grant Request Quote.bru' },
  { folder: 'Open Payments APIs/Quotes' },
  { request: 'Examples/Open Payments/Grant Request Outgoing Payment.bru' },
  { request: 'Examples/Open Payments/Continuation Request.bru' },
  { folder: 'Open Payments APIs/Outgoing Payments' },
  { folder: 'Open Payments APIs/Outgoing Payment Grant' },
  { folder: 'Open Payments Auth APIs/Grants' },
  { folder: 'Open Payments Auth APIs/Tokens' }
]

function usage(message) {
  console.error(`${message}\nusage: bruno.sh COLLECTION_DIR [serve|workshop|class|both]`)
  process.exit(2)
}

const [collectionArg, modeArg = 'both'] = process.argv.slice(2)
if (!collectionArg) usage('the collection directory is missing')
const source = resolve(collectionArg)
if (!existsSync(join(source, 'bruno.json'))) usage(`${source} is not a Bruno collection (no bruno.json)`)
if (!['serve', 'workshop', 'class', 'both'].includes(modeArg)) usage(`unknown mode ${modeArg}`)
const opdesk = process.env.OPDESK_BIN ?? join(repo, 'target/release/opdesk')
if (!existsSync(opdesk)) usage(`no opdesk binary at ${opdesk} (build it, or set OPDESK_BIN)`)

/** `seq` of a .bru file's meta block (files without one last, by name). */
function seqOf(file) {
  const m = readFileSync(file, 'utf8').match(/^meta\s*\{[^}]*?\bseq:\s*(\d+)/m)
  return m ? Number(m[1]) : Number.MAX_SAFE_INTEGER
}

/** The requests of a folder (not its subfolders), in `seq` order. */
function requestsOf(collection, folder) {
  const dir = join(collection, folder)
  const files = execFileSync('find', [dir, '-maxdepth', '1', '-name', '*.bru', '!', '-name', 'folder.bru'])
    .toString()
    .split('\n')
    .filter(Boolean)
  return files
    .map((f) => ({ path: f.slice(collection.length + 1), seq: seqOf(f) }))
    .sort((a, b) => a.seq - b.seq || a.path.localeCompare(b.path))
    .map((f) => f.path)
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.on('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

async function waitUp(base, child, what) {
  const until = Date.now() + 30000
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`)
    try {
      const res = await fetch(`${base}/healthz`)
      if (res.ok) return
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${what} did not answer within 30 s`)
}

/** Starts `opdesk serve` on a fresh data dir: one ASE plays sender, receiver and client. */
async function startServe(work) {
  const dataDir = join(work, 'serve')
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const child = spawn(opdesk, ['serve', '--data-dir', dataDir, '--listen', `127.0.0.1:${port}`], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'warn' }
  })
  await waitUp(base, child, 'opdesk serve')
  return {
    child,
    desks: { [base]: dataDir },
    sender: base,
    receiver: base,
    client: { base, dataDir }
  }
}

/** Starts `opdesk workshop --headless`: cloud-nine sends; happy-life receives and holds the client wallet. */
async function startWorkshop(work, more = []) {
  const dir = join(work, 'workshop')
  const [c9, hl] = [await freePort(), await freePort()]
  const child = spawn(
    opdesk,
    ['workshop', '--headless', '--dir', dir, '--cloud-nine-port', String(c9), '--happy-life-port', String(hl), ...more],
    { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'warn' } }
  )
  const [sender, receiver] = [`http://127.0.0.1:${c9}`, `http://127.0.0.1:${hl}`]
  await waitUp(sender, child, 'opdesk workshop')
  await waitUp(receiver, child, 'opdesk workshop')
  return {
    child,
    desks: { [sender]: join(dir, 'cloud-nine'), [receiver]: join(dir, 'happy-life') },
    sender,
    receiver,
    client: { base: receiver, dataDir: join(dir, 'happy-life') }
  }
}

/** Starts `opdesk workshop --headless --seats 1`: seat01 pays its shop; its handout is the environment. */
async function startClass(work) {
  const ase = await startWorkshop(work, ['--seats', '1'])
  const seat = join(work, 'workshop', 'handout', 'seat01')
  ase.handout = readFileSync(join(seat, 'opdesk.bru'), 'utf8')
  ase.passphrase = readFileSync(join(seat, 'card.txt'), 'utf8').match(/^passphrase: (.+)$/m)[1]
  return ase
}

/** The seat's owner approves on the interaction page at `redirect`: signs in with `passphrase`, then Approve. */
async function approveAsOwner(redirect, passphrase) {
  let cookie = ''
  const send = async (init = {}) => {
    const res = await fetch(redirect, { redirect: 'manual', ...init, headers: { ...(init.headers ?? {}), cookie } })
    const set = res.headers.get('set-cookie')
    if (set) cookie = set.split(';')[0]
    return { status: res.status, html: await res.text() }
  }
  const csrf = (html) => html.match(/name="csrf" value="([^"]+)"/)?.[1]
  const form = (fields) => ({
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString()
  })
  const page = await send()
  const signIn = await send(form({ csrf: csrf(page.html), passphrase }))
  if (signIn.status !== 303) return `sign-in answered ${signIn.status}`
  const signedIn = await send()
  const decided = await send(form({ csrf: csrf(signedIn.html), decision: 'approve' }))
  return decided.status === 200 || decided.status === 303 ? 'approved by the owner on the page' : `decision answered ${decided.status}`
}

/** A Bruno environment file for `ase`: the variables the collection's requests start from. */
async function writeEnvironment(file, ase, signatureUrl) {
  if (ase.handout) {
    writeFileSync(file, ase.handout.replace(/\n}\s*$/, '\n  assetCode: USD\n  assetScale: 2\n}\n'))
    return
  }
  const jwks = await (await fetch(`${ase.client.base}/demo-client/jwks.json`)).json()
  const pem = readFileSync(join(ase.client.dataDir, 'demo-client.pem'))
  const vars = {
    senderWalletAddress: `${ase.sender}/alice`,
    receiverWalletAddress: `${ase.receiver}/bob`,
    clientWalletAddress: `${ase.client.base}/demo-client`,
    clientKeyId: jwks.keys[0].kid,
    clientPrivateKey: pem.toString('base64'),
    signatureUrl,
    assetCode: 'USD',
    assetScale: '2'
  }
  const body = Object.entries(vars)
    .map(([k, v]) => `  ${k}: ${v}`)
    .join('\n')
  writeFileSync(file, `vars {\n${body}\n}\n`)
}

/** Approves every grant waiting on the desk whose auth server answered `continueUri`. */
function approvePending(ase, continueUri) {
  const origin = new URL(continueUri).origin
  const dataDir = ase.desks[origin]
  if (!dataDir) return []
  const grants = JSON.parse(execFileSync(opdesk, ['--data-dir', dataDir, 'grants', 'list', '--json']).toString())
  const pending = (Array.isArray(grants) ? grants : grants.grants ?? []).filter((g) => g.state === 'pending')
  for (const g of pending) {
    execFileSync(opdesk, ['--data-dir', dataDir, 'grants', 'approve', g.id], { stdio: 'ignore' })
  }
  return pending.map((g) => g.id)
}

/** Runs `bru` with `args` in `cwd` (asynchronously: the signing helper answers from this process meanwhile);
 * resolves to its output. A failed test makes bru exit non-zero: the report says what happened. */
function bruRun(args, cwd) {
  return new Promise((resolve) => {
    const child = spawn(bru, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 60000)
    child.on('close', () => {
      clearTimeout(timer)
      resolve(output)
    })
  })
}

/** Runs one request with `bru run`; returns its verdict. */
async function runRequest(collection, request, envFile, report) {
  rmSync(report, { force: true })
  const output = await bruRun(
    ['run', request, '--env-file', envFile, '--sandbox', 'developer', '--reporter-json', report, '--noproxy'],
    collection
  )
  if (!existsSync(report)) {
    return { ok: false, status: '-', notes: ['bru wrote no report:', ...output.trim().split('\n').slice(-8)] }
  }
  const parsed = JSON.parse(readFileSync(report, 'utf8'))
  const results = (Array.isArray(parsed) ? parsed[0] : parsed).results ?? []
  const r = results[0]
  if (!r) return { ok: false, status: '-', notes: ['the report has no result'] }
  const tests = [...(r.testResults ?? []), ...(r.assertionResults ?? [])]
  const failed = tests.filter((t) => t.status !== 'pass')
  const notes = failed.map((t) => `${t.description ?? t.lhsExpr}: ${t.error ?? 'failed'}`)
  if (failed.length > 0 && r.response?.data !== undefined) {
    notes.push(`response: ${JSON.stringify(r.response.data).slice(0, 400)}`)
  }
  if (r.error) notes.push(String(r.error))
  for (const s of [r.preRequestTestResults, r.postResponseTestResults].flat().filter(Boolean)) {
    if (s.status !== 'pass') notes.push(`script: ${s.error ?? s.description}`)
  }
  return {
    ok: !r.error && failed.length === 0 && notes.length === 0,
    status: r.response?.status ?? '-',
    tests: tests.length,
    body: r.response?.data,
    notes
  }
}

async function runMode(mode, collection, work, signer) {
  const ase = mode === 'serve' ? await startServe(work) : mode === 'class' ? await startClass(work) : await startWorkshop(work)
  const envFile = join(work, `${mode}.bru`)
  await writeEnvironment(envFile, ase, signer.url)
  const report = join(work, 'report.json')
  const lines = []
  let passed = 0
  let total = 0
  try {
    for (const step of mode === 'class' ? [{ folder: 'Examples/Open Payments' }] : SEQUENCE) {
      const requests = step.request ? [step.request] : requestsOf(collection, step.folder)
      for (const request of requests) {
        const v = await runRequest(collection, request, envFile, report)
        total += 1
        if (v.ok) passed += 1
        let line = `${v.ok ? 'PASS' : 'FAIL'}  ${String(v.status).padEnd(3)}  ${request}`
        if (v.ok && v.tests === 0) line += '  (no tests)'
        if (v.notes.length > 0) line += `\n        ${v.notes.join('\n        ')}`
        const redirect = v.body?.interact?.redirect
        if (redirect && v.body?.continue?.uri && ase.passphrase) {
          line += `\n        consent: ${await approveAsOwner(redirect, ase.passphrase)}`
        } else if (redirect && v.body?.continue?.uri) {
          const approved = approvePending(ase, v.body.continue.uri)
          line += `\n        consent: approved ${approved.join(', ') || 'nothing (none pending)'} with opdesk grants approve`
        }
        console.log(`[${mode}] ${line}`)
        lines.push(line)
      }
    }
  } finally {
    ase.child.kill('SIGTERM')
    await new Promise((r) => (ase.child.exitCode !== null ? r() : ase.child.on('exit', r)))
  }
  console.log(`[${mode}] ${passed} of ${total} requests passed`)
  return { mode, passed, total }
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'opdesk-bruno-'))
  const collection = join(work, 'collection')
  cpSync(source, collection, { recursive: true, filter: (p) => !p.includes('/node_modules') && !p.endsWith('/.git') })
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent'], { cwd: collection, stdio: 'inherit' })
  const signer = await startSigner()
  const modes = modeArg === 'both' ? ['serve', 'workshop'] : [modeArg]
  const outcomes = []
  try {
    for (const mode of modes) outcomes.push(await runMode(mode, collection, work, signer))
  } finally {
    await signer.close()
  }
  for (const o of outcomes) console.log(`${o.mode}: ${o.passed} of ${o.total} requests passed`)
  if (!process.env.KEEP_WORK) rmSync(work, { recursive: true, force: true })
  else console.log(`scratch directory kept: ${work}`)
  process.exit(outcomes.every((o) => o.passed === o.total) ? 0 : 1)
}

main().catch((e) => {
  console.error(e)
  process.exit(2)
})
