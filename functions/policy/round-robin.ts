/**
 * Round-robin selection: one candidate from each non-empty bucket in turn, cycling, until `cap` are taken
 * or every bucket is empty. Buckets come in ascending broker id, each already in its own order.
 */
export function roundRobin<T>(buckets: readonly (readonly T[])[], cap: number): T[] {
  const chosen: T[] = [];
  let open = buckets.filter((bucket) => bucket.length > 0);
  for (let round = 0; chosen.length < cap && open.length > 0; round++) {
    for (const bucket of open) {
      chosen.push(bucket[round] as T);
      if (chosen.length === cap) break;
    }
    open = open.filter((bucket) => bucket.length > round + 1);
  }
  return chosen;
}
