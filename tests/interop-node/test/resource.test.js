// The resource server (incoming payments, quotes, outgoing payments, grant spent amounts) driven by the
// official Node SDK with response validation on: every SDK call, list pagination in both directions, and the
// Open Payments guides (fixed-send remittance, fixed-receive, recurring payments with an interval limit,
// split payments) end to end over GNAP with operator approval.
//
// Repeated signatures: the SDK signs with 1-second `created` and no nonce, so identical requests within a
// second carry the same signature. opdesk takes identical incoming-payment and quote creates as new requests
// and answers a repeated outgoing-payment create with the original payment (tested below and in the Rust
// security suite); bodies below are still made distinct (`metadata: {n}`) so each test reads on its own.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, test as nodeTest } from 'node:test'
import {
  isFinalizedGrant,
  isPendingGrant
} from '@interledger/open-payments'
import { sdkClients, startOpdesk } from './harness.js'

let ase
let client // authenticated as demo-client
let open // unauthenticated
let alice
let bob
let carol
let bobIncoming // incoming-payment grant token for bob
let carolIncoming // incoming-payment grant token for carol
let aliceQuotes // quote grant token for alice

let seq = 0
const next = () => ++seq

before(async () => {
  ase = await startOpdesk()
  ;({ open, client } = await sdkClients(ase))
  alice = await client.walletAddress.get({ url: `${ase.base}/alice` })
  bob = await client.walletAddress.get({ url: `${ase.base}/bob` })
  carol = await client.walletAddress.get({ url: `${ase.base}/carol` })
  bobIncoming = await incomingToken(bob)
  carolIncoming = await incomingToken(carol)
  aliceQuotes = await quoteToken(alice)
})

after(async () => {
  await ase?.stop()
})

// ---------------------------------------------------------------------------------------------------------
// helpers

/** node:test's `test`, with the HTTP status, description and validation errors of SDK errors in the message. */
const test = (name, fn) =>
  nodeTest(name, async (t) => {
    try {
      await fn(t)
    } catch (e) {
      if (e?.name === 'OpenPaymentsClientError') {
        e.message += ` (HTTP ${e.status ?? '-'}: ${e.description}${e.validationErrors ? ` ${JSON.stringify(e.validationErrors)}` : ''})`
      }
      throw e
    }
  })

const amount = (value, w) => ({ value: String(value), assetCode: w.assetCode, assetScale: w.assetScale })
const zero = (w) => amount(0, w)
const isoSeconds = (ms) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.000Z$/, 'Z')

/** Awaits `promise` and expects the SDK to throw with one of `statuses`; fails with what happened otherwise. */
async function refused(promise, statuses, what) {
  let value
  try {
    value = await promise
  } catch (e) {
    if (statuses.includes(e.status)) return e
    assert.fail(
      `${what}: expected HTTP ${statuses.join(' or ')}, got ${e.status ?? 'no status'}: ${e.description ?? e.message}` +
        (e.validationErrors ? ` ${JSON.stringify(e.validationErrors)}` : '')
    )
  }
  assert.fail(`${what}: expected HTTP ${statuses.join(' or ')}, but the server accepted it: ${JSON.stringify(value)}`)
}

async function incomingToken(wallet, actions = ['create', 'read', 'list', 'complete']) {
  const grant = await client.grant.request(
    { url: wallet.authServer },
    { access_token: { access: [{ type: 'incoming-payment', actions, identifier: wallet.id }] } }
  )
  assert.ok(isFinalizedGrant(grant), 'incoming-payment grants are issued at once')
  return grant.access_token.value
}

async function quoteToken(wallet) {
  const grant = await client.grant.request(
    { url: wallet.authServer },
    { access_token: { access: [{ type: 'quote', actions: ['create', 'read'] }] } }
  )
  assert.ok(isFinalizedGrant(grant), 'quote grants are issued at once')
  return grant.access_token.value
}

async function pendingIds() {
  const { status, body } = await ase.admin('GET', '/grants?state=pending')
  assert.equal(status, 200)
  return new Set(body.map((g) => g.id))
}

