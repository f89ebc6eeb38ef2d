// cluster-key-slot ships no types: the CRC16 hash slot of a key, as Redis Cluster computes it.
declare module 'cluster-key-slot' {
  function calculateSlot(key: string | Buffer): number
  export default calculateSlot
}
