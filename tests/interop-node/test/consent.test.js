// The account holder decides on the interaction page, in a real browser: Debian's Chromium (headless), driven
// by playwright-core, against `opdesk serve`, with the official SDK as the client. Signing in and approving
// (the client's continue gets the token), rejecting, a wrong passphrase (no decision forms), the limit on failed
// sign-ins, a cross-site POST without the CSRF token, and client text with markup shown as text.
// Skipped when no Chromium is installed (CI installs it: .ci/run).
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { after, before, test } from 'node:test'
import { isFinalizedGrant, isPendingGrant } from '@interledger/open-payments'
import { launchChromium, noChromium, sdkClients, startOpdesk } from './harness.js'

const skip = noChromium
const PASSPHRASE = 'correct horse battery'

let ase, client, browser, finish
before(async () => {
  if (skip) return
  ase = await startOpdesk('[consent]\nmax_failures_per_grant = 3\n')
  ;({ client } = await sdkClients(ase))
  const set = await ase.admin('POST', '/commands', {
    command: 'setOwnerPassphrase',
    wallet: 'alice',
    passphrase: { action: 'set', passphrase: PASSPHRASE }
  })
  assert.equal(set.status, 200, JSON.stringify(set.body))
  // the client's finish URI: a page on another origin that records where the browser came back with
  finish = await new Promise((ok) => {
    const seen = []
    const server = createServer((req, res) => {
      seen.push(new URL(req.url, 'http://x'))
      res.writeHead(200, { 'content-type': 'text/html' })
      // the attacker's page for the cross-site test: a form posting to whatever `to` names
      const to = new URL(req.url, 'http://x').searchParams.get('to')
      res.end(to ? `<form id="f" method="post" action="${to}"><input name="decision" value="approve"></form>` : 'back')
    })
    server.listen(0, '127.0.0.1', () => ok({ server, seen, base: `http://127.0.0.1:${server.address().port}` }))
  })
  browser = await launchChromium()
})

after(async () => {
  await browser?.close()
  finish?.server.closeAllConnections()
  await new Promise((ok) => (finish ? finish.server.close(ok) : ok()))
  await ase?.stop()
})

/** An interactive outgoing-payment grant for alice's money, finishing at the recorder: the SDK's pending grant. */
async function request(nonce = 'n-' + Math.random()) {
  const alice = await client.walletAddress.get({ url: `${ase.base}/alice` })
  const pending = await client.grant.request(
    { url: alice.authServer },
    {
      access_token: {
        access: [{
          type: 'outgoing-payment',
          actions: ['create', 'read'],
          identifier: alice.id,
          limits: { debitAmount: { value: '500', assetCode: 'USD', assetScale: 2 } }
        }]
      },
      interact: { start: ['redirect'], finish: { method: 'redirect', uri: `${finish.base}/done`, nonce } }
    }
  )
  assert.ok(isPendingGrant(pending))
  return pending
}

test('the owner signs in and approves; the client continues and gets its token', { skip }, async () => {
  const pending = await request()
  const page = await browser.newPage()
  await page.goto(pending.interact.redirect)
  assert.equal(await page.locator('button[name=decision]').count(), 0, 'no decision before signing in')
  await page.fill('input[name=passphrase]', PASSPHRASE)
  await page.click('button[type=submit]')
  await page.waitForSelector('button[name=decision][value=approve]')
  await Promise.all([page.waitForURL(`${finish.base}/done**`), page.click('button[name=decision][value=approve]')])
  const back = new URL(page.url())
  const interactRef = back.searchParams.get('interact_ref')
  assert.ok(interactRef && back.searchParams.get('hash'))
  await page.close()
  const grant = await client.grant.continue(
    { url: pending.continue.uri, accessToken: pending.continue.access_token.value },
    { interact_ref: interactRef }
  )
  assert.ok(isFinalizedGrant(grant))
  assert.ok(grant.access_token.value)
})

test('the owner rejects: the client hears grant_rejected', { skip }, async () => {
  const pending = await request()
  const page = await browser.newPage()
  await page.goto(pending.interact.redirect)
  await page.fill('input[name=passphrase]', PASSPHRASE)
  await page.click('button[type=submit]')
  await Promise.all([page.waitForURL(`${finish.base}/done**`), page.click('button[name=decision][value=reject]')])
  assert.equal(new URL(page.url()).searchParams.get('result'), 'grant_rejected')
  await page.close()
})

test('a wrong passphrase never shows the decision, and failed sign-ins are limited', { skip }, async () => {
  const pending = await request()
  const page = await browser.newPage()
  await page.goto(pending.interact.redirect)
  for (let i = 0; i < 3; i++) {
    await page.fill('input[name=passphrase]', 'not the passphrase')
    const [res] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('button[type=submit]')])
    assert.equal(res.status(), 401)
    assert.match(await page.textContent('body'), /not right/)
    assert.equal(await page.locator('button[name=decision]').count(), 0)
  }
  await page.fill('input[name=passphrase]', PASSPHRASE)
  const [res] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('button[type=submit]')])
  assert.equal(res.status(), 429, 'even the right passphrase waits once the limit is reached')
  assert.match(await page.textContent('body'), /Too many failed sign-ins/)
  assert.equal(await page.locator('button[name=decision]').count(), 0)
  await page.close()
})

test('a cross-site POST without the CSRF token decides nothing', { skip }, async () => {
  const pending = await request()
  const context = await browser.newContext()
  const page = await context.newPage()
  // the owner signs in in this browser ...
  await page.goto(pending.interact.redirect)
  await page.fill('input[name=passphrase]', PASSPHRASE)
  await page.click('button[type=submit]')
  await page.waitForSelector('button[name=decision][value=approve]')
  // ... then another site posts a decision to the page
  const evil = await context.newPage()
  await evil.goto(`${finish.base}/evil?to=${encodeURIComponent(pending.interact.redirect)}`)
  const [res] = await Promise.all([
    evil.waitForResponse((r) => r.url() === pending.interact.redirect && r.request().method() === 'POST'),
    evil.evaluate(() => document.getElementById('f').submit())
  ])
  assert.equal(res.status(), 403)
  // the grant still waits for the owner's own decision
  await page.reload()
  assert.equal(await page.locator('button[name=decision][value=approve]').count(), 1)
  await context.close()
})

test('client text with markup is shown as text', { skip }, async () => {
  const named = await ase.admin('POST', '/commands', { command: 'setPublicName', wallet: 'demo-client', publicName: '<b id="x">Mallory</b>' })
  assert.equal(named.status, 200, JSON.stringify(named.body))
  const pending = await request()
  const page = await browser.newPage()
  await page.goto(pending.interact.redirect)
  assert.equal(await page.locator('#x').count(), 0, 'no element from client text')
  assert.match(await page.textContent('body'), /<b id="x">Mallory<\/b>/)
  const csp = (await page.request.get(pending.interact.redirect)).headers()['content-security-policy']
  assert.match(csp, /^default-src 'none'/)
  await page.close()
})
