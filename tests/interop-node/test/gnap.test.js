// GNAP against opdesk with the official Node SDK (responses validated against the spec): a non-interactive
// grant, an interactive grant approved by the operator through the admin API with the finish redirect and its
// hash, continue, rotate, revoke, and a polling grant continued until approved.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, test } from 'node:test'
import {
  createAuthenticatedClient,
  createUnauthenticatedClient,
  isFinalizedGrant,
  isPendingGrant
} from '@interledger/open-payments'
import { startOpdesk } from './harness.js'

let ase
let client
let alice
let bob

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

before(async () => {
  ase = await startOpdesk()
  const open = await createUnauthenticatedClient({ validateResponses: true })
  const jwks = await open.walletAddress.getKeys({ url: `${ase.base}/demo-client` })
  client = await createAuthenticatedClient({
    walletAddressUrl: `${ase.base}/demo-client`,
    keyId: jwks.keys[0].kid,
    privateKey: ase.demoClientKey,
    validateResponses: true
  })
  alice = await client.walletAddress.get({ url: `${ase.base}/alice` })
  bob = await client.walletAddress.get({ url: `${ase.base}/bob` })
})

after(async () => {
  await ase?.stop()
})

async function pendingGrantId() {
  const { status, body } = await ase.admin('GET', '/grants?state=pending')
  assert.equal(status, 200)
  assert.ok(body.length > 0, 'a pending grant')
  return body[0].id
}

const outgoingAccess = () => ({
  access_token: {
    access: [
      {
        type: 'outgoing-payment',
        actions: ['create', 'read'],
        identifier: alice.id,
        limits: { debitAmount: { value: '500', assetCode: 'USD', assetScale: 2 }, interval: 'R12/2026-01-01T00:00:00Z/P1M' }
      }
    ]
  }
})

test('a non-interactive incoming-payment grant is issued at once', async () => {
  const grant = await client.grant.request(
    { url: bob.authServer },
    { access_token: { access: [{ type: 'incoming-payment', actions: ['create', 'read', 'complete'], identifier: bob.id }] } }
  )
  assert.ok(isFinalizedGrant(grant))
  assert.ok(grant.access_token.value.length >= 32)
  assert.ok(grant.access_token.manage.startsWith(`${ase.base}/auth/token/`))
  assert.deepEqual(grant.access_token.access[0].actions, ['create', 'read', 'complete'])
})

test('an interactive grant: operator approval, finish redirect with hash, continue, rotate, revoke', async () => {
  const nonce = 'interop-nonce-1'
  const finishUri = 'http://127.0.0.1:9/finish?session=abc'
  const pending = await client.grant.request(
    { url: alice.authServer },
    { ...outgoingAccess(), interact: { start: ['redirect'], finish: { method: 'redirect', uri: finishUri, nonce } } }
  )
  assert.ok(isPendingGrant(pending))
  assert.ok(pending.interact.redirect.startsWith(`${ase.base}/auth/interact/`))

  // the page waits while nothing is decided
  const waiting = await fetch(pending.interact.redirect, { redirect: 'manual' })
  assert.equal(waiting.status, 200)
  assert.match(await waiting.text(), /up to 5\.00 USD/)

  const id = await pendingGrantId()
  const approved = await ase.admin('POST', `/grants/${id}/approve`, {})
  assert.equal(approved.status, 200)

  const res = await fetch(pending.interact.redirect, { redirect: 'manual' })
  assert.equal(res.status, 303)
  const location = new URL(res.headers.get('location'))
  assert.equal(location.origin + location.pathname, 'http://127.0.0.1:9/finish')
  assert.equal(location.searchParams.get('session'), 'abc')
  const interactRef = location.searchParams.get('interact_ref')
  const hash = location.searchParams.get('hash')
  const expected = createHash('sha256')
    .update(`${nonce}\n${pending.interact.finish}\n${interactRef}\n${alice.authServer}`)
    .digest('base64')
  assert.equal(hash, expected)

  const finalized = await client.grant.continue(
    { url: pending.continue.uri, accessToken: pending.continue.access_token.value },
    { interact_ref: interactRef }
  )
  assert.ok(isFinalizedGrant(finalized))
  assert.equal(finalized.access_token.access[0].limits.debitAmount.value, '500')

  const rotated = await client.token.rotate({ url: finalized.access_token.manage, accessToken: finalized.access_token.value })
  assert.notEqual(rotated.access_token.value, finalized.access_token.value)
  assert.notEqual(rotated.access_token.manage, finalized.access_token.manage)
  await assert.rejects(
    client.token.rotate({ url: finalized.access_token.manage, accessToken: finalized.access_token.value }),
    (e) => e.status === 401
  )
  await client.token.revoke({ url: rotated.access_token.manage, accessToken: rotated.access_token.value })
  await assert.rejects(
    client.token.rotate({ url: rotated.access_token.manage, accessToken: rotated.access_token.value }),
    (e) => e.status === 401
  )
})

test('a polling grant (no finish) is continued until the operator approves it', async () => {
  const pending = await client.grant.request({ url: alice.authServer }, { ...outgoingAccess(), interact: { start: ['redirect'] } })
  assert.ok(isPendingGrant(pending))
  const wait = pending.continue.wait ?? 1
  await sleep(wait * 1000 + 100)
  const still = await client.grant.continue({ url: pending.continue.uri, accessToken: pending.continue.access_token.value })
  assert.ok(!isFinalizedGrant(still))
  assert.ok(still.continue.uri)

  const id = await pendingGrantId()
  assert.equal((await ase.admin('POST', `/grants/${id}/approve`, {})).status, 200)

  await sleep(wait * 1000 + 100)
  const done = await client.grant.continue({ url: pending.continue.uri, accessToken: pending.continue.access_token.value })
  assert.ok(isFinalizedGrant(done))
  await client.grant.cancel({ url: pending.continue.uri, accessToken: pending.continue.access_token.value })
  const view = await ase.admin('GET', `/grants/${id}`)
  assert.equal(view.body.state, 'revoked')
})

test('a rejected grant is denied at continue', async () => {
  const pending = await client.grant.request({ url: alice.authServer }, { ...outgoingAccess(), interact: { start: ['redirect'] } })
  const id = await pendingGrantId()
  assert.equal((await ase.admin('POST', `/grants/${id}/reject`, { reason: 'interop test' })).status, 200)
  await sleep((pending.continue.wait ?? 1) * 1000 + 100)
  await assert.rejects(
    client.grant.continue({ url: pending.continue.uri, accessToken: pending.continue.access_token.value }),
    (e) => e.status === 401 && e.code === 'request_denied'
  )
})
