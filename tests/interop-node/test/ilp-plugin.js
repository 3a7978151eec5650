// A minimal ILP-over-HTTP plugin (synchronous mode: POST an OER Prepare to `/ilp` with a peer's bearer token,
// the 200 body is the OER Fulfill/Reject; STREAM.md §3.1, §5.1). It is the whole interface ilp-protocol-stream
// calls and more than @interledger/pay needs (pay only calls `sendData`). Every exchange is logged so a test
// can count packets and, given the connection's shared secret, decrypt the STREAM data on both sides.
import { createHmac } from 'node:crypto'
import streamPacket from 'ilp-protocol-stream/dist/src/packet.js'

const { Packet, FrameType, ErrorCode } = streamPacket
export { FrameType, ErrorCode }

/** An OER ILP Reject with short fields, no triggeredBy and no data. */
function reject(code, message) {
  const text = Buffer.from(message.slice(0, 100))
  const contents = Buffer.concat([Buffer.from(code), Buffer.from([0]), Buffer.from([text.length]), text, Buffer.from([0])])
  return Buffer.concat([Buffer.from([14, contents.length]), contents])
}

/** The answer to a transport failure: never throw from sendData. */
const t00 = (message) => reject('T00', message)

/** OER length prefix at `at`: [length, bytes taken by the prefix]. */
function lengthAt(buf, at) {
  const first = buf[at]
  if (!(first & 0x80)) return [first, 1]
  const n = first & 0x7f
  let len = 0
  for (let i = 0; i < n; i++) len = len * 256 + buf[at + 1 + i]
  return [len, 1 + n]
}

/** A VarOctetString at `at`: [bytes, offset after it]. */
function varOctetsAt(buf, at) {
  const [len, taken] = lengthAt(buf, at)
  return [buf.subarray(at + taken, at + taken + len), at + taken + len]
}

/**
 * The fields of an OER ILP packet that the tests look at: Prepare (12) `{type, amount, destination, data}`,
 * Fulfill (13) `{type, data}`, Reject (14) `{type, code, triggeredBy, message, data}`.
 */
export function parseIlp(buf) {
  const type = buf[0]
  const [, taken] = lengthAt(buf, 1)
  const at = 1 + taken
  if (type === 12) {
    const amount = buf.readBigUInt64BE(at)
    const [destination, next] = varOctetsAt(buf, at + 8 + 17 + 32)
    const [data] = varOctetsAt(buf, next)
    return { type, amount, destination: destination.toString(), data }
  }
  if (type === 13) return { type, data: varOctetsAt(buf, at + 32)[0] }
  if (type === 14) {
    const code = buf.subarray(at, at + 3).toString()
    const [triggeredBy, next] = varOctetsAt(buf, at + 3)
    const [message, last] = varOctetsAt(buf, next)
    const [data] = varOctetsAt(buf, last)
    return { type, code, triggeredBy: triggeredBy.toString(), message: message.toString(), data }
  }
  throw new Error(`not an ILP packet (type ${type})`)
}

/**
 * Decrypts the STREAM packet in an ILP packet's data with the connection's shared secret; undefined if the data
 * is empty or not authentic (e.g. an F06/F02 without data).
 */
export async function decodeStream(sharedSecret, ilpPacket) {
  const { data } = parseIlp(ilpPacket)
  if (data.length === 0) return undefined
  const key = createHmac('sha256', sharedSecret).update('ilp_stream_encryption').digest()
  try {
    return await Packet.decryptAndDeserialize(key, Buffer.from(data))
  } catch {
    return undefined
  }
}

export class HttpPlugin {
  constructor({ url, token }) {
    this.url = url
    this.token = token
    this.connected = false
    this.handler = undefined
    /** Every Prepare sent: [amount (as read from the OER), reply type (13 fulfill, 14 reject), reject code]. */
    this.log = []
    /** The same exchanges as raw OER: { prepare, reply }. */
    this.packets = []
    /** See `cutOffAfter`. */
    this.cutOffAt = Infinity
    this.cutOff = 0
  }

  /**
   * From `ms` on, answer every Prepare locally with a final `F02` instead of sending it (neither logged nor
   * sent): bounds a test whose sender would otherwise keep retrying. `cutOff` counts those answers.
   */
  cutOffAfter(ms) {
    this.cutOffAt = Date.now() + ms
  }

  async connect() {
    this.connected = true
  }

  async disconnect() {
    this.connected = false
  }

  isConnected() {
    return this.connected
  }

  registerDataHandler(handler) {
    this.handler = handler
  }

  deregisterDataHandler() {
    this.handler = undefined
  }

  async sendData(prepare) {
    if (Date.now() >= this.cutOffAt) {
      this.cutOff++
      return reject('F02', 'cut off by the test')
    }
    // Prepare: type, length prefix (1 or 1+n bytes), then amount as UInt64.
    const lenBytes = prepare[1] & 0x80 ? 1 + (prepare[1] & 0x7f) : 1
    const amount = prepare.readBigUInt64BE(1 + lenBytes)
    let reply
    try {
      const res = await fetch(this.url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.token}`,
          'content-type': 'application/octet-stream',
          accept: 'application/octet-stream'
        },
        body: prepare,
        signal: AbortSignal.timeout(35000)
      })
      reply = res.status === 200 ? Buffer.from(await res.arrayBuffer()) : t00(`HTTP ${res.status}`)
    } catch (e) {
      reply = t00(String(e?.message ?? e))
    }
    const code = reply[0] === 14 ? reply.subarray(2, 5).toString() : undefined
    this.log.push([amount, reply[0], code])
    this.packets.push({ prepare: Buffer.from(prepare), reply })
    return reply
  }

  /** Money packets the receiver fulfilled. */
  fulfilled() {
    return this.log.filter(([amount, type]) => type === 13 && amount > 0n)
  }

  /**
   * The exchanges decoded with `sharedSecret`: { amount, destination, code, request, reply } where request and
   * reply are STREAM packets (or undefined when not decryptable). For tests' assertions and failure reports.
   */
  async decoded(sharedSecret) {
    const out = []
    for (const { prepare, reply } of this.packets) {
      const p = parseIlp(prepare)
      const r = parseIlp(reply)
      out.push({
        amount: p.amount,
        destination: p.destination,
        code: r.type === 13 ? 'fulfill' : r.code,
        request: await decodeStream(sharedSecret, prepare),
        reply: await decodeStream(sharedSecret, reply)
      })
    }
    return out
  }
}

/** One line per exchange, frames by name: for assertion messages. */
export function describeExchanges(exchanges) {
  const frames = (pkt) =>
    pkt
      ? pkt.frames
          .map((f) => {
            const name = FrameType[f.type] ?? `0x${f.type.toString(16)}`
            if (f.type === FrameType.ConnectionClose || f.type === FrameType.StreamClose) {
              return `${name}(${ErrorCode[f.errorCode]}${f.errorMessage ? ` "${f.errorMessage}"` : ''})`
            }
            if (f.type === FrameType.StreamMaxMoney) return `${name}(max ${f.receiveMax}, total ${f.totalReceived})`
            if (f.type === FrameType.ConnectionAssetDetails) return `${name}(${f.sourceAssetCode}/${f.sourceAssetScale})`
            return name
          })
          .join(' ')
      : '-'
  return exchanges
    .map(
      (e, i) =>
        `#${i} amount ${e.amount} seq ${e.request?.sequence ?? '?'} [${frames(e.request)}] -> ${e.code}` +
        ` prepareAmount ${e.reply?.prepareAmount ?? '-'} [${frames(e.reply)}]`
    )
    .join('\n')
}
