// STREAM interop: @interledger/pay 0.4.0-alpha.9 (the newest 0.4 on the registry; Rafiki's sender) pays into
// opdesk's incoming payments through the shared ILP-over-HTTP plugin (./ilp-plugin.js, `POST /ilp` with a
// peer's bearer token). Used the way Rafiki uses it: `setupPayment` with the raw STREAM credentials from
// `methods[ilp]` (and the payment's asset), `startQuote` (rate probe), `pay`, then `closeConnection`. Incoming
// payments come from the official Open Payments SDK; receivedAmount is read back from the public GET,
// `completed` from the authenticated GET (the public view does not carry it).
//
// Checked: a fixed delivery of incomingAmount delivers exactly N, completes the payment and closes cleanly
// (closeConnection's ConnectionClose is answered in kind); without a known asset, pay's asset probe learns the
// payment's asset from the receiver; a fixed send of M units into an open-ended payment delivers M; a peer's
// max packet amount (F08 with data) is found by the quote and the payment is split into packets within it,
// delivered exactly; a completed or expired payment makes pay end with ClosedByReceiver within seconds and
// moves nothing (startQuote throws on a new connection, since the rate probe is refused; pay itself fails after
// one packet on a quote taken before); asking for more than incomingAmount makes pay stop with
// IncompatibleReceiveMax, and nothing above incomingAmount is ever received (also when packets of 1000 fit
// partly); a second payer (fresh credentials from a new read: a new connection) of a partly paid payment sees
// StreamMaxMoney count its own connection (RFC 29), so pay asking for more than the room stops after one packet.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { closeConnection, pay, PaymentError, PaymentType, setupPayment, startQuote } from '@interledger/pay'
import { receivingDesk } from './harness.js'
import { describeExchanges, ErrorCode, FrameType, HttpPlugin, parseIlp } from './ilp-plugin.js'

const TOKEN = 'pay-peer-token-0123456789'
const SMALL_TOKEN = 'pay-small-packets-token-0123456789'

const CONFIG = `
[[ilp.peers]]
name = "pay"
incoming_tokens = ["${TOKEN}"]
asset_code = "USD"
asset_scale = 2

[[ilp.peers]]
name = "pay-small"
incoming_tokens = ["${SMALL_TOKEN}"]
max_packet_amount = 1000
asset_code = "USD"
asset_scale = 2
`

const USD = { code: 'USD', scale: 2 }
/** Bound on each test: pay's own idle timeout is 10 s, so a hang shows up as a failure, not a stuck run. */
const BOUNDED = { timeout: 30000 }

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

async function completed(payment) {
  return (await client.incomingPayment.get({ url: payment.id, accessToken: bobIncoming })).completed
}

const usd = (value) => ({ value: String(value), assetCode: 'USD', assetScale: 2 })
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** The STREAM credentials of an incoming payment, as pay takes them. */
function credentials(payment) {
  const [method] = payment.methods
  assert.equal(method.type, 'ilp')
  return { destinationAddress: method.ilpAddress, sharedSecret: Buffer.from(method.sharedSecret, 'base64url') }
}

/**
 * setupPayment → startQuote → pay, as Rafiki drives pay. `target`: { amountToDeliver } or { amountToSend }.
 * Stops at the first stage that throws; `error` is what that stage threw (a PaymentError) or pay's `error`.
 * Options: the peer `token`; `knownAsset: false` lets pay probe for the asset; `stopBefore: 'pay'` returns
 * after the quote; `cutOffAfter` ms (see HttpPlugin.cutOffAfter).
 */
async function payInto(payment, target, { token = TOKEN, knownAsset = true, stopBefore, cutOffAfter } = {}) {
  const destinationAsset = knownAsset ? USD : undefined
  const plugin = new HttpPlugin({ url: `${ase.base}/ilp`, token })
  if (cutOffAfter !== undefined) plugin.cutOffAfter(cutOffAfter)
  const { sharedSecret, destinationAddress } = credentials(payment)
  const out = { plugin, sharedSecret }
  const started = Date.now()
  try {
    out.stage = 'setup'
    out.destination = await setupPayment({ plugin, destinationAddress, sharedSecret, destinationAsset })
    out.stage = 'quote'
    out.quote = await startQuote({ plugin, destination: out.destination, sourceAsset: USD, ...target })
    if (stopBefore === 'pay') return finish()
    out.stage = 'pay'
    out.progress = await pay({ plugin, destination: out.destination, quote: out.quote })
    out.error = out.progress.error
  } catch (e) {
    out.error = e
  }
  return finish()

  function finish() {
    out.took = Date.now() - started
    /** The packets of this payment, decrypted, for assertion messages. */
    out.dump = async () => describeExchanges(await plugin.decoded(sharedSecret))
    return out
  }
}