/**
 * An outgoing-payment grant on `wallet` (default alice): requested with a finish redirect, approved by the
 * operator through the admin API, the interaction followed to its redirect for `interact_ref`, continued.
 */
async function outgoingGrant(limits, { wallet = alice, actions = ['create', 'read', 'list'] } = {}) {
  const item = { type: 'outgoing-payment', actions, identifier: wallet.id }
  if (limits) item.limits = limits
  const before = await pendingIds()
  const pending = await client.grant.request(
    { url: wallet.authServer },
    {
      access_token: { access: [item] },
      interact: { start: ['redirect'], finish: { method: 'redirect', uri: 'http://127.0.0.1:9/finish', nonce: randomUUID() } }
    }
  )
  assert.ok(isPendingGrant(pending), 'outgoing-payment grants need the operator')
  const fresh = [...(await pendingIds())].filter((id) => !before.has(id))
  assert.equal(fresh.length, 1, 'exactly one new pending grant')
  const approved = await ase.admin('POST', `/grants/${fresh[0]}/approve`, {})
  assert.equal(approved.status, 200)
  const res = await fetch(pending.interact.redirect, { redirect: 'manual' })
  assert.ok([302, 303].includes(res.status), `interaction redirects after approval (got ${res.status})`)
  const interactRef = new URL(res.headers.get('location')).searchParams.get('interact_ref')
  assert.ok(interactRef)
  const grant = await client.grant.continue(
    { url: pending.continue.uri, accessToken: pending.continue.access_token.value },
    { interact_ref: interactRef }
  )
  assert.ok(isFinalizedGrant(grant))
  return grant
}

async function createIncoming(wallet, token, body = {}) {
  return client.incomingPayment.create(
    { url: wallet.resourceServer, accessToken: token },
    { walletAddress: wallet.id, metadata: { n: next() }, ...body }
  )
}

async function createQuote(receiver, extra = {}, { wallet = alice, token = aliceQuotes } = {}) {
  return client.quote.create(
    { url: wallet.resourceServer, accessToken: token },
    { walletAddress: wallet.id, receiver, method: 'ilp', ...extra }
  )
}

async function createOutgoing(grant, body, wallet = alice) {
  return client.outgoingPayment.create(
    { url: wallet.resourceServer, accessToken: grant.access_token.value },
    { walletAddress: wallet.id, ...body }
  )
}

const spentAmounts = (grant, wallet = alice) =>
  client.outgoingPayment.getGrantSpentAmounts({ url: wallet.resourceServer, accessToken: grant.access_token.value })

/** Checks the 201 shape of a new outgoing payment and its fields against what it was made from. */
function checkNewOutgoing(op, { receiver, debitAmount, receiveAmount, quoteId, metadata }) {
  assert.ok(op.id.startsWith(`${ase.base}/outgoing-payments/`), op.id)
  assert.equal(op.walletAddress, alice.id)
  assert.equal(op.receiver, receiver)
  if (debitAmount) assert.deepEqual(op.debitAmount, debitAmount)
  if (receiveAmount) assert.deepEqual(op.receiveAmount, receiveAmount)
  if (quoteId) assert.equal(op.quoteId, quoteId)
  if (metadata) assert.deepEqual(op.metadata, metadata)
  assert.deepEqual(op.sentAmount, zero(alice))
  assert.equal(op.failed ?? false, false)
  assert.ok(!Number.isNaN(Date.parse(op.createdAt)))
}

/** `grantSpentDebitAmount`/`grantSpentReceiveAmount` on a create: the grant's total before or after this payment. */
function checkGrantSpent(op, debitBefore, receiveBefore = debitBefore) {
  for (const [k, before, own] of [
    ['grantSpentDebitAmount', debitBefore, op.debitAmount],
    ['grantSpentReceiveAmount', receiveBefore, op.receiveAmount]
  ]) {
    if (op[k] === undefined) continue
    assert.equal(op[k].assetCode, own.assetCode, k)
    assert.equal(op[k].assetScale, own.assetScale, k)
    const v = BigInt(op[k].value)
    assert.ok(v === before || v === before + BigInt(own.value), `${k} = ${v}, expected ${before} or ${before + BigInt(own.value)}`)
  }
}

