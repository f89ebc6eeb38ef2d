// An error with an HTTP status and a snake_case code, raised by the services the dashboard,
// the operator endpoint and the command line share. The /v1 API raises ApiError instead,
// whose codes are the contract's fixed table.
export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}