/** No packet goes out any more: the sender has stopped for good. */
/** The most packets a new @interledger/pay connection sends before it needs a reply: its rate probe's list
 * (0, then 10^12 down to 10^3), paced but not waiting for answers. */
const PROBE_ROUND = 11

async function quiet(plugin) {
  await sleep(200)
  const sent = plugin.log.length
  await sleep(400)
  assert.equal(plugin.log.length, sent, 'no packet after the sender ended')
  return sent
}

// ---------------------------------------------------------------------------------------------------------

test('pay delivers exactly incomingAmount (fixed delivery), completes the payment and closes cleanly', BOUNDED, async () => {
  const payment = await incoming({ incomingAmount: usd(12345) })
  const run = await payInto(payment, { amountToDeliver: 12345 })
  assert.equal(run.error, undefined, `${run.stage}: ${run.error}\n${await run.dump()}`)

  // Same asset on both sides: the probed rate is exactly 1, no max packet amount on this peer.
  assert.equal(run.quote.paymentType, PaymentType.FixedDelivery)
  assert.equal(run.quote.minDeliveryAmount, 12345n)
  assert.equal(run.quote.lowEstimatedExchangeRate.valueOf(), 1)
  assert.equal(run.progress.amountDelivered, 12345n)
  assert.equal(run.progress.amountSent, 12345n)
  assert.equal(run.progress.sourceAmountInFlight, 0n)
  assert.equal(run.plugin.fulfilled().length, 1, 'one money packet')

  assert.equal(await received(payment), '12345')
  assert.equal(await completed(payment), true)

  // closeConnection: one zero-amount ConnectionClose(NoError), answered at once with a ConnectionClose.
  const before = run.plugin.packets.length
  const closed = await Promise.race([
    closeConnection(run.plugin, run.destination).then(() => 'closed'),
    sleep(3000).then(() => 'timed out')
  ])
  assert.equal(closed, 'closed')
  const exchanges = (await run.plugin.decoded(run.sharedSecret)).slice(before)
  assert.equal(exchanges.length, 1, describeExchanges(exchanges))
  const [close] = exchanges
  assert.equal(close.amount, 0n)
  assert.ok(close.request.frames.some((f) => f.type === FrameType.ConnectionClose && f.errorCode === ErrorCode.NoError))
  assert.equal(close.code, 'F99', describeExchanges(exchanges))
  assert.ok(close.reply, 'the reply carries authentic STREAM data')
  assert.equal(close.reply.sequence.toString(), close.request.sequence.toString())
  assert.ok(close.reply.frames.some((f) => f.type === FrameType.ConnectionClose), describeExchanges(exchanges))
  assert.equal(await quiet(run.plugin), before + 1)
  assert.equal(await received(payment), '12345')
})

test("pay's asset probe learns the payment's asset from the receiver", BOUNDED, async () => {
  const payment = await incoming({ incomingAmount: usd(500) })
  const run = await payInto(payment, { amountToDeliver: 500 }, { knownAsset: false })
  assert.equal(run.error, undefined, `${run.stage}: ${run.error}\n${await run.dump()}`)
  assert.deepEqual(run.destination.destinationAsset, USD)
  const exchanges = await run.plugin.decoded(run.sharedSecret)
  const dump = describeExchanges(exchanges)
  // pay's two establishment packets go out together: ConnectionNewAddress("") to the payment's address, answered
  // with the asset, and ConnectionNewAddress("private.SEND_ONLY_CLIENT") to the address with a `_` segment
  // inserted (an Interledger.rs quirk), which is not ours to answer (F06 without STREAM data is fine).
  const newAddress = (e, account) =>
    e.request?.frames.some((f) => f.type === FrameType.ConnectionNewAddress && f.sourceAccount === account)
  const hello = exchanges.find((e) => newAddress(e, ''))
  assert.ok(hello, dump)
  assert.equal(hello.amount, 0n)
  assert.equal(hello.destination, payment.methods[0].ilpAddress)
  const details = hello.reply?.frames.find((f) => f.type === FrameType.ConnectionAssetDetails)
  assert.ok(details, dump)
  assert.equal(details.sourceAssetCode, 'USD')
  assert.equal(details.sourceAssetScale, 2)
  const quirk = exchanges.find((e) => newAddress(e, 'private.SEND_ONLY_CLIENT'))
  assert.ok(quirk, dump)
  assert.notEqual(quirk.code, 'fulfill', dump)
  assert.equal(quirk.reply, undefined, `the \`_\` address is not answered with STREAM data\n${dump}`)
  assert.equal(run.progress.amountDelivered, 500n)
  assert.equal(await received(payment), '500')
  assert.equal(await completed(payment), true)
  await closeConnection(run.plugin, run.destination)
})

