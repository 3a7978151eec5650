// STREAM sender interop: opdesk pays an incoming payment on a mock "remote ASE" whose receiver is
// ilp-protocol-stream's `Server` (2.7.2-alpha.3) behind a tiny ILP-over-HTTP endpoint (`POST /ilp`, bearer
// token). The mock (harness.js `startRemoteAse`) also serves the Open Payments parts opdesk needs as a client:
// the public incoming payment (`authServer`), a grant endpoint issuing a token at once (signatures are not
// checked here; the Rust tests check them between two opdesk instances) and the authenticated incoming payment
// with `methods[ilp]` from `generateAddressAndSecret`. The official SDK drives opdesk (grants, quote, outgoing
// payment; harness.js `payRemote`).
//
// Checked: the quote delivers the full incomingAmount at the 1 % slippage floor; the payment completes and the
// Node receiver got exactly the amount, in packets within the peer's max packet amount; a receiver whose
// receive max is lower than the payment makes it fail with `receiver_completed` after delivering the room; this
// receiver's totals for the connection match what opdesk delivered, so opdesk keeps several packets in flight.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { createServer as createStreamServer } from 'ilp-protocol-stream'
import ILDCP from 'ilp-protocol-ildcp'
import { payRemote, peerConfig, sdkClients, startOpdesk, startRemoteAse } from './harness.js'

const TOKEN = 'opdesk-to-node-token-0123456789'

/** The receiving side's plugin: `/ilp` feeds Prepares to the handler; IL-DCP is answered locally. */
class ReceivingPlugin {
  constructor() {
    this.connected = false
    this.handler = undefined
    this.amounts = []
    this.inFlight = 0
    this.maxInFlight = 0
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

let node // { base, close, plugin }
let ase
let client

/** Per incoming payment id: { incomingAmount, received, receiveMax }. */
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
  const remote = await startRemoteAse({
    token: TOKEN,
    payments,
    ilp: async (prepare) => {
      const lenBytes = prepare[1] & 0x80 ? 1 + (prepare[1] & 0x7f) : 1
      plugin.amounts.push(prepare.readBigUInt64BE(1 + lenBytes))
      // each Prepare waits a moment before the receiver sees it, so packets sent together overlap here
      plugin.inFlight += 1
      plugin.maxInFlight = Math.max(plugin.maxInFlight, plugin.inFlight)
      try {
        await new Promise((resolve) => setTimeout(resolve, 3))
        return await plugin.handler(prepare)
      } finally {
        plugin.inFlight -= 1
      }
    },
    method: (id) => {
      const { destinationAccount, sharedSecret } = stream.generateAddressAndSecret(id)
      return { ilpAddress: destinationAccount, sharedSecret: sharedSecret.toString('base64url') }
    }
  })
  return { ...remote, plugin }
}

before(async () => {
  node = await startNode()
  ase = await startOpdesk(peerConfig({ endpoint: `${node.base}/ilp`, token: TOKEN, route: 'test.node', maxPacketAmount: 400 }))
  ;({ client } = await sdkClients(ase))
})

after(async () => {
  await ase?.stop()
  await node?.close()
})

/** Quote + outgoing payment from alice to the mock's incoming payment `id`; returns the admin view when done. */
const pay = (id) => payRemote(ase, client, `${node.base}/incoming-payments/${id}`)

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

test('packets go several at once to an ilp-protocol-stream receiver (its totals match), exactly the amount', async () => {
  payments.set('p3', { incomingAmount: 12000, received: 0, receiveMax: 12000 })
  node.plugin.maxInFlight = 0
  const before = node.plugin.amounts.length
  const { view } = await pay('p3')
  assert.equal(view.state, 'completed', JSON.stringify(view))
  assert.equal(view.sentAmount.value, '12000')
  assert.equal(payments.get('p3').received, 12000)
  const sent = node.plugin.amounts.slice(before)
  assert.ok(sent.every((a) => a <= 400n), `packets within the max: ${sent}`)
  assert.ok(node.plugin.maxInFlight > 1, `several packets in flight at once: ${node.plugin.maxInFlight}`)
  assert.ok(node.plugin.maxInFlight <= 16, `at most 16 in flight: ${node.plugin.maxInFlight}`)
})
