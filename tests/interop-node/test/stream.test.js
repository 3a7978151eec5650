// STREAM interop: ilp-protocol-stream (2.7.2-alpha.3, what Rafiki pins) pays into opdesk's incoming payments
// through a tiny ILP-over-HTTP plugin that POSTs every Prepare to opdesk's `/ilp` with a peer's bearer token.
// The incoming payments (and their `methods[ilp]` credentials) come from the official Open Payments SDK with
// response validation on; the amounts are read back from the unauthenticated (public) GET.
//
// Checked: N units paid arrive as exactly N (also split into packets by the peer's max packet amount, F08);
// paying exactly incomingAmount completes the payment and the connection still ends cleanly; closing a
// stream does not start a resend loop; paying more than incomingAmount delivers exactly the remainder and the
// sender stops; an expired payment gets nothing and the sender gives up after its first packets, within a
// bounded time.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { createConnection } from 'ilp-protocol-stream'
import { receivingDesk } from './harness.js'
import { HttpPlugin } from './ilp-plugin.js'

const TOKEN = 'node-peer-token-0123456789'
const SMALL_TOKEN = 'node-small-packets-token-0123456789'

const CONFIG = `
[[ilp.peers]]
name = "node"
incoming_tokens = ["${TOKEN}"]
asset_code = "USD"
asset_scale = 2

[[ilp.peers]]
name = "node-small"
incoming_tokens = ["${SMALL_TOKEN}"]
max_packet_amount = 1000
asset_code = "USD"
asset_scale = 2
`

let ase
let client
let bobIncoming
let incoming
let received

before(async () => {
  ;({ ase, client, bobIncoming, incoming, received } = await receivingDesk(CONFIG))
})

after(async () => {
  await ase?.stop()
})

// ---------------------------------------------------------------------------------------------------------
// helpers

async function connect(payment, token = TOKEN) {
  const [method] = payment.methods
  assert.equal(method.type, 'ilp')
  const plugin = new HttpPlugin({ url: `${ase.base}/ilp`, token })
  const connection = await createConnection({
    plugin,
    destinationAccount: method.ilpAddress,
    sharedSecret: Buffer.from(method.sharedSecret, 'base64url'),
    slippage: 0
  })
  return { plugin, connection }
}

const usd = (value) => ({ value: String(value), assetCode: 'USD', assetScale: 2 })
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Resolves to the error `promise` rejects with, or undefined if it resolves. */
async function failure(promise) {
  try {
    await promise
    return undefined
  } catch (e) {
    return e
  }
}

// ---------------------------------------------------------------------------------------------------------

test('ilp-protocol-stream pays N units: receivedAmount is exactly N', async () => {
  const payment = await incoming({ incomingAmount: usd(100000) })
  assert.match(payment.methods[0].ilpAddress, /^test\.opdesk\.[a-zA-Z0-9_-]+$/)
  const { plugin, connection } = await connect(payment)
  assert.equal(connection.destinationAssetCode, 'USD')
  assert.equal(connection.destinationAssetScale, 2)
  const stream = connection.createStream()
  await stream.sendTotal(12345, { timeout: 10000 })
  assert.equal(connection.totalDelivered, '12345')
  await connection.end()
  assert.equal(await received(payment), '12345')
  assert.equal(plugin.fulfilled().length, 1, 'one money packet without a max packet amount')
})

test('paying exactly incomingAmount completes the payment and the connection ends cleanly', async () => {
  const payment = await incoming({ incomingAmount: usd(2500) })
  const { connection } = await connect(payment)
  await connection.createStream().sendTotal(2500, { timeout: 10000 })
  const ended = await Promise.race([connection.end().then(() => 'ended'), sleep(3000).then(() => 'timed out')])
  assert.equal(ended, 'ended')
  assert.equal(await received(payment), '2500')
  assert.equal((await client.incomingPayment.get({ url: payment.id, accessToken: bobIncoming })).completed, true)
})

