// `cairn/level`: the engine as an abstract-level database. See engine/README.md.
export { CairnLevel, type CairnLevelOptions, NAMESPACE } from './level.js'
