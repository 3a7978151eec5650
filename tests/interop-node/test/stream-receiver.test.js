// STREAM sender interop with Rafiki's receiver: opdesk pays incoming payments on a stand-in "remote ASE" whose
// `POST /ilp` hands each Prepare to `@interledger/stream-receiver` 0.3.3-alpha.4 (the version Rafiki pins):
// `StreamServer.createReply`, then `accept()` for money to a known, not yet completed payment. The incoming
// payments' `methods[ilp]` come from `generateCredentials({ paymentTag: id, asset })`, as Rafiki makes them;
// what each payment received is counted from the Fulfills the stand-in sent, not from what opdesk reports.
// This receiver refuses what it will not fulfil with F05 (the hello and the rate probes: unfulfillable) and
// F04 (less arrived than the packet's minimum), each with a STREAM reply; F99 answers ConnectionClose only
// (and `finalDecline`, unused here). Older receivers (0.2.2 to 0.3.3-alpha.3) answer F99 to all of these.
//
// Checked: fixed receive (quote `receiveAmount` = the payment's `incomingAmount`) delivers exactly that amount,
// completing the payment, also through a path that converts at 0.995 before the receiver (as Rafiki's connector
// does); fixed send (quote `debitAmount`, open-ended payment) sends the whole debit amount and the receiver gets
// what it buys, at least the quote's `receiveAmount` (Rafiki stops at that amount: see COMPATIBILITY.md); opdesk's `sentAmount` is the source of the fulfilled packets; packets stay within the peer's max packet
// amount; the probes were refused with F05. A rate that falls below the minimum after the quote is refused
// with F04 and fails the payment as `rate_too_low` after one packet, nothing delivered and nothing left held.
// This receiver reports no total for the connection (no `StreamMaxMoney`), so opdesk sends one packet at a time.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { StreamServer } from '@interledger/stream-receiver'
import { deserializeIlpPrepare, isIlpReply, isFulfill, serializeIlpReply } from 'ilp-packet'
import { payRemote, peerConfig, sdkClients, startOpdesk, startRemoteAse } from './harness.js'

const TOKEN = 'opdesk-to-stream-receiver-token-42'
const MAX_PACKET = 400

let node // { base, close }
let ase
let client

/**
 * Per incoming payment id: { incomingAmount?, received, rate? }. `rate` ([num, den], default 1:1) converts each
 * Prepare's amount (rounded down) before the receiver sees it, as Rafiki's connector does for cross-currency.
 */
const payments = new Map()
/** Prepares in the stand-in at once: now, and the most so far. */
const flight = { now: 0, max: 0 }
/** Every Prepare the stand-in answered: { sent, amount (after conversion), tag, reply: 'fulfill' | code, streamReply }. */
const log = []

async function startNode() {
  const receiver = new StreamServer({ serverSecret: Buffer.alloc(32, 9), serverAddress: 'test.node' })
  const answer = (prepare) => {
    const moneyOrReply = receiver.createReply(prepare)
    if (isIlpReply(moneyOrReply)) return moneyOrReply
    const p = payments.get(moneyOrReply.paymentTag)
    if (!p || (p.incomingAmount !== undefined && p.received >= p.incomingAmount)) return moneyOrReply.finalDecline()
    p.received += Number(prepare.amount)
    return moneyOrReply.accept()
  }
  return startRemoteAse({
    token: TOKEN,
    payments,
    ilp: async (bytes) => {
      // each Prepare waits a moment before the receiver sees it, so packets sent together would overlap here
      flight.now += 1
      flight.max = Math.max(flight.max, flight.now)
      await new Promise((resolve) => setTimeout(resolve, 3))
      flight.now -= 1
      const prepare = deserializeIlpPrepare(bytes)
      const tag = receiver.decodePaymentTag(prepare.destination)
      const sent = BigInt(prepare.amount)
      const [num, den] = payments.get(tag)?.rate ?? [1n, 1n]
      prepare.amount = String((sent * num) / den)
      const reply = answer(prepare)
      log.push({
        sent,
        amount: BigInt(prepare.amount),
        tag,
        reply: isFulfill(reply) ? 'fulfill' : reply.code,
        streamReply: reply.data.length > 0
      })
      return serializeIlpReply(reply)
    },
    method: (id) => {
      const { ilpAddress, sharedSecret } = receiver.generateCredentials({
        paymentTag: id,
        asset: { code: 'USD', scale: 2 }
      })
      return { ilpAddress, sharedSecret: sharedSecret.toString('base64url') }
    }
  })
}

