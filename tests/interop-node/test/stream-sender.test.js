// STREAM sender interop: opdesk pays an incoming payment on a mock "remote ASE" whose receiver is
// ilp-protocol-stream's `Server` (2.7.2-alpha.3) behind a tiny ILP-over-HTTP endpoint (`POST /ilp`, bearer
// token). The mock also serves the Open Payments parts opdesk needs as a client: the public incoming payment
// (`authServer`), a grant endpoint issuing a token at once (signatures are not checked here; the Rust tests
// check them between two opdesk instances) and the authenticated incoming payment with `methods[ilp]` from
// `generateAddressAndSecret`. The official SDK drives opdesk (grants, quote, outgoing payment).
//
// Checked: the quote delivers the full incomingAmount at the 1 % slippage floor; the payment completes and the
// Node receiver got exactly the amount, in packets within the peer's max packet amount; a receiver whose
// receive max is lower than the payment makes it fail with `receiver_completed` after delivering the room.
import assert from 'node:assert/strict'
import { createServer as createHttpServer } from 'node:http'
import { after, before, test } from 'node:test'
import { isPendingGrant } from '@interledger/open-payments'
import { createServer as createStreamServer } from 'ilp-protocol-stream'
import ILDCP from 'ilp-protocol-ildcp'
import { sdkClients, startOpdesk } from './harness.js'

const TOKEN = 'opdesk-to-node-token-0123456789'

/** The receiving side's plugin: `/ilp` feeds Prepares to the handler; IL-DCP is answered locally. */
class ReceivingPlugin {
  constructor() {
    this.connected = false
    this.handler = undefined
    this.amounts = []
  }
  async connect() { this.connected = true }
  async disconnect() { this.connected = false }
  isConnected() { return this.connected }
  registerDataHandler(h) { this.handler = h }
  deregisterDataHandler() { this.handler = undefined }
  async sendData() {
    return ILDCP.serializeIldcpResponse({ clientAddress: 'test.node', assetScale: 2, assetCode: 'USD' })
  }
}

let node // { base, close, plugin, payments }
let ase
let client

/** Per incoming payment id: { incomingAmount, received, receiveMax, credentials }. */
const payments = new Map()

async function startNode() {
  const plugin = new ReceivingPlugin()
  const stream = await createStreamServer({ plugin, serverSecret: Buffer.alloc(32, 7) })
  stream.on('connection', (conn) => {
    const p = payments.get(conn.connectionTag)
    conn.on('stream', (s) => {
      s.setReceiveMax(p ? p.receiveMax : 0)
      s.on('money', (amount) => { if (p) p.received += Number(amount) })
    })
  })
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
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return json(401, {})
      if (req.headers['content-type'] !== 'application/octet-stream') return json(415, {})
      const prepare = body
      const lenBytes = prepare[1] & 0x80 ? 1 + (prepare[1] & 0x7f) : 1
      plugin.amounts.push(prepare.readBigUInt64BE(1 + lenBytes))
      const reply = await plugin.handler(prepare)
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
      const { destinationAccount, sharedSecret } = stream.generateAddressAndSecret(m[1])
      return json(200, {
        id: `${base}/incoming-payments/${m[1]}`,
        walletAddress: `${base}/dora`,
        incomingAmount: usd(p.incomingAmount),
        receivedAmount: usd(p.received),
        completed: p.received >= p.incomingAmount,
        createdAt: new Date().toISOString(),
        updatedAt: new Date().toISOString(),
        methods: [{ type: 'ilp', ilpAddress: destinationAccount, sharedSecret: sharedSecret.toString('base64url') }]
      })
    }
    json(404, {})
  })
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok))
  const base = `http://127.0.0.1:${server.address().port}`
  return { base, plugin, close: () => new Promise((ok) => { server.closeAllConnections(); server.close(ok) }) }
}

before(async () => {
  node = await startNode()
  ase = await startOpdesk(`
[[ilp.peers]]
name = "node"
outgoing_endpoint = "${node.base}/ilp"
outgoing_token = "${TOKEN}"
routes = ["test.node"]
max_packet_amount = 400
asset_code = "USD"
asset_scale = 2
`)
  ;({ client } = await sdkClients(ase))
})

after(async () => {
  await ase?.stop()
  await node?.close()
})

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Quote + outgoing payment from alice to the mock's incoming payment `id`; returns the admin view when done. */
async function pay(id) {
  const alice = await client.walletAddress.get({ url: `${ase.base}/alice` })
  const q = await client.grant.request(
    { url: alice.authServer },
    { access_token: { access: [{ type: 'quote', actions: ['create', 'read'] }] } }
  )
  const quote = await client.quote.create(
    { url: alice.resourceServer, accessToken: q.access_token.value },
    { walletAddress: alice.id, receiver: `${node.base}/incoming-payments/${id}`, method: 'ilp' }
  )
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
  for (let i = 0; i < 300; i++) {
    const v = await ase.admin('GET', `/outgoing-payments/${out.id.split('/').pop()}`)
    if (['completed', 'failed'].includes(v.body.state)) return { quote, view: v.body }
    await sleep(20)
  }
  throw new Error('the outgoing payment did not finish')
}

test('opdesk pays an ilp-protocol-stream receiver on another ASE through a peer', async () => {
  payments.set('p1', { incomingAmount: 1500, received: 0, receiveMax: 1500 })
  const before = node.plugin.amounts.length
  const { quote, view } = await pay('p1')
  assert.equal(quote.receiveAmount.value, '1500')
  assert.equal(quote.debitAmount.value, '1516', 'ceil(1500 / 0.99)')
  assert.equal(view.state, 'completed', JSON.stringify(view))
  assert.equal(view.sentAmount.value, '1500')
  assert.equal(payments.get('p1').received, 1500)
  const sent = node.plugin.amounts.slice(before)
  assert.ok(sent.every((a) => a <= 400n), `packets within the max: ${sent}`)
  assert.ok(sent.filter((a) => a > 0n).length >= 4, 'split into packets')
})

test('a receiver with less room than the payment: delivers the room, then fails with receiver_completed', async () => {
  payments.set('p2', { incomingAmount: 1000, received: 0, receiveMax: 600 })
  const { view } = await pay('p2')
  assert.equal(view.state, 'failed', JSON.stringify(view))
  assert.equal(view.failureReason, 'receiver_completed', JSON.stringify(view))
  assert.equal(payments.get('p2').received, 600)
  const balances = await ase.admin('GET', '/balances')
  const sums = {}
  for (const b of balances.body) sums[b.assetCode] = (sums[b.assetCode] ?? 0) + b.balance
  assert.ok(Object.values(sums).every((v) => v === 0), JSON.stringify(sums))
})