const sumOf = (amounts) => amounts.reduce((s, a) => s + BigInt(a.value), 0n).toString()

/** The spent debit amount of a grant must be the sum of the debit amounts of its payments that did not fail. */
async function checkSpent(grant, payments, { receiveAsset } = {}) {
  const current = await Promise.all(
    payments.map((p) => client.outgoingPayment.get({ url: p.id, accessToken: grant.access_token.value }))
  )
  const live = current.filter((p) => !p.failed)
  const spent = await spentAmounts(grant)
  assert.deepEqual(spent.spentDebitAmount, amount(sumOf(live.map((p) => p.debitAmount)), alice))
  if (receiveAsset) {
    assert.deepEqual(spent.spentReceiveAmount, amount(sumOf(live.map((p) => p.receiveAmount)), receiveAsset))
  }
  return spent
}

// ---------------------------------------------------------------------------------------------------------
// 1. incoming payments

test('incoming payment: create (bare, with amount, expiry and metadata), get, getPublic, complete', async () => {
  const bare = await client.incomingPayment.create({ url: bob.resourceServer, accessToken: bobIncoming }, { walletAddress: bob.id })
  assert.ok(bare.id.startsWith(`${ase.base}/incoming-payments/`), bare.id)
  assert.equal(bare.walletAddress, bob.id)
  assert.deepEqual(bare.receivedAmount, zero(bob))
  assert.equal(bare.completed, false)
  assert.equal(bare.incomingAmount, undefined)
  assert.ok(Array.isArray(bare.methods))
  for (const m of bare.methods) assert.equal(m.type, 'ilp')
  assert.ok(!Number.isNaN(Date.parse(bare.createdAt)))

  const expiresAt = new Date(Math.floor(Date.now() / 1000) * 1000 + 3600_000).toISOString()
  const metadata = { description: 'Invoice 42', externalRef: 'INV-42', nested: { k: [1, 2] } }
  const full = await client.incomingPayment.create(
    { url: bob.resourceServer, accessToken: bobIncoming },
    { walletAddress: bob.id, incomingAmount: amount(2500, bob), expiresAt, metadata }
  )
  assert.notEqual(full.id, bare.id)
  assert.deepEqual(full.incomingAmount, amount(2500, bob))
  assert.deepEqual(full.receivedAmount, zero(bob))
  assert.equal(full.completed, false)
  assert.equal(Date.parse(full.expiresAt), Date.parse(expiresAt))
  assert.deepEqual(full.metadata, metadata)
  assert.ok(Array.isArray(full.methods))

  // authenticated GET: with methods, the same resource
  const got = await client.incomingPayment.get({ url: full.id, accessToken: bobIncoming })
  assert.ok(Array.isArray(got.methods))
  for (const k of ['id', 'walletAddress', 'incomingAmount', 'receivedAmount', 'completed', 'metadata', 'createdAt']) {
    assert.deepEqual(got[k], full[k], k)
  }
  assert.equal(Date.parse(got.expiresAt), Date.parse(expiresAt))

  // public view, without Authorization, from both clients
  for (const pub of [await client.incomingPayment.getPublic({ url: full.id }), await open.incomingPayment.get({ url: full.id })]) {
    assert.equal(pub.authServer, bob.authServer)
    assert.deepEqual(pub.receivedAmount, zero(bob))
    assert.equal(pub.metadata, undefined, 'the public view does not leak metadata')
    assert.equal(pub.incomingAmount, undefined, 'the public view does not leak the amount')
    assert.equal(pub.methods, undefined, 'the public view does not leak payment methods')
  }

  // complete: plain incoming payment, completed
  const done = await client.incomingPayment.complete({ url: full.id, accessToken: bobIncoming })
  assert.equal(done.id, full.id)
  assert.equal(done.completed, true)
  assert.equal(done.methods, undefined)
  assert.equal((await client.incomingPayment.get({ url: full.id, accessToken: bobIncoming })).completed, true)
})

