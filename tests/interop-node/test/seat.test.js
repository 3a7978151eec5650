// One seat of a class, played with nothing but its handout: `opdesk workshop --headless --seats 7`, then
// seat07's `.env`, private key and passphrase (`card.txt`). With the official SDK the seat's app asks happy-life
// for an incoming payment on its shop, cloud-nine for a quote and an interactive outgoing-payment grant; the
// seat's owner approves on the interaction page in Chromium; the app continues and pays the shop across ILP.
// Exact amounts on both desks. Skipped when no Chromium is installed (CI installs it: .ci/run).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, test } from 'node:test'
import { createAuthenticatedClient, isFinalizedGrant, isPendingGrant } from '@interledger/open-payments'
import { freePort, launchChromium, noChromium } from './harness.js'

const skip = noChromium
const bin = process.env.OPDESK_BIN ?? join(resolve(import.meta.dirname, '../../..'), 'target/debug/opdesk')
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

let dir, workshop, browser, finish, ports
before(async () => {
  if (skip) return
  dir = mkdtempSync(join(tmpdir(), 'opdesk-class-'))
  writeFileSync(join(dir, 'base.toml'), '')
  ports = [await freePort(), await freePort()]
  workshop = spawn(bin, ['workshop', '--headless', '--seats', '7', '--dir', dir,
    '--cloud-nine-port', String(ports[0]), '--happy-life-port', String(ports[1])], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, OPDESK_CONFIG: join(dir, 'base.toml'), RUST_LOG: 'warn' }
  })
  let stderr = ''
  workshop.stderr.on('data', (d) => { stderr += d })
  const deadline = Date.now() + 30000
  for (const port of ports) {
    for (;;) {
      if (workshop.exitCode !== null) throw new Error(`the workshop exited: ${stderr}`)
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break
      } catch {}
      if (Date.now() > deadline) throw new Error(`the workshop did not start: ${stderr}`)
      await sleep(50)
    }
  }
  finish = await new Promise((ok) => {
    const server = createServer((req, res) => res.end('back'))
    server.listen(0, '127.0.0.1', () => ok({ server, base: `http://127.0.0.1:${server.address().port}` }))
  })
  browser = await launchChromium()
})

