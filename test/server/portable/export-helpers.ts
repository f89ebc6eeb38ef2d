// Reading exports in tests: the whole NDJSON body, its lines parsed, over node:http.
import http from 'node:http'

export interface Exported {
  status: number
  headers: http.IncomingHttpHeaders
  text: string
  lines: any[]
}

export function exportOf(baseUrl: string, key: string, path: string): Promise<Exported> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${baseUrl}${path}`, { headers: { 'x-api-key': key } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        const lines =
          res.headers['content-type'] === 'application/x-ndjson'
            ? text
                .split('\n')
                .filter((l) => l !== '')
                .map((l) => JSON.parse(l))
            : []
        resolve({ status: res.statusCode!, headers: res.headers, text, lines })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
  })
}

/** The entry lines' raw text, as sent (between the header and the end line). */
export function entryTexts(text: string): string[] {
  const lines = text.split('\n').filter((l) => l !== '')
  return lines.slice(1, -1)
}