test('incoming payment: identical creates in the same second are distinct invoices', async () => {
  const body = { walletAddress: bob.id, incomingAmount: amount(700, bob), metadata: { description: 'same invoice' } }
  const made = await Promise.all(
    Array.from({ length: 5 }, () => client.incomingPayment.create({ url: bob.resourceServer, accessToken: bobIncoming }, body))
  )
  assert.equal(new Set(made.map((p) => p.id)).size, 5, 'five payments, none refused as a replay')
  const quotes = await Promise.all(
    Array.from({ length: 3 }, () =>
      client.quote.create({ url: alice.resourceServer, accessToken: aliceQuotes }, { walletAddress: alice.id, receiver: made[0].id, method: 'ilp', debitAmount: amount(100, alice) })
    )
  )
  assert.equal(new Set(quotes.map((q) => q.id)).size, 3, 'three quotes')
})

test('incoming payment: refusals (wrong asset, unknown id, wrong token, wrong wallet)', async () => {
  await refused(
    createIncoming(bob, bobIncoming, { incomingAmount: amount(100, carol) }),
    [400],
    'incomingAmount in another asset than the wallet'
  )
  await refused(
    client.incomingPayment.get({ url: `${ase.base}/incoming-payments/${randomUUID()}`, accessToken: bobIncoming }),
    [401, 403, 404],
    'GET of an unknown incoming payment'
  )
  const ip = await createIncoming(bob, bobIncoming)
  await refused(client.incomingPayment.get({ url: ip.id, accessToken: 'not-a-token' }), [401, 403], 'GET with a bad token')
  await refused(client.incomingPayment.get({ url: ip.id, accessToken: aliceQuotes }), [401, 403], 'GET with a quote token')
  await refused(createIncoming(carol, bobIncoming), [401, 403], 'create on carol with a token for bob')
})

test('incoming payment: list pages forward and backward, newest first', async () => {
  const name = `pager${Date.now()}`
  const made = await ase.admin('POST', '/wallets', { name, assetCode: 'USD', assetScale: 2 })
  assert.ok([200, 201].includes(made.status), `admin wallet create: ${made.status} ${JSON.stringify(made.body)}`)
  const pager = await client.walletAddress.get({ url: `${ase.base}/${name}` })
  const token = await incomingToken(pager)
  const args = { url: pager.resourceServer, walletAddress: pager.id, accessToken: token }

  const empty = await client.incomingPayment.list(args, { first: 3 })
  assert.deepEqual(empty, { pagination: { hasNextPage: false, hasPreviousPage: false }, result: [] })

  const ids = []
  for (let i = 0; i < 7; i++) {
    ids.push((await client.incomingPayment.create(args, { walletAddress: pager.id, metadata: { n: i } })).id)
  }
  const newestFirst = [...ids].reverse()
  const ns = (page) => page.result.map((p) => p.metadata.n)

  const all = await client.incomingPayment.list(args)
  assert.deepEqual(all.result.map((p) => p.id), newestFirst)
  assert.equal(all.pagination.hasNextPage, false)
  assert.equal(all.pagination.hasPreviousPage, false)
  for (const p of all.result) {
    assert.equal(p.walletAddress, pager.id)
    assert.equal(p.methods, undefined, 'list items carry no methods')
  }

  // forward with first=3
  const p1 = await client.incomingPayment.list(args, { first: 3 })
  assert.deepEqual(ns(p1), [6, 5, 4])
  assert.equal(p1.pagination.hasNextPage, true)
  assert.equal(p1.pagination.hasPreviousPage, false)
  assert.ok(p1.pagination.startCursor && p1.pagination.endCursor)
  const p2 = await client.incomingPayment.list(args, { first: 3, cursor: p1.pagination.endCursor })
  assert.deepEqual(ns(p2), [3, 2, 1])
  assert.equal(p2.pagination.hasNextPage, true)
  assert.equal(p2.pagination.hasPreviousPage, true)
  const p3 = await client.incomingPayment.list(args, { first: 3, cursor: p2.pagination.endCursor })
  assert.deepEqual(ns(p3), [0])
  assert.equal(p3.pagination.hasNextPage, false)
  assert.equal(p3.pagination.hasPreviousPage, true)
  const seen = [...p1.result, ...p2.result, ...p3.result].map((p) => p.id)
  assert.deepEqual(seen, newestFirst, 'every payment exactly once, newest first')

  // backward with last=3 from the start of the last page
  const b1 = await client.incomingPayment.list(args, { last: 3, cursor: p3.pagination.startCursor })
  assert.deepEqual(ns(b1), [3, 2, 1])
  assert.equal(b1.pagination.hasNextPage, true)
  assert.equal(b1.pagination.hasPreviousPage, true)
  const b2 = await client.incomingPayment.list(args, { last: 3, cursor: b1.pagination.startCursor })
  assert.deepEqual(ns(b2), [6, 5, 4])
  assert.equal(b2.pagination.hasNextPage, true)
  assert.equal(b2.pagination.hasPreviousPage, false)

  // a page past the end is empty, with no cursors
  const past = await client.incomingPayment.list(args, { first: 3, cursor: p3.pagination.endCursor })
  assert.deepEqual(past.result, [])
  assert.equal(past.pagination.hasNextPage, false)
  assert.equal(past.pagination.startCursor, undefined)
  assert.equal(past.pagination.endCursor, undefined)

  // someone else's token cannot list this wallet
  await refused(
    client.incomingPayment.list({ ...args, accessToken: bobIncoming }),
    [401, 403],
    'list of another wallet with a token for bob'
  )
})

