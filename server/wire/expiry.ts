// An expiry as the API shows it: unix seconds, rounded up, so a key is never said to expire
// before it does (X-Expires-At, expiresAt in listings, transactions and watch events).
export const expirySeconds = (ms: number): number => Math.ceil(ms / 1000)