test('closing a stream is acknowledged: no resend loop, end() completes', async () => {
  // ilp-protocol-stream re-queues a rejected StreamClose and sends it again at once, forever: the receiver
  // must fulfil fulfillable zero-amount packets (it rejects ~300 per second otherwise, measured).
  const payment = await incoming({ incomingAmount: usd(100000) })
  const { plugin, connection } = await connect(payment)
  const stream = connection.createStream()
  await stream.sendTotal(100, { timeout: 10000 })
  const before = plugin.log.length
  stream.end()
  await sleep(300)
  const ended = await Promise.race([connection.end().then(() => 'ended'), sleep(3000).then(() => 'timed out')])
  assert.equal(ended, 'ended')
  const during = plugin.log.length - before
  assert.ok(during <= 3, `${during} packets to close`)
  assert.ok(plugin.log.slice(before).some(([amount, type]) => amount === 0n && type === 13), 'a zero-amount packet fulfilled')
  assert.equal(await received(payment), '100')
})

test('a peer max packet amount splits the payment (F08), still exactly N', async () => {
  const payment = await incoming({ incomingAmount: usd(100000) })
  const { plugin, connection } = await connect(payment, SMALL_TOKEN)
  const stream = connection.createStream()
  await stream.sendTotal(12345, { timeout: 10000 })
  await connection.end()
  assert.equal(await received(payment), '12345')
  assert.ok(plugin.log.some(([, , code]) => code === 'F08'), 'the sender learned the max packet amount from F08')
  const money = plugin.fulfilled()
  assert.equal(money.length, 13)
  assert.ok(money.every(([amount]) => amount <= 1000n))
})

test('paying more than incomingAmount delivers exactly the remainder and the sender stops', async () => {
  const payment = await incoming({ incomingAmount: usd(1000) })
  // 300 first, on a connection of its own.
  const first = await connect(payment)
  await first.connection.createStream().sendTotal(300, { timeout: 10000 })
  await first.connection.end()
  assert.equal(await received(payment), '300')

  const { plugin, connection } = await connect(payment)
  const errors = []
  connection.on('error', (e) => errors.push(e))
  const started = Date.now()
  const err = await failure(connection.createStream().sendTotal(1500, { timeout: 10000 }))
  const took = Date.now() - started
  assert.ok(err, 'sendTotal does not claim 1500 were sent')
  assert.match(String(err), /completed|closed|error/i)
  assert.ok(took < 5000, `the sender stopped after ${took} ms`)
  assert.equal(connection.totalDelivered, '700', 'exactly the remainder was delivered')
  assert.equal(await received(payment), '1000')
  const full = await client.incomingPayment.get({ url: payment.id, accessToken: bobIncoming })
  assert.equal(full.completed, true)
  // Stopped for good: nothing more goes out.
  await sleep(300)
  const sent = plugin.log.length
  await sleep(500)
  assert.equal(plugin.log.length, sent, 'no packet after the refusal')
  assert.ok(sent <= 12, `${sent} packets in all`)

  // A new connection to the completed payment gives up at once.
  const again = await failure(connect(payment).then(({ connection }) => connection.createStream().sendTotal(1)))
  assert.ok(again)
  assert.equal(await received(payment), '1000')
})

test('an expired payment gets nothing and the sender stops quickly', async () => {
  const payment = await incoming({ expiresAt: new Date(Date.now() + 1500).toISOString() })
  while (Date.now() < Date.parse(payment.expiresAt)) await sleep(50)

  const plugin = new HttpPlugin({ url: `${ase.base}/ilp`, token: TOKEN })
  const started = Date.now()
  const err = await failure(
    createConnection({
      plugin,
      destinationAccount: payment.methods[0].ilpAddress,
      sharedSecret: Buffer.from(payment.methods[0].sharedSecret, 'base64url')
    }).then((connection) => connection.createStream().sendTotal(500, { timeout: 10000 }))
  )
  const took = Date.now() - started
  assert.ok(err, 'the sender fails')
  assert.ok(took < 3000, `the sender stopped after ${took} ms`)
  // Requests already in flight when the sender gave up still land; then nothing more.
  await sleep(300)
  const sent = plugin.log.length
  await sleep(500)
  assert.equal(plugin.log.length, sent, 'no packet after the refusal')
  // IL-DCP, then one volley of rate probes (ilp-protocol-stream sends five at once), then its close.
  assert.ok(sent <= 8, `${sent} packets in all`)
  assert.equal(plugin.fulfilled().length, 0)
  assert.equal(await received(payment), '0')
})