test('pay sends a fixed amount M into a payment without incomingAmount: M received', BOUNDED, async () => {
  const payment = await incoming()
  const run = await payInto(payment, { amountToSend: 777 })
  assert.equal(run.error, undefined, `${run.stage}: ${run.error}\n${await run.dump()}`)
  assert.equal(run.quote.paymentType, PaymentType.FixedSend)
  assert.equal(run.quote.maxSourceAmount, 777n)
  assert.equal(run.progress.amountSent, 777n)
  assert.equal(run.progress.amountDelivered, 777n, 'rate 1: every unit sent arrives')
  assert.equal(await received(payment), '777')
  assert.equal(await completed(payment), false, 'no incomingAmount: never completed by money')
  await closeConnection(run.plugin, run.destination)

  // A second fixed send on a new connection adds up.
  const again = await payInto(payment, { amountToSend: 223 })
  assert.equal(again.error, undefined, `${again.stage}: ${again.error}\n${await again.dump()}`)
  assert.equal(await received(payment), '1000')
  await closeConnection(again.plugin, again.destination)
})

test("a peer's max packet amount (F08) splits pay's payment into packets, delivered exactly", BOUNDED, async () => {
  const payment = await incoming({ incomingAmount: usd(12345) })
  const run = await payInto(payment, { amountToDeliver: 12345 }, { token: SMALL_TOKEN })
  assert.equal(run.error, undefined, `${run.stage}: ${run.error}\n${await run.dump()}`)
  assert.equal(run.quote.maxPacketAmount, 1000n, 'the quote found the exact max packet amount')
  // F08 with data (receivedAmount, maximumAmount): the quote can size packets exactly.
  const f08 = run.plugin.packets.map(({ reply }) => parseIlp(reply)).filter((r) => r.code === 'F08')
  assert.ok(f08.length > 0, 'learned from F08')
  for (const { data } of f08) {
    assert.equal(data.length, 16)
    assert.equal(data.readBigUInt64BE(8), 1000n, 'maximumAmount')
  }
  const money = run.plugin.fulfilled()
  assert.equal(money.length, 13)
  assert.ok(money.every(([amount]) => amount <= 1000n), 'every money packet within the max')
  assert.equal(money.reduce((sum, [amount]) => sum + amount, 0n), 12345n)
  assert.equal(run.progress.amountDelivered, 12345n)
  assert.equal(run.progress.amountSent, 12345n)
  assert.equal(await received(payment), '12345')
  assert.equal(await completed(payment), true)
  await closeConnection(run.plugin, run.destination)
})