after(async () => {
  await browser?.close()
  finish?.server.closeAllConnections()
  await new Promise((ok) => (finish ? finish.server.close(ok) : ok()))
  if (workshop && workshop.exitCode === null) {
    workshop.kill('SIGTERM')
    await new Promise((r) => (workshop.exitCode !== null ? r() : workshop.once('exit', r)))
  }
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** The admin API of desk `name` (its token from its data dir). */
function admin(name, port) {
  const token = readFileSync(join(dir, name, 'admin.token'), 'utf8').trim()
  return async (path) => (await fetch(`http://127.0.0.1:${port}/admin${path}`, { headers: { authorization: `Bearer ${token}` } })).json()
}

test('seat 07 pays its shop across ILP with only its handout, its owner approving on the page', { skip }, async () => {
  const seat = join(dir, 'handout', 'seat07')
  const env = Object.fromEntries(
    readFileSync(join(seat, '.env'), 'utf8').trim().split('\n').map((l) => l.split(/=(.*)/s).slice(0, 2))
  )
  const passphrase = readFileSync(join(seat, 'card.txt'), 'utf8').match(/^passphrase: (.+)$/m)[1]
  const client = await createAuthenticatedClient({
    walletAddressUrl: env.CLIENT_WALLET_ADDRESS,
    keyId: env.KEY_ID,
    privateKey: join(seat, env.PRIVATE_KEY_PATH),
    validateResponses: true,
    logLevel: 'silent'
  })
  const wallet = await client.walletAddress.get({ url: env.WALLET_ADDRESS })
  const shop = await client.walletAddress.get({ url: env.RECEIVER })
  assert.notEqual(wallet.authServer, shop.authServer, 'two ASEs')

  const ig = await client.grant.request(
    { url: shop.authServer },
    { access_token: { access: [{ type: 'incoming-payment', actions: ['create', 'read'] }] } }
  )
  assert.ok(isFinalizedGrant(ig))
  const incoming = await client.incomingPayment.create(
    { url: shop.resourceServer, accessToken: ig.access_token.value },
    { walletAddress: shop.id, incomingAmount: { value: '1234', assetCode: 'USD', assetScale: 2 } }
  )
  const qg = await client.grant.request(
    { url: wallet.authServer },
    { access_token: { access: [{ type: 'quote', actions: ['create', 'read'] }] } }
  )
  const quote = await client.quote.create(
    { url: wallet.resourceServer, accessToken: qg.access_token.value },
    { walletAddress: wallet.id, receiver: incoming.id, method: 'ilp' }
  )
  const pending = await client.grant.request(
    { url: wallet.authServer },
    {
      access_token: {
        access: [{
          type: 'outgoing-payment',
          actions: ['create', 'read'],
          identifier: wallet.id,
          limits: { debitAmount: quote.debitAmount }
        }]
      },
      interact: { start: ['redirect'], finish: { method: 'redirect', uri: `${finish.base}/done`, nonce: 'seat07' } }
    }
  )
  assert.ok(isPendingGrant(pending))

  // the seat's owner, in a browser, with the passphrase from the card
  const page = await browser.newPage()
  await page.goto(pending.interact.redirect)
  await page.fill('input[name=passphrase]', passphrase)
  await page.click('button[type=submit]')
  await page.waitForSelector('button[name=decision][value=approve]')
  await Promise.all([page.waitForURL(`${finish.base}/done**`), page.click('button[name=decision][value=approve]')])
  const interactRef = new URL(page.url()).searchParams.get('interact_ref')
  await page.close()

  const granted = await client.grant.continue(
    { url: pending.continue.uri, accessToken: pending.continue.access_token.value },
    { interact_ref: interactRef }
  )
  assert.ok(isFinalizedGrant(granted))
  const out = await client.outgoingPayment.create(
    { url: wallet.resourceServer, accessToken: granted.access_token.value },
    { walletAddress: wallet.id, quoteId: quote.id }
  )
  const deadline = Date.now() + 20000
  let done
  for (;;) {
    done = await client.outgoingPayment.get({ url: out.id, accessToken: granted.access_token.value })
    // the quote's debit allows for slippage; the same asset on both sides delivers exactly what is sent
    if (done.sentAmount.value === incoming.incomingAmount.value || done.failed) break
    if (Date.now() > deadline) throw new Error(`the payment did not finish: ${JSON.stringify(done)}`)
    await sleep(50)
  }
  assert.equal(done.failed, false)
  assert.equal(done.sentAmount.value, '1234')
  const paid = await client.incomingPayment.get({ url: incoming.id, accessToken: ig.access_token.value })
  assert.equal(paid.receivedAmount.value, '1234')
  assert.equal(paid.completed, true)
  // what was not sent is released: the seat paid exactly 12.34
  let balance
  for (const until = Date.now() + 10000; ; await sleep(50)) {
    balance = (await admin('cloud-nine', ports[0])('/balances')).find((b) => b.wallet === 'seat07')
    if (balance.pendingDebits === 0 || Date.now() > until) break
  }
  assert.equal(balance.balance, 10000 - 1234)
  assert.equal(balance.pendingDebits, 0)

  // the instructor's Classroom: each desk tells its part of seat 07's flow, in the order it was taken
  const part = async (name, port) => {
    const token = readFileSync(join(dir, name, 'admin.token'), 'utf8').trim()
    const r = await fetch(`http://127.0.0.1:${port}/admin/queries`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'classroom' })
    })
    assert.equal(r.status, 200)
    const found = await r.json()
    assert.equal(found.found, 'classroom')
    return found.value.find((s) => s.seat === 7)
  }
  const taken = (p) => p.steps.map((s) => (s === null ? '-' : '+')).join(' ')
  // wallet read, incoming, quote, grant, approved, paid
  const home = await part('cloud-nine', ports[0])
  assert.equal(taken(home), '+ - + + + +', JSON.stringify(home))
  assert.deepEqual(home.steps.slice(2).map((s) => s.count), [1, 1, 1, 1])
  assert.equal(home.approvedByOwner, 1)
  const at = home.steps.filter((s) => s !== null).map((s) => Date.parse(s.firstAt))
  assert.deepEqual(at, [...at].sort((a, b) => a - b), 'the steps came in the order of the flow')
  const shopPart = await part('happy-life', ports[1])
  assert.equal(taken(shopPart), '+ + - - - -', JSON.stringify(shopPart))
})