// ---------------------------------------------------------------------------------------------------------
// 2. quotes

test('quote: create without amount, with debitAmount, with receiveAmount; get', async () => {
  const withAmount = await createIncoming(bob, bobIncoming, { incomingAmount: amount(1234, bob) })

  const inferred = await createQuote(withAmount.id)
  assert.ok(inferred.id.startsWith(`${ase.base}/quotes/`), inferred.id)
  assert.equal(inferred.walletAddress, alice.id)
  assert.equal(inferred.receiver, withAmount.id)
  assert.equal(inferred.method, 'ilp')
  assert.deepEqual(inferred.receiveAmount, amount(1234, bob))
  assert.equal(inferred.debitAmount.assetCode, 'USD')
  assert.ok(BigInt(inferred.debitAmount.value) >= 1234n)
  assert.ok(!Number.isNaN(Date.parse(inferred.createdAt)))
  if (inferred.expiresAt !== undefined) assert.ok(Date.parse(inferred.expiresAt) > Date.now())

  const openIp = await createIncoming(bob, bobIncoming)
  const fixedSend = await createQuote(openIp.id, { debitAmount: amount(700, alice) })
  assert.deepEqual(fixedSend.debitAmount, amount(700, alice))
  assert.equal(fixedSend.receiveAmount.assetCode, 'USD')
  assert.ok(BigInt(fixedSend.receiveAmount.value) > 0n && BigInt(fixedSend.receiveAmount.value) <= 700n)

  const fixedReceive = await createQuote(openIp.id, { receiveAmount: amount(650, bob) })
  assert.deepEqual(fixedReceive.receiveAmount, amount(650, bob))
  assert.equal(fixedReceive.debitAmount.assetCode, 'USD')
  assert.ok(BigInt(fixedReceive.debitAmount.value) >= 650n)

  for (const q of [inferred, fixedSend, fixedReceive]) {
    assert.deepEqual(await client.quote.get({ url: q.id, accessToken: aliceQuotes }), q)
  }
  assert.equal(new Set([inferred.id, fixedSend.id, fixedReceive.id]).size, 3)
})

