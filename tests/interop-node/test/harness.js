// Starts a real `opdesk serve` on a free loopback port over a fresh data dir and stops it afterwards (or two, on
// PostgreSQL behind one URL: OPDESK_INTEROP_POSTGRES).
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import {
  createAuthenticatedClient,
  createUnauthenticatedClient,
  isFinalizedGrant,
  isPendingGrant
} from '@interledger/open-payments'

const repo = resolve(import.meta.dirname, '../../..')

export async function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer()
    s.once('error', fail)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => ok(port))
    })
  })
}

/** A node: `opdesk serve` over `dataDir` on `port`, ready (its /healthz answered), and how to stop it. */
async function startNode(dataDir, port) {
  const bin = process.env.OPDESK_BIN ?? join(repo, 'target/debug/opdesk')
  const base = `http://127.0.0.1:${port}`
  const child = spawn(bin, ['serve', '--data-dir', dataDir, '--listen', `127.0.0.1:${port}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, OPDESK_CONFIG: join(dataDir, 'config.toml'), RUST_LOG: 'warn' }
  })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const deadline = Date.now() + 15000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`opdesk exited early: ${stderr}`)
    try {
      const r = await fetch(`${base}/healthz`)
      if (r.ok) break
    } catch {}
    if (Date.now() > deadline) throw new Error(`opdesk did not start: ${stderr}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  return async () => {
    child.kill('SIGTERM')
    await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)))
  }
}

/**
 * `OPDESK_INTEROP_POSTGRES` (a PostgreSQL cluster's URL, e.g. from scripts/pg-cluster.sh): every desk is two
 * nodes on a fresh database of that cluster behind a round-robin proxy, one public URL, one admin token.
 */
const cluster = process.env.OPDESK_INTEROP_POSTGRES || ''

/** A fresh database of the cluster, in its own locale (opdesk declares byte order on its columns): its URL. */
function freshDatabase() {
  const name = `opdesk_i_${Date.now()}_${Math.floor(Math.random() * 1e9)}`
  const made = spawnSync('psql', [cluster, '-qc', `CREATE DATABASE ${name}`])
  if (made.status !== 0) throw new Error(`cannot create a database: ${made.stderr}`)
  return `${cluster.slice(0, cluster.lastIndexOf('/'))}/${name}`
}

/** A TCP proxy on `port` sending each connection to the next of `ports` in turn. */
function roundRobin(port, ports) {
  let next = 0
  const server = createServer((inbound) => {
    const outbound = connect(ports[next++ % ports.length], '127.0.0.1')
    inbound.pipe(outbound).pipe(inbound)
    inbound.on('error', () => outbound.destroy())
    outbound.on('error', () => inbound.destroy())
  })
  return new Promise((ok) => server.listen(port, '127.0.0.1', () => ok(server)))
}

