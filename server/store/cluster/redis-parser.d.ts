// redis-parser (the RESP parser ioredis itself uses) ships no types: what read-lane.ts uses.
declare module 'redis-parser' {
  interface ParserOptions {
    returnReply(reply: unknown): void
    returnError(err: Error): void
    returnFatalError?(err: Error): void
    returnBuffers?: boolean
    stringNumbers?: boolean
  }
  class Parser {
    constructor(options: ParserOptions)
    execute(chunk: Buffer): void
    reset(): void
  }
  export default Parser
}