test('quote: refusals (no amount and none inferable, unknown id, wrong token)', async () => {
  const openIp = await createIncoming(bob, bobIncoming)
  await refused(createQuote(openIp.id), [400], 'quote without amount against a receiver without incomingAmount')
  await refused(
    client.quote.get({ url: `${ase.base}/quotes/${randomUUID()}`, accessToken: aliceQuotes }),
    [401, 403, 404],
    'GET of an unknown quote'
  )
  await refused(
    createQuote(openIp.id, { debitAmount: amount(10, alice) }, { token: bobIncoming }),
    [401, 403],
    'quote with an incoming-payment token'
  )
})

test('quote: cross-currency alice (USD) → carol (EUR)', async () => {
  const ip = await createIncoming(carol, carolIncoming)
  const send = await createQuote(ip.id, { debitAmount: amount(10000, alice) })
  assert.deepEqual(send.debitAmount, amount(10000, alice))
  assert.equal(send.receiveAmount.assetCode, 'EUR')
  assert.equal(send.receiveAmount.assetScale, 2)
  assert.ok(BigInt(send.receiveAmount.value) > 0n)

  const receive = await createQuote(ip.id, { receiveAmount: amount(5000, carol) })
  assert.deepEqual(receive.receiveAmount, amount(5000, carol))
  assert.equal(receive.debitAmount.assetCode, 'USD')
  assert.equal(receive.debitAmount.assetScale, 2)
  assert.ok(BigInt(receive.debitAmount.value) > 0n)
  assert.deepEqual(await client.quote.get({ url: receive.id, accessToken: aliceQuotes }), receive)
})

// ---------------------------------------------------------------------------------------------------------
// 3. outgoing payments

test('outgoing payment: from a quote and from an incoming payment; get, list, grant spent amounts', async () => {
  const grant = await outgoingGrant({ debitAmount: amount(10000, alice) })
  const limits = grant.access_token.access[0].limits
  assert.deepEqual(limits.debitAmount, amount(10000, alice))

  const fresh = await spentAmounts(grant)
  for (const k of ['spentDebitAmount', 'spentReceiveAmount']) {
    assert.ok(fresh[k] === null || fresh[k].value === '0', `${k} before any payment: ${JSON.stringify(fresh[k])}`)
  }

  // from a quote
  const ip1 = await createIncoming(bob, bobIncoming)
  const quote = await createQuote(ip1.id, { debitAmount: amount(1000, alice) })
  const metadata = { description: 'from a quote', n: next() }
  const op1 = await createOutgoing(grant, { quoteId: quote.id, metadata })
  checkNewOutgoing(op1, {
    receiver: ip1.id,
    debitAmount: quote.debitAmount,
    receiveAmount: quote.receiveAmount,
    quoteId: quote.id,
    metadata
  })
  // grantSpent* is what the grant had spent before this payment (Rafiki) or including it; either reading is accepted
  checkGrantSpent(op1, 0n)

  // a quote is single-use
  await refused(createOutgoing(grant, { quoteId: quote.id, metadata: { n: next() } }), [400, 403, 409], 'reusing a quote')

  // from an incoming payment and a debit amount
  const ip2 = await createIncoming(bob, bobIncoming)
  const op2 = await createOutgoing(grant, { incomingPayment: ip2.id, debitAmount: amount(700, alice), metadata: { n: next() } })
  checkNewOutgoing(op2, { receiver: ip2.id, debitAmount: amount(700, alice) })
  assert.equal(op2.receiveAmount.assetCode, 'USD')
  checkGrantSpent(op2, BigInt(op1.debitAmount.value), BigInt(op1.receiveAmount.value))

  // get: the plain outgoing payment
  for (const op of [op1, op2]) {
    const got = await client.outgoingPayment.get({ url: op.id, accessToken: grant.access_token.value })
    for (const k of ['id', 'walletAddress', 'quoteId', 'receiver', 'receiveAmount', 'debitAmount', 'metadata', 'createdAt']) {
      assert.deepEqual(got[k], op[k], k)
    }
    assert.equal(got.grantSpentDebitAmount, undefined)
    assert.equal(got.grantSpentReceiveAmount, undefined)
  }

  // list: both, newest first
  const args = { url: alice.resourceServer, walletAddress: alice.id, accessToken: grant.access_token.value }
  const list = await client.outgoingPayment.list(args, { first: 50 })
  const ids = list.result.map((p) => p.id)
  assert.equal(new Set(ids).size, ids.length, 'no duplicates')
  assert.ok(ids.includes(op1.id) && ids.includes(op2.id))
  assert.ok(ids.indexOf(op2.id) < ids.indexOf(op1.id), 'newest first')
  const paged = await client.outgoingPayment.list(args, { first: 1 })
  assert.equal(paged.result.length, 1)
  assert.equal(paged.pagination.hasNextPage, true)
  const after1 = await client.outgoingPayment.list(args, { first: 1, cursor: paged.pagination.endCursor })
  assert.equal(after1.result.length, 1)
  assert.notEqual(after1.result[0].id, paged.result[0].id)
  assert.equal(after1.pagination.hasPreviousPage, true)

  // spent amounts add up
  await checkSpent(grant, [op1, op2], { receiveAsset: bob })

  // the wrong token type is refused
  await refused(client.outgoingPayment.get({ url: op1.id, accessToken: bobIncoming }), [401, 403], 'GET outgoing with an incoming token')
  await refused(spentAmounts({ access_token: { value: aliceQuotes } }), [401, 403], 'spent amounts with a quote token')
  await refused(
    createOutgoing(grant, { incomingPayment: ip2.id, debitAmount: amount(100, bob), metadata: { n: next() } }, bob),
    [401, 403],
    'outgoing payment for bob under a grant for alice'
  )
})

