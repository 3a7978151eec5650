// Starts a real `opdesk serve` on a free loopback port over a fresh data dir and stops it afterwards.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createAuthenticatedClient, createUnauthenticatedClient, isFinalizedGrant } from '@interledger/open-payments'

const repo = resolve(import.meta.dirname, '../../..')

async function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer()
    s.once('error', fail)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => ok(port))
    })
  })
}

/** `extraConfig`: TOML text written as the instance's config.toml (say, `[[ilp.peers]]` entries). */
export async function startOpdesk(extraConfig = '') {
  const bin = process.env.OPDESK_BIN ?? join(repo, 'target/debug/opdesk')
  const dataDir = mkdtempSync(join(tmpdir(), 'opdesk-interop-'))
  writeFileSync(join(dataDir, 'config.toml'), extraConfig)
  const port = await freePort()
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
      child.kill('SIGTERM')
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)))
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
