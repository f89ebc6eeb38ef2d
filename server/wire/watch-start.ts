// Where a watch starts, and the refusals of its start that every door to a watch (/v1's SSE
// and WebSocket, the dashboard's live view) words alike.

/**
 * A version as the contract writes one: digits, compared as integers. Any number of them:
 * one past every version there is (2^53 and up, where a Number is no longer exact) is still
 * a version, past the namespace's latest.
 */
const VERSION = /^(0|[1-9][0-9]*)$/

/** Where a watch starts: Last-Event-ID (an EventSource's reconnection) before since. */
export function sinceOf(lastEventId: string, since: string | null): number | undefined | null {
  const text = lastEventId !== '' ? lastEventId.trim() : since
  if (text === null || text === '') return undefined
  return VERSION.test(text) ? Number(text) : null
}

/** 400 invalid_request, for a since (or Last-Event-ID) that sinceOf refuses. */
export const BAD_SINCE = 'since (or Last-Event-ID) is a version: digits.'

/** 405 method_not_allowed, with `Allow: GET`, for a HEAD: a stream has no headers-only answer. */
export const WATCH_HEAD = 'A watch is a stream: open it with GET.'
