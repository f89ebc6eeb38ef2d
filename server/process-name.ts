// server.json names the server's process as the engine's LOCK does (pid, start time, boot),
// so the command line judges "is a server running here" by the same rule on either store.
export { nameRuns, ownName } from '../engine/index.js'