/** `extraConfig`: TOML text written as the instance's config.toml (say, `[[ilp.peers]]` entries). */
export async function startOpdesk(extraConfig = '') {
  const dataDir = mkdtempSync(join(tmpdir(), 'opdesk-interop-'))
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const stops = []
  if (cluster) {
    const config = `public_url = "${base}"\n${extraConfig}\n[store]\nurl = "${freshDatabase()}"\n`
    const second = mkdtempSync(join(tmpdir(), 'opdesk-interop-'))
    writeFileSync(join(dataDir, 'config.toml'), config)
    writeFileSync(join(second, 'config.toml'), config)
    const [a, b] = [await freePort(), await freePort()]
    stops.push(await startNode(dataDir, a))
    writeFileSync(join(second, 'admin.token'), readFileSync(join(dataDir, 'admin.token')), { mode: 0o600 })
    stops.push(await startNode(second, b))
    const proxy = await roundRobin(port, [a, b])
    stops.push(async () => {
      await new Promise((r) => proxy.close(r))
      rmSync(second, { recursive: true, force: true })
    })
  } else {
    writeFileSync(join(dataDir, 'config.toml'), extraConfig)
    stops.push(await startNode(dataDir, port))
  }
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim()
  const admin = async (method, path, body) => {
    const res = await fetch(`${base}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null }
  }
  return {
    base,
    dataDir,
    adminToken,
    admin,
    demoClientKey: join(dataDir, 'demo-client.pem'),
    async stop() {
      for (const stop of stops) await stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

/**
 * The official SDK's clients for `ase`, both validating every response: `open` (unauthenticated) and
 * `client`, signing as the seeded `demo-client` wallet with its key.
 */
export async function sdkClients(ase) {
  const open = await createUnauthenticatedClient({ validateResponses: true, logLevel: 'silent' })
  const jwks = await open.walletAddress.getKeys({ url: `${ase.base}/demo-client` })
  const client = await createAuthenticatedClient({
    walletAddressUrl: `${ase.base}/demo-client`,
    keyId: jwks.keys[0].kid,
    privateKey: ase.demoClientKey,
    validateResponses: true,
    logLevel: 'silent'
  })
  return { open, client }
}

/**
 * What the STREAM receive tests pay into: a desk started with `config`, the SDK clients, bob's wallet address
 * and an incoming-payment grant for it (create, read), `incoming(extra)` creating a payment on bob, and
 * `received(payment)` reading its receivedAmount from the public GET.
 */
export async function receivingDesk(config) {
  const ase = await startOpdesk(config)
  const { open, client } = await sdkClients(ase)
  const bob = await client.walletAddress.get({ url: `${ase.base}/bob` })
  const grant = await client.grant.request(
    { url: bob.authServer },
    { access_token: { access: [{ type: 'incoming-payment', actions: ['create', 'read'], identifier: bob.id }] } }
  )
  if (!isFinalizedGrant(grant)) throw new Error('the incoming-payment grant was not issued at once')
  const bobIncoming = grant.access_token.value
  let seq = 0
  return {
    ase,
    open,
    client,
    bob,
    bobIncoming,
    incoming: (extra = {}) =>
      client.incomingPayment.create(
        { url: bob.resourceServer, accessToken: bobIncoming },
        { walletAddress: bob.id, metadata: { n: ++seq }, ...extra }
      ),
    received: async (payment) => (await open.incomingPayment.get({ url: payment.id })).receivedAmount.value
  }
}

/**
 * A stand-in for another ASE on loopback, as opdesk sees it when paying there. `POST /ilp` (ILP-over-HTTP:
 * bearer `token`, octet-stream) answers each OER Prepare with `await ilp(prepare)`. The Open Payments parts
 * opdesk needs as a client: `POST /auth` issues a token at once (signatures are not checked here; the Rust
 * tests check them between two opdesk instances), and `GET /incoming-payments/{id}` for each id in `payments`
 * ({ incomingAmount?, received }) — public: `authServer` and `receivedAmount`; with the token and a signature:
 * the incoming payment with `methods: [{ type: 'ilp', ...method(id) }]` (`ilpAddress`, base64url `sharedSecret`).
 */
export async function startRemoteAse({ token, payments, ilp, method }) {
  const server = createHttpServer(async (req, res) => {
    const chunks = []
    for await (const c of req) chunks.push(c)
    const body = Buffer.concat(chunks)
    const url = new URL(req.url, base)
    const json = (status, v) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(v))
    }
    if (req.method === 'POST' && url.pathname === '/ilp') {
      if (req.headers.authorization !== `Bearer ${token}`) return json(401, {})
      if (req.headers['content-type'] !== 'application/octet-stream') return json(415, {})
      const reply = await ilp(body)
      res.writeHead(200, { 'content-type': 'application/octet-stream' })
      return res.end(reply)
    }
    if (req.method === 'POST' && url.pathname === '/auth') {
      const r = JSON.parse(body.toString())
      return json(200, { access_token: { value: 'node-token', manage: `${base}/token/1`, access: r.access_token.access } })
    }
    const m = url.pathname.match(/^\/incoming-payments\/(.+)$/)
    if (req.method === 'GET' && m && payments.has(m[1])) {
      const p = payments.get(m[1])
      const usd = (v) => ({ value: String(v), assetCode: 'USD', assetScale: 2 })
      if (!req.headers.authorization) return json(200, { authServer: `${base}/auth`, receivedAmount: usd(p.received) })
      if (req.headers.authorization !== 'GNAP node-token' || !req.headers.signature) return json(401, {})
      const now = new Date().toISOString()
      return json(200, {
        id: `${base}/incoming-payments/${m[1]}`,
        walletAddress: `${base}/dora`,
        ...(p.incomingAmount === undefined ? {} : { incomingAmount: usd(p.incomingAmount) }),
        receivedAmount: usd(p.received),
        completed: p.incomingAmount !== undefined && p.received >= p.incomingAmount,
        createdAt: now,
        updatedAt: now,
        methods: [{ type: 'ilp', ...method(m[1]) }]
      })
    }
    json(404, {})
  })
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok))
  const base = `http://127.0.0.1:${server.address().port}`
  return { base, close: () => new Promise((ok) => { server.closeAllConnections(); server.close(ok) }) }
}

/** opdesk's config for one ILP peer `node` (USD/2) reached at `endpoint`, routing `route`. */
export function peerConfig({ endpoint, token, route, maxPacketAmount }) {
  return `
[[ilp.peers]]
name = "node"
outgoing_endpoint = "${endpoint}"
outgoing_token = "${token}"
routes = ["${route}"]
${maxPacketAmount === undefined ? '' : `max_packet_amount = ${maxPacketAmount}`}
asset_code = "USD"
asset_scale = 2
`
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/**
 * alice on `ase` pays `receiver` through the SDK `client`: a quote (with `amounts`, e.g. `{ receiveAmount }` or
 * `{ debitAmount }`; then `afterQuote(quote)` if given), an interactive outgoing-payment grant approved through
 * the admin API, the outgoing payment; then waits (at most `waitMs`) until it is completed or failed. Returns
 * the quote, the SDK's outgoing payment and the admin view.
 */
export async function payRemote(ase, client, receiver, amounts = {}, { afterQuote, waitMs = 15000 } = {}) {
  const alice = await client.walletAddress.get({ url: `${ase.base}/alice` })
  const q = await client.grant.request(
    { url: alice.authServer },
    { access_token: { access: [{ type: 'quote', actions: ['create', 'read'] }] } }
  )
  const quote = await client.quote.create(
    { url: alice.resourceServer, accessToken: q.access_token.value },
    { walletAddress: alice.id, receiver, method: 'ilp', ...amounts }
  )
  await afterQuote?.(quote)
  const pending = await client.grant.request(
    { url: alice.authServer },
    {
      access_token: { access: [{ type: 'outgoing-payment', actions: ['create', 'read'], identifier: alice.id }] },
      interact: { start: ['redirect'] }
    }
  )
  assert.ok(isPendingGrant(pending))
  const list = await ase.admin('GET', '/grants?state=pending')
  assert.equal((await ase.admin('POST', `/grants/${list.body[0].id}/approve`, {})).status, 200)
  await sleep(1100)
  const granted = await client.grant.continue({ url: pending.continue.uri, accessToken: pending.continue.access_token.value })
  const out = await client.outgoingPayment.create(
    { url: alice.resourceServer, accessToken: granted.access_token.value },
    { walletAddress: alice.id, quoteId: quote.id }
  )
  const deadline = Date.now() + waitMs
  for (;;) {
    const v = await ase.admin('GET', `/outgoing-payments/${out.id.split('/').pop()}`)
    if (['completed', 'failed'].includes(v.body.state)) return { quote, out, view: v.body }
    if (Date.now() > deadline) throw new Error(`the outgoing payment did not finish: ${JSON.stringify(v.body)}`)
    await sleep(20)
  }
}

/** Debian's Chromium for the browser tests: its path (`CHROMIUM` overrides), and why a test skips without it. */
export const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium'
export const noChromium = existsSync(chromiumPath) ? false : `no Chromium at ${chromiumPath}`

/** Headless Chromium, started as this machine needs it (no sandbox as root, no background connections). */
export async function launchChromium() {
  const { chromium } = await import('playwright-core')
  return chromium.launch({
    executablePath: chromiumPath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync']
  })
}
