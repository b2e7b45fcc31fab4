/**
 * Waits for every promise of `work` (started together) and returns their results in order; the
 * first rejection is thrown only after all have settled, so one failing part (a MySQL shard that is
 * down) does not cut the others' work short or leave it running unobserved.
 */
export async function allSettledOrThrow<T>(work: ReadonlyArray<Promise<T>>): Promise<T[]> {
  const results = await Promise.allSettled(work);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}