// ---------------------------------------------------------------------------------------------------------
// 4. guides

test('guide: one-time remittance, fixed send (alice USD → carol EUR)', async () => {
  const ip = await createIncoming(carol, carolIncoming, { metadata: { description: 'remittance', n: next() } })
  const quote = await createQuote(ip.id, { debitAmount: amount(5000, alice) })
  assert.deepEqual(quote.debitAmount, amount(5000, alice))
  assert.equal(quote.receiveAmount.assetCode, 'EUR')
  const grant = await outgoingGrant({ debitAmount: quote.debitAmount }, { actions: ['create', 'read'] })
  const op = await createOutgoing(grant, { quoteId: quote.id, metadata: { description: 'remittance', n: next() } })
  checkNewOutgoing(op, { receiver: ip.id, debitAmount: quote.debitAmount, receiveAmount: quote.receiveAmount, quoteId: quote.id })
  await checkSpent(grant, [op])
  // the grant is used up
  const ip2 = await createIncoming(carol, carolIncoming)
  await refused(
    createOutgoing(grant, { incomingPayment: ip2.id, debitAmount: amount(100, alice), metadata: { n: next() } }),
    [400, 403],
    'a payment beyond the grant debit limit'
  )
})

test('guide: one-time payment, fixed receive (alice → bob)', async () => {
  const ip = await createIncoming(bob, bobIncoming, { incomingAmount: amount(2500, bob) })
  const quote = await createQuote(ip.id, { receiveAmount: amount(2500, bob) })
  assert.deepEqual(quote.receiveAmount, amount(2500, bob))
  assert.equal(quote.debitAmount.assetCode, 'USD')
  const grant = await outgoingGrant({ receiveAmount: quote.receiveAmount }, { actions: ['create', 'read'] })
  assert.deepEqual(grant.access_token.access[0].limits.receiveAmount, amount(2500, bob))
  const op = await createOutgoing(grant, { quoteId: quote.id, metadata: { n: next() } })
  checkNewOutgoing(op, { receiver: ip.id, debitAmount: quote.debitAmount, receiveAmount: amount(2500, bob), quoteId: quote.id })
  await checkSpent(grant, [op], { receiveAsset: bob })
})