test('paying a completed payment ends with ClosedByReceiver within seconds and moves nothing', BOUNDED, async () => {
  const payment = await incoming({ incomingAmount: usd(400) })

  // A quote taken while the payment is open (Rafiki quotes, then pays later)...
  const late = await payInto(payment, { amountToDeliver: 400 }, { stopBefore: 'pay' })
  assert.equal(late.error, undefined, `${late.stage}: ${late.error}\n${await late.dump()}`)
  // ...then another sender completes the payment.
  const first = await payInto(payment, { amountToDeliver: 400 })
  assert.equal(first.error, undefined, `${first.stage}: ${first.error}\n${await first.dump()}`)
  await closeConnection(first.plugin, first.destination)
  assert.equal(await completed(payment), true)

  // Paying on the stale quote: the first money packet is refused with F99 + ConnectionClose(ApplicationError).
  const before = late.plugin.packets.length
  const started = Date.now()
  const progress = await pay({ plugin: late.plugin, destination: late.destination, quote: late.quote })
  const took = Date.now() - started
  let dump = await late.dump()
  assert.equal(progress.error, PaymentError.ClosedByReceiver, dump)
  assert.ok(took < 3000, `pay ended after ${took} ms\n${dump}`)
  assert.equal(progress.amountSent, 0n)
  assert.equal(progress.amountDelivered, 0n)
  assert.equal((await quiet(late.plugin)) - before, 1, `one money packet, then pay stopped\n${dump}`)
  const [refused] = (await late.plugin.decoded(late.sharedSecret)).slice(before)
  assert.equal(refused.code, 'F99', dump)
  assert.ok(refused.reply.frames.some((f) => f.type === FrameType.ConnectionClose && f.errorCode === ErrorCode.ApplicationError), dump)

  // A new connection with the same credentials (a sender that cached them): refused already at the rate probe,
  // so startQuote throws.
  const run = await payInto(payment, { amountToDeliver: 100 })
  dump = await run.dump()
  assert.equal(run.stage, 'quote', `${run.stage}: ${run.error}\n${dump}`)
  assert.equal(run.error, PaymentError.ClosedByReceiver, dump)
  assert.ok(run.took < 3000, `pay ended after ${run.took} ms\n${dump}`)
  assert.equal(run.plugin.fulfilled().length, 0, dump)
  // how many of pay's rate probes leave before the first close arrives is pay's timing; none may follow it
  assert.ok((await quiet(run.plugin)) <= PROBE_ROUND, dump)
  assert.equal(await received(payment), '400')
})

test('paying an expired payment ends with ClosedByReceiver within seconds and moves nothing', BOUNDED, async () => {
  const payment = await incoming({ expiresAt: new Date(Date.now() + 1500).toISOString() })
  // Quoted while open, paid after expiry.
  const late = await payInto(payment, { amountToSend: 500 }, { stopBefore: 'pay' })
  assert.equal(late.error, undefined, `${late.stage}: ${late.error}\n${await late.dump()}`)
  while (Date.now() < Date.parse(payment.expiresAt)) await sleep(50)

  const before = late.plugin.packets.length
  const started = Date.now()
  const progress = await pay({ plugin: late.plugin, destination: late.destination, quote: late.quote })
  const took = Date.now() - started
  let dump = await late.dump()
  assert.equal(progress.error, PaymentError.ClosedByReceiver, dump)
  assert.ok(took < 3000, `pay ended after ${took} ms\n${dump}`)
  assert.equal(progress.amountSent, 0n)
  assert.equal((await quiet(late.plugin)) - before, 1, `one money packet, then pay stopped\n${dump}`)

  // A new connection after expiry: startQuote throws.
  const run = await payInto(payment, { amountToSend: 500 })
  dump = await run.dump()
  assert.equal(run.stage, 'quote', `${run.stage}: ${run.error}\n${dump}`)
  assert.equal(run.error, PaymentError.ClosedByReceiver, dump)
  assert.ok(run.took < 3000, `pay ended after ${run.took} ms\n${dump}`)
  assert.equal(run.plugin.fulfilled().length, 0, dump)
  // how many of pay's rate probes leave before the first close arrives is pay's timing; none may follow it
  assert.ok((await quiet(run.plugin)) <= PROBE_ROUND, dump)
  assert.equal(await received(payment), '0')
})

test('asking to deliver more than incomingAmount: IncompatibleReceiveMax at once, nothing moves', BOUNDED, async () => {
  const payment = await incoming({ incomingAmount: usd(1000) })
  const first = await payInto(payment, { amountToDeliver: 300 })
  assert.equal(first.error, undefined, `${first.stage}: ${first.error}\n${await first.dump()}`)
  await closeConnection(first.plugin, first.destination)
  assert.equal(await received(payment), '300')

  // Ask for 1500. The quote only probes (unfulfillable packets), so it succeeds; the money packet (all 1500 at
  // once) is refused with F99 + StreamMaxMoney and pay gives up at once.
  const run = await payInto(payment, { amountToDeliver: 1500 })
  const dump = await run.dump()
  assert.equal(run.stage, 'pay', `failed in ${run.stage}: ${run.error}\n${dump}`)
  assert.equal(run.error, PaymentError.IncompatibleReceiveMax, dump)
  assert.ok(run.took < 3000, `pay ended after ${run.took} ms\n${dump}`)
  assert.equal(run.progress.amountDelivered, 0n)
  assert.equal(run.plugin.fulfilled().length, 0, dump)
  const exchanges = await run.plugin.decoded(run.sharedSecret)
  const money = exchanges.filter((e) => e.request?.frames.some((f) => f.type === FrameType.StreamMoney))
  assert.equal(money.length, 1, dump)
  assert.equal(money[0].code, 'F99', dump)
  assert.ok(money[0].reply?.frames.some((f) => f.type === FrameType.StreamMaxMoney), dump)
  await quiet(run.plugin)
  assert.equal(await received(payment), '300')
  assert.equal(await completed(payment), false)

  // What Rafiki does instead (quote incomingAmount − receivedAmount) still completes the payment.
  const rest = await payInto(payment, { amountToDeliver: 700 })
  assert.equal(rest.error, undefined, `${rest.stage}: ${rest.error}\n${await rest.dump()}`)
  await closeConnection(rest.plugin, rest.destination)
  assert.equal(await received(payment), '1000')
  assert.equal(await completed(payment), true)
})

