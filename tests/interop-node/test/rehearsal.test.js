// The room, rehearsed: `opdesk workshop --seats N` and N attendees, each starting from nothing but the code on its
// printed card. Each opens the handout page in Chromium, types its code, downloads its zip over HTTP and unpacks
// it; its app runs the flow with the official SDK from those files (an incoming payment on its shop at
// happy-life, a quote and an interactive outgoing-payment grant at cloud-nine); its owner reads the consent page,
// signs in with the passphrase from the downloaded card and approves; the app pays. Then the class page shows N
// of N paid, and both ledgers are exact. REHEARSAL_SEATS sets N (3 by default, as CI runs it); with
// OPDESK_SCREENSHOTS=DIR the card, the consent page (1280×800 and 390×844) and the class page are saved there.
// With REHEARSAL_CONSOLE=1 the workshop runs with the instructor's console open (in tmux at 120×40, the default
// log level), and the console's Classroom must show N/N paid; its screen is saved beside the screenshots
// (`scripts/rehearsal.sh` runs the 30-seat class this way).
// Skipped when no Chromium is installed (CI installs it: .ci/run).
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, test } from 'node:test'
import { createAuthenticatedClient, isFinalizedGrant, isPendingGrant } from '@interledger/open-payments'
import { freePort, launchChromium, noChromium } from './harness.js'

const skip = noChromium
const bin = process.env.OPDESK_BIN ?? join(resolve(import.meta.dirname, '../../..'), 'target/debug/opdesk')
const seats = Number(process.env.REHEARSAL_SEATS ?? 3)
const shots = process.env.OPDESK_SCREENSHOTS
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const AMOUNT = '1234'
const consoleOpen = process.env.REHEARSAL_CONSOLE === '1'
const session = `opdesk-rehearsal-${process.pid}`
const tmux = (...args) => execFileSync('tmux', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
/** CPU seconds process `pid` has spent (user + system), from /proc. */
const cpuOf = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}
const alive = (port) => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)

let dir, workshop, browser, finish, ports, pid
before(async () => {
  if (skip) return
  dir = mkdtempSync(join(tmpdir(), 'opdesk-rehearsal-'))
  writeFileSync(join(dir, 'base.toml'), '')
  ports = [await freePort(), await freePort()]
  const args = ['workshop', '--seats', String(seats), '--dir', dir,
    '--cloud-nine-port', String(ports[0]), '--happy-life-port', String(ports[1])]
  let stderr = ''
  if (consoleOpen) {
    // the instructor's laptop: the workshop's own console in a terminal, at its default log level
    const q = (a) => `'${a.replaceAll("'", "'\\''")}'`
    tmux('new-session', '-d', '-s', session, '-x', '120', '-y', '40',
      `OPDESK_CONFIG=${q(join(dir, 'base.toml'))} exec ${[bin, ...args].map(q).join(' ')}`)
  } else {
    workshop = spawn(bin, [...args, '--headless'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, OPDESK_CONFIG: join(dir, 'base.toml'), RUST_LOG: 'warn' }
    })
    workshop.stderr.on('data', (d) => { stderr += d })
  }
  pid = consoleOpen ? Number(tmux('list-panes', '-t', session, '-F', '#{pane_pid}').trim()) : workshop.pid
  const deadline = Date.now() + 60000
  for (const port of ports) {
    for (;;) {
      if (workshop && workshop.exitCode !== null) throw new Error(`the workshop exited: ${stderr}`)
      if (await alive(port)) break
      if (Date.now() > deadline) throw new Error(`the workshop did not start: ${stderr}`)
      await sleep(50)
    }
  }
  finish = await new Promise((ok) => {
    const server = createServer((req, res) => res.end('back'))
    server.listen(0, '127.0.0.1', () => ok({ server, base: `http://127.0.0.1:${server.address().port}` }))
  })
  browser = await launchChromium()
  if (shots) mkdirSync(shots, { recursive: true })
})