test('guide: recurring payments with an interval limit (500 per month; 300 then 300 is refused)', async () => {
  const interval = `R/${isoSeconds(Date.now() - 60_000)}/P1M`
  const grant = await outgoingGrant({ debitAmount: amount(500, alice), interval }, { actions: ['create', 'read'] })
  const granted = grant.access_token.access[0].limits
  assert.deepEqual(granted.debitAmount, amount(500, alice))
  assert.equal(granted.interval, interval)

  const ip = await createIncoming(bob, bobIncoming, { metadata: { description: 'subscription', n: next() } })
  const first = await createOutgoing(grant, { incomingPayment: ip.id, debitAmount: amount(300, alice), metadata: { month: 1, n: next() } })
  checkNewOutgoing(first, { receiver: ip.id, debitAmount: amount(300, alice) })
  const spent = await checkSpent(grant, [first])
  assert.equal(spent.spentDebitAmount.value, '300')

  await refused(
    createOutgoing(grant, { incomingPayment: ip.id, debitAmount: amount(300, alice), metadata: { month: 1, n: next() } }),
    [400, 403],
    'a second 300 in the same interval (limit 500)'
  )
  // still within the limit: 200 more is fine, and then nothing more
  const second = await createOutgoing(grant, { incomingPayment: ip.id, debitAmount: amount(200, alice), metadata: { n: next() } })
  checkNewOutgoing(second, { receiver: ip.id, debitAmount: amount(200, alice) })
  const full = await checkSpent(grant, [first, second])
  assert.equal(full.spentDebitAmount.value, '500')
  await refused(
    createOutgoing(grant, { incomingPayment: ip.id, debitAmount: amount(1, alice), metadata: { n: next() } }),
    [400, 403],
    'one cent beyond the interval limit'
  )
})

test('guide: recurring grant whose interval has not started yet refuses payments', async () => {
  const interval = `R/${isoSeconds(Date.now() + 86_400_000)}/P1M`
  const grant = await outgoingGrant({ debitAmount: amount(500, alice), interval }, { actions: ['create', 'read'] })
  const ip = await createIncoming(bob, bobIncoming)
  await refused(
    createOutgoing(grant, { incomingPayment: ip.id, debitAmount: amount(100, alice), metadata: { n: next() } }),
    [400, 403],
    'a payment before the first interval'
  )
})

test('guide: split payments under one grant (bob USD and carol EUR)', async () => {
  const grant = await outgoingGrant({ debitAmount: amount(1000, alice) }, { actions: ['create', 'read', 'list'] })
  const toBob = await createIncoming(bob, bobIncoming, { metadata: { split: 'bob', n: next() } })
  const toCarol = await createIncoming(carol, carolIncoming, { metadata: { split: 'carol', n: next() } })
  const qBob = await createQuote(toBob.id, { debitAmount: amount(400, alice) })
  const qCarol = await createQuote(toCarol.id, { debitAmount: amount(500, alice) })
  const opBob = await createOutgoing(grant, { quoteId: qBob.id, metadata: { split: 'bob', n: next() } })
  const opCarol = await createOutgoing(grant, { quoteId: qCarol.id, metadata: { split: 'carol', n: next() } })
  checkNewOutgoing(opBob, { receiver: toBob.id, debitAmount: amount(400, alice), receiveAmount: qBob.receiveAmount, quoteId: qBob.id })
  checkNewOutgoing(opCarol, { receiver: toCarol.id, debitAmount: amount(500, alice), receiveAmount: qCarol.receiveAmount, quoteId: qCarol.id })
  assert.equal(opBob.receiveAmount.assetCode, 'USD')
  assert.equal(opCarol.receiveAmount.assetCode, 'EUR')
  const spent = await checkSpent(grant, [opBob, opCarol])
  assert.equal(spent.spentDebitAmount.value, '900')

  // 200 more would exceed the 1000 limit
  const q3 = await createQuote(toBob.id, { debitAmount: amount(200, alice) })
  await refused(createOutgoing(grant, { quoteId: q3.id, metadata: { n: next() } }), [400, 403], 'a third payment beyond the split grant')
})
