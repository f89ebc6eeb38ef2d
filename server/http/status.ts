// Status lines, written as uWebSockets.js wants them ("404 Not Found").
const TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No Content',
  302: 'Found',
  304: 'Not Modified',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
  507: 'Insufficient Storage',
}

const LINES = new Map(Object.entries(TEXT).map(([code, text]) => [Number(code), `${code} ${text}`]))

export function statusLine(status: number): string {
  return LINES.get(status) ?? String(status)
}