before(async () => {
  node = await startNode()
  ase = await startOpdesk(
    peerConfig({ endpoint: `${node.base}/ilp`, token: TOKEN, route: 'test.node', maxPacketAmount: MAX_PACKET })
  )
  ;({ client } = await sdkClients(ase))
}, { timeout: 30000 })

after(async () => {
  await ase?.stop()
  await node?.close()
})

const show = (v) => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? String(x) : x))

/** What the stand-in answered for payment `id`, split into probes/hello/close (unfulfilled) and money. */
function exchanges(id) {
  const mine = log.filter((e) => e.tag === id)
  const fulfilled = mine.filter((e) => e.reply === 'fulfill' && e.amount > 0n)
  const sum = (k) => fulfilled.reduce((s, e) => s + e[k], 0n)
  return { mine, fulfilled, arrived: sum('amount'), sent: sum('sent') }
}

/** The stand-in's public GET, as anyone reads it. */
async function publicReceived(id) {
  const r = await fetch(`${node.base}/incoming-payments/${id}`, { signal: AbortSignal.timeout(5000) })
  return (await r.json()).receivedAmount.value
}

function assertPackets(id) {
  const { mine, fulfilled } = exchanges(id)
  assert.ok(mine.every((e) => e.sent <= BigInt(MAX_PACKET)), `packets within the max: ${mine.map((e) => e.sent)}`)
  assert.ok(fulfilled.length >= 3, `split into packets: ${show(mine)}`)
  // the rate probes (unfulfillable, with money) were refused with F05 and a STREAM reply, and opdesk went on
  const probes = mine.filter((e) => e.sent > 0n && e.reply !== 'fulfill')
  assert.ok(probes.length >= 1, 'opdesk probed the rate')
  assert.ok(probes.every((e) => e.reply === 'F05' && e.streamReply), show(probes))
  assert.ok(!mine.some((e) => e.reply === 'F04'), 'no packet delivered less than its minimum')
}

test('fixed receive: opdesk delivers exactly the incomingAmount to a @interledger/stream-receiver receiver', { timeout: 60000 }, async () => {
  payments.set('fr1', { incomingAmount: 1234, received: 0 })
  flight.max = 0
  const { quote, view } = await payRemote(ase, client, `${node.base}/incoming-payments/fr1`, {
    receiveAmount: { value: '1234', assetCode: 'USD', assetScale: 2 }
  })
  assert.equal(quote.receiveAmount.value, '1234')
  assert.equal(quote.debitAmount.value, '1247', 'ceil(1234 / 0.99)')
  assert.equal(view.state, 'completed', JSON.stringify(view))
  // what the receiver fulfilled, counted on its side
  const { arrived } = exchanges('fr1')
  assert.ok(arrived > 0n, 'money arrived at the receiver')
  assert.equal(payments.get('fr1').received, 1234)
  assert.equal(arrived, 1234n)
  assert.equal(await publicReceived('fr1'), '1234')
  // opdesk's account agrees with the receiver's and with the quote
  assert.equal(view.receiveAmount.value, '1234')
  assert.equal(view.sentAmount.value, '1234', 'the path converts 1:1')
  assert.ok(BigInt(view.sentAmount.value) <= BigInt(quote.debitAmount.value))
  assertPackets('fr1')
  // this receiver reports no total for the connection, so a crash could not be reconciled from its word:
  // opdesk keeps one packet in flight at a time
  assert.equal(flight.max, 1, 'one packet in flight at a time')
})

