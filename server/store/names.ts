// The store's name for an account's namespace. Account ids hold no `/` and API namespace
// names hold none either, so the name splits back into its two parts, and no two accounts'
// namespaces can share a store name.
export const userNamespace = (accountId: string, name: string) => `u/${accountId}/${name}`
export const USER_PREFIX = 'u/'
