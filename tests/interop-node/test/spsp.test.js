// SPSP receive interop (RFC 9 as the reference ASE serves it; RFC 39 receipts): a wallet address asked with
// `Accept: application/spsp4+json` answers STREAM credentials paying into the wallet itself; real senders pay
// through `POST /ilp` with a peer's bearer token (./ilp-plugin.js).
//
// Checked: ilp-protocol-stream 2.7.2-alpha.3 with credentials discovered by the Accept header (and a receipt
// nonce and secret in `Receipt-Nonce`/`Receipt-Secret`) delivers exactly N into the wallet's balance, and the
// stream's last receipt verifies with ilp-protocol-stream's own `verifyReceipt` against the secret, for the
// total delivered; @interledger/pay, asking with its own Accept header (`application/json,
// application/spsp4+json`), pays a fixed amount exactly; a `walletReceived` webhook-grade event (durable, in
// `GET /admin/events`) announces each connection's total; one receipt header alone is a 400; a plain GET is
// still the Open Payments document the SDK validates.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, test } from 'node:test'
import { createConnection, verifyReceipt } from 'ilp-protocol-stream'
import { pay, setupPayment, startQuote } from '@interledger/pay'
import { sdkClients, startOpdesk } from './harness.js'
import { HttpPlugin } from './ilp-plugin.js'

const TOKEN = 'spsp-peer-token-0123456789'

const CONFIG = `
[[ilp.peers]]
name = "spsp-sender"
incoming_tokens = ["${TOKEN}"]
asset_code = "USD"
asset_scale = 2
`

const SPSP = 'application/spsp4+json'
const USD = { code: 'USD', scale: 2 }

let ase
let open

before(async () => {
  ase = await startOpdesk(CONFIG)
  ;({ open } = await sdkClients(ase))
})

after(async () => {
  await ase?.stop()
})

async function spspQuery(wallet, headers = {}) {
  const res = await fetch(`${ase.base}/${wallet}`, { headers: { accept: SPSP, ...headers } })
  const text = await res.text()
  return { status: res.status, type: res.headers.get('content-type'), body: text ? JSON.parse(text) : null }
}

async function balance(wallet) {
  const { status, body } = await ase.admin('GET', `/wallets/${wallet}`)
  assert.equal(status, 200)
  return BigInt(body.balance.balance)
}

/** The durable `walletReceived` events of `wallet` so far, replayed from the outbox. */
async function walletReceived(wallet) {
  const res = await fetch(`${ase.base}/admin/events?after=0`, {
    headers: { authorization: `Bearer ${ase.adminToken}` },
    signal: AbortSignal.timeout(1500)
  })
  let text = ''
  try {
    for await (const chunk of res.body) text += Buffer.from(chunk).toString()
  } catch {
    // the stream stays open: the timeout ends the read
  }
  return text
    .split('\n\n')
    .map((block) => block.split('\n').find((l) => l.startsWith('data:')))
    .filter(Boolean)
    .map((l) => JSON.parse(l.slice(5)))
    .filter((r) => r.event.type === 'walletReceived' && r.event.wallet === wallet)
}

async function eventually(what, check, ms = 10000) {
  const until = Date.now() + ms
  for (;;) {
    const got = await check()
    if (got) return got
    if (Date.now() > until) assert.fail(`${what} within ${ms} ms`)
    await new Promise((r) => setTimeout(r, 250))
  }
}

test('ilp-protocol-stream pays a wallet found by SPSP, with receipts that verify', async () => {
  const nonce = randomBytes(16)
  const secret = randomBytes(32)
  const spsp = await spspQuery('bob', {
    'receipt-nonce': nonce.toString('base64'),
    'receipt-secret': secret.toString('base64')
  })
  assert.equal(spsp.status, 200)
  assert.equal(spsp.type, SPSP)
  assert.equal(spsp.body.receipts_enabled, true)
  assert.match(spsp.body.destination_account, /^test\.opdesk\.[A-Za-z0-9_-]+$/)
  assert.match(spsp.body.shared_secret, /^[A-Za-z0-9_-]{43}$/, 'base64url, 32 bytes')

  const before = await balance('bob')
  const plugin = new HttpPlugin({ url: `${ase.base}/ilp`, token: TOKEN })
  const connection = await createConnection({
    plugin,
    destinationAccount: spsp.body.destination_account,
    sharedSecret: Buffer.from(spsp.body.shared_secret, 'base64'),
    slippage: 0
  })
  assert.equal(connection.destinationAssetCode, 'USD')
  assert.equal(connection.destinationAssetScale, 2)
  const stream = connection.createStream()
  await stream.sendTotal(4321, { timeout: 10000 })
  assert.equal(connection.totalDelivered, '4321')
  assert.ok(stream.receipt, 'the stream holds a receipt')
  const receipt = verifyReceipt(stream.receipt, secret)
  assert.equal(receipt.version, 1)
  assert.ok(receipt.nonce.equals(nonce))
  assert.equal(receipt.streamId.toString(), '1')
  assert.equal(receipt.totalReceived.toString(), '4321')
  assert.throws(() => verifyReceipt(stream.receipt, randomBytes(32)), /invalid hmac/)
  await connection.end()
  assert.equal(await balance('bob'), before + 4321n)

  const events = await eventually('walletReceived for 4321', async () => {
    const got = await walletReceived('bob')
    const sum = got.reduce((s, r) => s + r.event.amount, 0)
    return sum === 4321 ? got : undefined
  })
  assert.ok(events.every((r) => Number.isInteger(r.seq) && r.event.assetCode === 'USD' && r.event.assetScale === 2))
  assert.equal(events.at(-1).event.received, 4321)
})

test('@interledger/pay pays a fixed amount into SPSP credentials asked for with its own Accept header', async () => {
  const res = await fetch(`${ase.base}/alice`, { headers: { accept: 'application/json, application/spsp4+json' } })
  assert.equal(res.headers.get('content-type'), SPSP)
  const spsp = await res.json()
  assert.equal(spsp.receipts_enabled, false)
  const before = await balance('alice')
  const plugin = new HttpPlugin({ url: `${ase.base}/ilp`, token: TOKEN })
  const destination = await setupPayment({
    plugin,
    destinationAddress: spsp.destination_account,
    sharedSecret: Buffer.from(spsp.shared_secret, 'base64'),
    destinationAsset: USD
  })
  const quote = await startQuote({ plugin, destination, sourceAsset: USD, amountToSend: 750 })
  const progress = await pay({ plugin, destination, quote })
  assert.equal(progress.error, undefined, String(progress.error))
  assert.equal(progress.amountDelivered, 750n)
  assert.equal(await balance('alice'), before + 750n)
})

test('receipt headers come in pairs; the plain document is unchanged; unknown wallets are 404', async () => {
  const alone = await spspQuery('bob', { 'receipt-nonce': randomBytes(16).toString('base64') })
  assert.equal(alone.status, 400)
  assert.equal(alone.body.error.code, 'invalid_request')
  assert.equal((await spspQuery('nobody-here')).status, 404)
  // the SDK validates the document a plain GET answers
  const doc = await open.walletAddress.get({ url: `${ase.base}/bob` })
  assert.equal(doc.id, `${ase.base}/bob`)
})
