// The error cases real clients (the Web Monetization extension) recover from, through the official SDK:
// each asserts the exact status and description the reference ASE (Rafiki) sends (docs/COMPATIBILITY.md).
import assert from 'node:assert/strict'
import { createPrivateKey, generateKeyPairSync, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { after, before, test } from 'node:test'
import { createAuthenticatedClient, isFinalizedGrant } from '@interledger/open-payments'
import { createHeaders } from '@interledger/http-signature-utils'
import { sdkClients, startOpdesk } from './harness.js'

let ase
let client
let alice
let bob
let carol

before(async () => {
  ase = await startOpdesk('[gnap]\nauto_approve = true\naccess_token_expires_in_secs = 2\n')
  ;({ client } = await sdkClients(ase))
  alice = await client.walletAddress.get({ url: `${ase.base}/alice` })
  bob = await client.walletAddress.get({ url: `${ase.base}/bob` })
  carol = await client.walletAddress.get({ url: `${ase.base}/carol` })
})

after(async () => {
  await ase?.stop()
})

const usd = (value) => ({ value: String(value), assetCode: 'USD', assetScale: 2 })

/** Rejects with exactly `status` and `description`; returns the SDK error (its `code`, `details`). */
async function refusedWith(promise, status, description) {
  let error
  await assert.rejects(promise, (e) => {
    error = e
    return true
  })
  assert.equal(error.status, status, `${error.status} ${error.description}`)
  assert.equal(error.description, description)
  return error
}

async function token(wallet, access) {
  const grant = await client.grant.request({ url: wallet.authServer }, { access_token: { access } })
  assert.ok(isFinalizedGrant(grant))
  return grant
}

async function outgoingGrant(limits) {
  const pending = await client.grant.request(
    { url: alice.authServer },
    {
      access_token: { access: [{ type: 'outgoing-payment', actions: ['create', 'read'], identifier: alice.id, limits }] },
      interact: { start: ['redirect'], finish: { method: 'redirect', uri: 'http://127.0.0.1:9/finish', nonce: randomUUID() } }
    }
  )
  const res = await fetch(pending.interact.redirect, { redirect: 'manual' })
  const interactRef = new URL(res.headers.get('location')).searchParams.get('interact_ref')
  const grant = await client.grant.continue(
    { url: pending.continue.uri, accessToken: pending.continue.access_token.value },
    { interact_ref: interactRef }
  )
  assert.ok(isFinalizedGrant(grant))
  return grant.access_token.value
}

/** The SDK signing as demo-client with a key its JWKS does not have (a removed key). */
async function removedKeyClient() {
  const { privateKey } = generateKeyPairSync('ed25519')
  return createAuthenticatedClient({
    walletAddressUrl: `${ase.base}/demo-client`,
    keyId: 'removed-key',
    privateKey,
    validateResponses: true,
    logLevel: 'silent'
  })
}

async function incoming(wallet) {
  const t = await token(wallet, [{ type: 'incoming-payment', actions: ['create'], identifier: wallet.id }])
  return client.incomingPayment.create({ url: wallet.resourceServer, accessToken: t.access_token.value }, { walletAddress: wallet.id })
}

test('an expired access token is 403 Inactive Token, and still rotates', { timeout: 20000 }, async () => {
  const grant = await token(bob, [{ type: 'incoming-payment', actions: ['create'], identifier: bob.id }])
  await new Promise((r) => setTimeout(r, 2500))
  await refusedWith(
    client.incomingPayment.create({ url: bob.resourceServer, accessToken: grant.access_token.value }, { walletAddress: bob.id }),
    403,
    'Inactive Token'
  )
  const rotated = await client.token.rotate({ url: grant.access_token.manage, accessToken: grant.access_token.value })
  await client.incomingPayment.create({ url: bob.resourceServer, accessToken: rotated.access_token.value }, { walletAddress: bob.id })
})

test('a payment over the grant limit is 403 unauthorized', async () => {
  const out = await outgoingGrant({ debitAmount: usd(5) })
  const ip = await incoming(bob)
  await refusedWith(
    client.outgoingPayment.create({ url: alice.resourceServer, accessToken: out }, { walletAddress: alice.id, incomingPayment: ip.id, debitAmount: usd(100) }),
    403,
    'unauthorized'
  )
})

test('a 1-cent USD → EUR quote is non-positive receive amount with an exact details.minSendAmount', async () => {
  const q = await token(alice, [{ type: 'quote', actions: ['create'] }])
  const ip = await incoming(carol)
  const quote = (v) =>
    client.quote.create(
      { url: alice.resourceServer, accessToken: q.access_token.value },
      { walletAddress: alice.id, receiver: ip.id, method: 'ilp', debitAmount: usd(v) }
    )
  const e = await refusedWith(quote(1), 400, 'non-positive receive amount')
  const min = e.details.minSendAmount
  assert.equal(min.assetCode, 'USD')
  assert.equal(min.assetScale, 2)
  assert.equal(typeof min.value, 'string')
  const made = await quote(min.value)
  assert.equal(made.debitAmount.value, min.value)
  await refusedWith(quote(BigInt(min.value) - 1n), 400, 'non-positive receive amount')
})

test('a removed key: 400 invalid_client at the AS, Signature validation error at the RS', async () => {
  const t = await token(bob, [{ type: 'incoming-payment', actions: ['create'], identifier: bob.id }])
  const removed = await removedKeyClient()
  const e = await refusedWith(
    removed.grant.request({ url: bob.authServer }, { access_token: { access: [{ type: 'quote', actions: ['create'] }] } }),
    400,
    'could not determine client'
  )
  assert.equal(e.code, 'invalid_client')
  await refusedWith(
    removed.incomingPayment.create({ url: bob.resourceServer, accessToken: t.access_token.value }, { walletAddress: bob.id }),
    401,
    'Signature validation error: could not find key in list of client keys'
  )
})

test('a quoteId written from the sender wallet address (as the Bruno collection does) is paid', async () => {
  const q = await token(alice, [{ type: 'quote', actions: ['create'] }])
  const ip = await incoming(bob)
  const quote = await client.quote.create(
    { url: alice.resourceServer, accessToken: q.access_token.value },
    { walletAddress: alice.id, receiver: ip.id, method: 'ilp', debitAmount: usd(100) }
  )
  const out = await outgoingGrant(undefined)
  const id = quote.id.split('/').pop()
  const paid = await client.outgoingPayment.create(
    { url: alice.resourceServer, accessToken: out },
    { walletAddress: alice.id, quoteId: `${alice.id}/quotes/${id}` }
  )
  assert.equal(paid.quoteId, quote.id)
  await refusedWith(
    client.outgoingPayment.create(
      { url: alice.resourceServer, accessToken: out },
      { walletAddress: alice.id, quoteId: `${alice.id}/quotes/${randomUUID()}` }
    ),
    400,
    'unknown quote'
  )
})

test('rotate, revoke and cancel signed with a key that is not the client\'s: 401 invalid_client', async () => {
  const grant = await token(bob, [{ type: 'incoming-payment', actions: ['create'], identifier: bob.id }])
  const removed = await removedKeyClient()
  const manage = { url: grant.access_token.manage, accessToken: grant.access_token.value }
  for (const call of [() => removed.token.rotate(manage), () => removed.token.revoke(manage)]) {
    const e = await refusedWith(call(), 401, 'could not determine client')
    assert.equal(e.code, 'invalid_client')
  }
  const pending = await client.grant.request(
    { url: alice.authServer },
    {
      access_token: { access: [{ type: 'outgoing-payment', actions: ['create'], identifier: alice.id }] },
      interact: { start: ['redirect'], finish: { method: 'redirect', uri: 'http://127.0.0.1:9/finish', nonce: randomUUID() } }
    }
  )
  const cont = { url: pending.continue.uri, accessToken: pending.continue.access_token.value }
  const e = await refusedWith(removed.grant.cancel(cont), 401, 'could not determine client')
  assert.equal(e.code, 'invalid_client')
  await client.grant.cancel(cont)
  // the token lived through the refusals
  await client.token.revoke(manage)
})

test('a token is revoked by its management URL and the client signature, without Authorization', async () => {
  const grant = await token(bob, [{ type: 'incoming-payment', actions: ['create'], identifier: bob.id }])
  const jwks = await (await fetch(`${ase.base}/demo-client/jwks.json`)).json()
  const request = { method: 'DELETE', url: grant.access_token.manage, headers: {} }
  const privateKey = createPrivateKey(readFileSync(ase.demoClientKey))
  const headers = await createHeaders({ request, privateKey, keyId: jwks.keys[0].kid })
  const res = await fetch(request.url, { method: 'DELETE', headers })
  assert.equal(res.status, 204, await res.text())
  await refusedWith(
    client.incomingPayment.create({ url: bob.resourceServer, accessToken: grant.access_token.value }, { walletAddress: bob.id }),
    403,
    'Inactive Token'
  )
})
