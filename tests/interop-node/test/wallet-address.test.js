// The wallet address server, as the official Node SDK sees it (responses validated against the spec).
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { createUnauthenticatedClient } from '@interledger/open-payments'
import { startOpdesk } from './harness.js'

let ase
let client

before(async () => {
  ase = await startOpdesk()
  client = await createUnauthenticatedClient({ validateResponses: true })
})

after(async () => {
  await ase?.stop()
})

test('walletAddress.get validates for every demo wallet', async () => {
  for (const [name, code] of [['alice', 'USD'], ['bob', 'USD'], ['carol', 'EUR'], ['demo-client', 'USD']]) {
    const wa = await client.walletAddress.get({ url: `${ase.base}/${name}` })
    assert.equal(wa.id, `${ase.base}/${name}`)
    assert.equal(wa.assetCode, code)
    assert.equal(wa.assetScale, 2)
    assert.equal(wa.authServer, `${ase.base}/auth`)
    assert.equal(wa.resourceServer, ase.base)
  }
})

test('walletAddress.getKeys returns the demo client key', async () => {
  const jwks = await client.walletAddress.getKeys({ url: `${ase.base}/demo-client` })
  assert.equal(jwks.keys.length, 1)
  assert.equal(jwks.keys[0].alg, 'EdDSA')
  assert.equal(jwks.keys[0].crv, 'Ed25519')
  const empty = await client.walletAddress.getKeys({ url: `${ase.base}/alice` })
  assert.deepEqual(empty.keys, [])
})

test('an unknown wallet is a 404 the SDK reports', async () => {
  await assert.rejects(client.walletAddress.get({ url: `${ase.base}/nobody` }), (err) => {
    assert.equal(err.status, 404)
    return true
  })
})

test('a wallet created through the admin API validates too', async () => {
  const res = await fetch(`${ase.base}/admin/wallets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ase.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'dave', assetCode: 'JPY', assetScale: 0 })
  })
  assert.equal(res.status, 201)
  const wa = await client.walletAddress.get({ url: `${ase.base}/dave` })
  assert.equal(wa.assetCode, 'JPY')
  assert.equal(wa.assetScale, 0)
  assert.equal(wa.publicName, undefined)
})
