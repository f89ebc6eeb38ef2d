// A command's failure as Redis words it: the message starts with its kind ("ERR", "WRONGTYPE",
// "NOPERM"), and travels as the string of an `{"error": ...}` body or pipeline entry.

export class RedisError extends Error {
  /** The HTTP status of a request that fails with this alone (a single command, a multi-exec). */
  readonly status: number

  constructor(message: string, status = 400) {
    super(message)
    this.status = status
  }
}

export const syntaxError = () => new RedisError('ERR syntax error')
export const notInteger = () => new RedisError('ERR value is not an integer or out of range')
export const wrongArity = (name: string) =>
  new RedisError(`ERR wrong number of arguments for '${name}' command`)
export const noPermission = (name: string) =>
  new RedisError(`NOPERM this API key may only read: '${name}' writes (use a read-write key)`, 403)