// StreamMaxMoney is per stream of *this* connection (RFC 29 §5.3.9, STREAM.md §1.6): receiveMax = received on
// this connection + room left, totalReceived = received on this connection. pay 0.4 compares receiveMax alone
// with its own minDeliveryAmount, so payment-wide numbers (receiveMax 1000 with 300 of 1000 received and 900
// asked) made it retry without end and time out; with (700, 0) it stops after one packet.
test('asking for more than the room left (but not more than incomingAmount): IncompatibleReceiveMax at once', BOUNDED, async () => {
  const payment = await incoming({ incomingAmount: usd(1000) })
  const first = await payInto(payment, { amountToDeliver: 300 })
  assert.equal(first.error, undefined, `${first.stage}: ${first.error}\n${await first.dump()}`)
  await closeConnection(first.plugin, first.destination)

  // A second payer reads the payment again, as Open Payments clients do, and gets fresh credentials: a new
  // STREAM connection. (Reusing the first credentials is the same connection, where (1000, 300) is right.)
  // pay would retry for 10 s: the plugin answers F02 itself after 3 s, so the test stays short either way.
  const fresh = await client.incomingPayment.get({ url: payment.id, accessToken: bobIncoming })
  assert.notEqual(fresh.methods[0].ilpAddress, payment.methods[0].ilpAddress)
  const run = await payInto(fresh, { amountToDeliver: 900 }, { cutOffAfter: 3000 })
  const exchanges = await run.plugin.decoded(run.sharedSecret)
  const money = exchanges.filter((e) => e.request?.frames.some((f) => f.type === FrameType.StreamMoney))
  const summary = `${run.stage}: ${run.error} after ${run.took} ms, ${money.length} money packets` +
    ` (${run.plugin.cutOff} cut off by the test)\n${describeExchanges(exchanges.slice(0, 5))}`
  assert.equal(await received(payment), '300', summary)
  const max = money[0]?.reply?.frames.find((f) => f.type === FrameType.StreamMaxMoney)
  assert.equal(`${max?.receiveMax}/${max?.totalReceived}`, '700/0', `StreamMaxMoney receiveMax/totalReceived\n${summary}`)
  assert.equal(run.error, PaymentError.IncompatibleReceiveMax, summary)
  assert.equal(money.length, 1, summary)
})

test('more than the room left in packets of 1000: the packets that fit land, never above incomingAmount', BOUNDED, async () => {
  const payment = await incoming({ incomingAmount: usd(1500) })
  const run = await payInto(payment, { amountToDeliver: 2500 }, { token: SMALL_TOKEN })
  const dump = await run.dump()
  assert.equal(run.stage, 'pay', `failed in ${run.stage}: ${run.error}\n${dump}`)
  assert.equal(run.quote.maxPacketAmount, 1000n)
  assert.equal(run.error, PaymentError.IncompatibleReceiveMax, dump)
  assert.ok(run.took < 3000, `pay ended after ${run.took} ms\n${dump}`)
  await quiet(run.plugin)
  const got = BigInt(await received(payment))
  assert.ok(got <= 1500n, `received ${got} of incomingAmount 1500\n${dump}`)
  // pay's own account of what arrived matches the receiver's.
  const fulfilled = run.plugin.fulfilled().reduce((sum, [amount]) => sum + amount, 0n)
  assert.equal(fulfilled, got, dump)
  assert.equal(run.progress.amountDelivered, got, dump)
  assert.equal(await completed(payment), got === 1500n)
})