test('fixed send: opdesk sends the whole debitAmount, and the receiver gets what it buys (at least the quoted receiveAmount)', { timeout: 60000 }, async () => {
  payments.set('fs1', { received: 0 })
  const { quote, view } = await payRemote(ase, client, `${node.base}/incoming-payments/fs1`, {
    debitAmount: { value: '1000', assetCode: 'USD', assetScale: 2 }
  })
  assert.equal(quote.debitAmount.value, '1000')
  assert.equal(quote.receiveAmount.value, '990', 'floor(1000 × 0.99): the least it may deliver')
  assert.equal(view.state, 'completed', JSON.stringify(view))
  const { arrived, sent } = exchanges('fs1')
  assert.equal(sent, 1000n, 'the whole debit amount went out')
  assert.equal(arrived, 1000n, 'and on a 1:1 path all of it arrived')
  assert.equal(payments.get('fs1').received, 1000)
  assert.equal(await publicReceived('fs1'), '1000')
  assert.equal(view.debitAmount.value, '1000')
  assert.equal(view.receiveAmount.value, '990')
  assert.equal(view.sentAmount.value, view.debitAmount.value, 'sentAmount reaches debitAmount')
  assertPackets('fs1')
})

test('fixed receive through a converting path (0.995): exactly the incomingAmount arrives, sentAmount is what was fulfilled', { timeout: 60000 }, async () => {
  payments.set('fr2', { incomingAmount: 1500, received: 0, rate: [995n, 1000n] })
  const { quote, view } = await payRemote(ase, client, `${node.base}/incoming-payments/fr2`)
  assert.equal(quote.receiveAmount.value, '1500', 'the incomingAmount')
  assert.equal(quote.debitAmount.value, '1516', 'ceil(1500 / 0.99): priced at the minimum rate')
  assert.equal(view.state, 'completed', JSON.stringify(view))
  const { arrived, sent } = exchanges('fr2')
  assert.ok(arrived > 0n, 'money arrived at the receiver')
  assert.equal(payments.get('fr2').received, 1500)
  assert.equal(arrived, 1500n)
  assert.equal(await publicReceived('fr2'), '1500')
  assert.equal(view.receiveAmount.value, '1500')
  assert.equal(view.sentAmount.value, String(sent), 'sentAmount = the source of the fulfilled packets')
  assert.ok(sent > arrived && sent <= BigInt(quote.debitAmount.value), `sent ${sent}`)
  assertPackets('fr2')
})

test('a rate that falls below the minimum after the quote: F04 with a STREAM reply fails the payment as rate_too_low', { timeout: 60000 }, async () => {
  payments.set('fr3', { incomingAmount: 1000, received: 0 })
  const { view } = await payRemote(ase, client, `${node.base}/incoming-payments/fr3`, {}, {
    afterQuote: () => { payments.get('fr3').rate = [9n, 10n] }
  })
  assert.equal(view.state, 'failed', JSON.stringify(view))
  assert.equal(view.failureReason, 'rate_too_low', JSON.stringify(view))
  assert.equal(payments.get('fr3').received, 0)
  assert.equal(view.sentAmount.value, '0')
  const { mine } = exchanges('fr3')
  const refused = mine.filter((e) => e.reply === 'F04')
  assert.equal(refused.length, 1, `one packet, then opdesk stopped: ${show(mine)}`)
  assert.ok(refused[0].streamReply)
  const balances = await ase.admin('GET', '/balances')
  const sums = {}
  for (const b of balances.body) sums[b.assetCode] = (sums[b.assetCode] ?? 0) + b.balance
  assert.ok(Object.values(sums).every((v) => v === 0), JSON.stringify(sums))
})
