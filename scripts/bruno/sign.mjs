// The signing helper the Bruno collection's pre-request scripts call at `{{signatureUrl}}`, on loopback: `POST
// {keyId, base64Key, request: {url, method, headers, body}}` answers the RFC 9421 signature headers (and the
// content digest) as JSON, made with the official `@interledger/http-signature-utils`. Written for opdesk's
// acceptance runs; it signs with whatever key it is sent, so it listens on 127.0.0.1 only.
import { createServer } from 'node:http'
import { createHeaders, loadBase64Key } from '@interledger/http-signature-utils'

/** Starts the helper on a free loopback port; resolves to { url, close }. */
export function startSigner() {
  const server = createServer(async (req, res) => {
    try {
      if (req.method !== 'POST') throw Object.assign(new Error('POST only'), { status: 405 })
      let text = ''
      for await (const chunk of req) text += chunk
      const { keyId, base64Key, request } = JSON.parse(text)
      const body = request.body === undefined || request.body === 'undefined' ? undefined : request.body
      const headers = await createHeaders({
        request: { url: request.url, method: request.method, headers: request.headers ?? {}, body },
        privateKey: loadBase64Key(base64Key),
        keyId
      })
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(headers))
    } catch (e) {
      res.writeHead(e.status ?? 400, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: String(e.message ?? e) }))
    }
  })
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      resolve({ url: `http://127.0.0.1:${port}/`, close: () => new Promise((r) => server.close(r)) })
    })
  })
}