after(async () => {
  await browser?.close()
  finish?.server.closeAllConnections()
  await new Promise((ok) => (finish ? finish.server.close(ok) : ok()))
  if (consoleOpen && ports) {
    // q in the console stops both desks
    try { tmux('send-keys', '-t', session, 'q') } catch {}
    for (const until = Date.now() + 15000; Date.now() < until && (await alive(ports[0]) || await alive(ports[1]));) {
      await sleep(100)
    }
    try { tmux('kill-session', '-t', session) } catch {}
  }
  if (workshop && workshop.exitCode === null) {
    workshop.kill('SIGTERM')
    await new Promise((r) => (workshop.exitCode !== null ? r() : workshop.once('exit', r)))
  }
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** The files of a stored zip (as the workshop serves them): name → Buffer. */
function unzip(z) {
  const files = {}
  let at = 0
  while (z.readUInt32LE(at) === 0x04034b50) {
    assert.equal(z.readUInt16LE(at + 8), 0, 'stored')
    const size = z.readUInt32LE(at + 18)
    const nameLength = z.readUInt16LE(at + 26)
    const extra = z.readUInt16LE(at + 28)
    const name = z.subarray(at + 30, at + 30 + nameLength).toString()
    const data = at + 30 + nameLength + extra
    files[name] = z.subarray(data, data + size)
    at = data + size
  }
  return files
}

/** The admin API of desk `name` (its token from its data dir). */
function admin(name, port) {
  const token = readFileSync(join(dir, name, 'admin.token'), 'utf8').trim()
  return async (path, init = {}) =>
    (await fetch(`http://127.0.0.1:${port}/admin${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    })).json()
}

/** One attendee: from the code on its card to a completed payment. */
async function attend(n) {
  const seat = `seat${String(n).padStart(2, '0')}`
  // the printed card: the only thing the attendee brings is the handout URL and the code on it
  const card = readFileSync(join(dir, 'handout', seat, 'card.txt'), 'utf8')
  const url = card.match(/^Your files: open (\S+)$/m)[1]
  const code = card.match(/^and type the code\s+(\S+)$/m)[1]
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  const page = await context.newPage()
  await page.goto(url)
  await page.fill('input[name=code]', code.toLowerCase())
  await page.click('button[type=submit]')
  await page.waitForSelector(`text=${seat}.zip`)
  if (shots && n === 1) await page.screenshot({ path: join(shots, 'handout-card.png'), fullPage: true })
  const [download] = await Promise.all([page.waitForEvent('download'), page.click(`text=${seat}.zip`)])
  const folder = mkdtempSync(join(tmpdir(), `${seat}-`))
  const zipPath = join(folder, 'handout.zip')
  await download.saveAs(zipPath)
  for (const [name, bytes] of Object.entries(unzip(readFileSync(zipPath)))) {
    mkdirSync(join(folder, name, '..'), { recursive: true })
    writeFileSync(join(folder, name), bytes)
  }
  const files = join(folder, seat)
  const env = Object.fromEntries(
    readFileSync(join(files, '.env'), 'utf8').trim().split('\n').map((l) => l.split(/=(.*)/s).slice(0, 2))
  )
  const passphrase = readFileSync(join(files, 'card.txt'), 'utf8').match(/^passphrase: (.+)$/m)[1]

  const client = await createAuthenticatedClient({
    walletAddressUrl: env.CLIENT_WALLET_ADDRESS,
    keyId: env.KEY_ID,
    privateKey: join(files, env.PRIVATE_KEY_PATH),
    validateResponses: true,
    logLevel: 'silent'
  })
  const wallet = await client.walletAddress.get({ url: env.WALLET_ADDRESS })
  const shop = await client.walletAddress.get({ url: env.RECEIVER })
  const ig = await client.grant.request(
    { url: shop.authServer },
    { access_token: { access: [{ type: 'incoming-payment', actions: ['create', 'read'] }] } }
  )
  const incoming = await client.incomingPayment.create(
    { url: shop.resourceServer, accessToken: ig.access_token.value },
    { walletAddress: shop.id, incomingAmount: { value: AMOUNT, assetCode: 'USD', assetScale: 2 } }
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
          limits: { debitAmount: quote.debitAmount, receiver: incoming.id }
        }]
      },
      interact: { start: ['redirect'], finish: { method: 'redirect', uri: `${finish.base}/done`, nonce: seat } }
    }
  )
  assert.ok(isPendingGrant(pending))

  // the owner reads what is asked, signs in with the card's passphrase and approves
  await page.goto(pending.interact.redirect)
  const words = await page.textContent('dl.facts')
  assert.match(words, new RegExp(`Who asks\\s*Seat ${seat.slice(4)}'s app`))
  assert.match(words, new RegExp(`To whom\\s*Seat ${seat.slice(4)}'s shop receives 12\\.34 USD`))
  assert.match(words, /The most that can leave/)
  assert.match(words, /Decide by/)
  await page.fill('input[name=passphrase]', passphrase)
  await page.click('button[type=submit]')
  await page.waitForSelector('button[name=decision][value=approve]')
  if (shots && n === 1) {
    await page.screenshot({ path: join(shots, 'consent-1280x800.png'), fullPage: true })
    await page.setViewportSize({ width: 390, height: 844 })
    await page.screenshot({ path: join(shots, 'consent-390x844.png'), fullPage: true })
    const wide = await page.evaluate(() => document.documentElement.scrollWidth)
    assert.ok(wide <= 390, `no sideways scrolling at phone width (${wide})`)
  }
  await Promise.all([page.waitForURL(`${finish.base}/done**`), page.click('button[name=decision][value=approve]')])
  const interactRef = new URL(page.url()).searchParams.get('interact_ref')
  await context.close()

  const granted = await client.grant.continue(
    { url: pending.continue.uri, accessToken: pending.continue.access_token.value },
    { interact_ref: interactRef }
  )
  assert.ok(isFinalizedGrant(granted))
  const out = await client.outgoingPayment.create(
    { url: wallet.resourceServer, accessToken: granted.access_token.value },
    { walletAddress: wallet.id, quoteId: quote.id }
  )
  const deadline = Date.now() + 30000
  let done
  for (;;) {
    done = await client.outgoingPayment.get({ url: out.id, accessToken: granted.access_token.value })
    if (done.sentAmount.value === AMOUNT || done.failed) break
    if (Date.now() > deadline) throw new Error(`${seat}: the payment did not finish: ${JSON.stringify(done)}`)
    await sleep(50)
  }
  assert.equal(done.failed, false)
  const paid = await client.incomingPayment.get({ url: incoming.id, accessToken: ig.access_token.value })
  assert.equal(paid.receivedAmount.value, AMOUNT)
  rmSync(folder, { recursive: true, force: true })
  return seat
}

test(`a class of ${seats} pays from the codes on its cards, and the class page shows it`, { skip }, async () => {
  const [cpu0, t0] = [cpuOf(pid), Date.now()]
  const paid = await Promise.all(Array.from({ length: seats }, (_, i) => attend(i + 1).catch((e) => {
    // say which seat and what the server answered, not only the SDK's generic message
    throw new Error(`seat ${i + 1}: ${e.message} ${e.status ?? ''} ${e.description ?? ''} ${e.validationErrors ?? ''}`)
  })))
  assert.equal(paid.length, seats)
  const [cpu1, t1] = [cpuOf(pid), Date.now()]
  // one line for scripts/rehearsal.sh: the class's wall time and the workshop's CPU per seat
  console.log(`REHEARSAL seats=${seats} console=${consoleOpen ? 'open' : 'none'} class=${((t1 - t0) / 1000).toFixed(1)}s ` +
    `workshop_cpu_per_seat=${((cpu1 - cpu0) * 1000 / seats).toFixed(1)}ms`)

  // the projector: every seat paid, no secret on the page
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
  const response = await page.goto(`http://127.0.0.1:${ports[1]}/workshop/class`)
  assert.match(response.headers()['content-security-policy'], /^default-src 'none'/)
  assert.equal(await page.textContent('h1'), `${seats} of ${seats} seats have paid`)
  const html = await page.content()
  assert.ok(!html.includes('passphrase') && !html.includes('<script'))
  if (shots) await page.screenshot({ path: join(shots, 'class-page.png'), fullPage: true })
  await page.close()

  // the instructor's console tells the same: the Classroom counts every seat as paid
  if (consoleOpen) {
    let screen = ''
    for (const until = Date.now() + 10000; Date.now() < until; await sleep(100)) {
      screen = tmux('capture-pane', '-p', '-t', session)
      if (screen.includes(`[${seats}/${seats} paid]`)) break
    }
    if (shots) writeFileSync(join(shots, 'instructor-console.txt'), screen)
    assert.ok(screen.includes(`[${seats}/${seats} paid]`), `the console's Classroom:\n${screen}`)
  }

  // both ledgers exact: each seat paid 12.34 with nothing left reserved, each shop got 12.34
  const nine = admin('cloud-nine', ports[0])
  const happy = admin('happy-life', ports[1])
  for (let n = 1; n <= seats; n++) {
    const seat = `seat${String(n).padStart(2, '0')}`
    let b
    for (const until = Date.now() + 10000; ; await sleep(50)) {
      b = (await nine('/balances')).find((x) => x.wallet === seat)
      if (b.pendingDebits === 0 || Date.now() > until) break
    }
    assert.equal(b.balance, 10000 - Number(AMOUNT), `${seat}: ${JSON.stringify(b)}`)
    assert.equal(b.pendingDebits, 0)
    const shop = (await happy('/balances')).find((x) => x.wallet === `${seat}-shop`)
    assert.equal(shop.balance, Number(AMOUNT), `${seat}-shop: ${JSON.stringify(shop)}`)
  }
})
