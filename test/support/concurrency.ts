/** Running a test's independent steps a few at a time. */

/**
 * Runs `body` for every item, at most `limit` at a time, in the items' order. After a body throws
 * no further item is started; the ones under way are waited for, then the first error is thrown
 * (so a test's teardown never runs beside a body still using what it closes).
 */
export async function eachConcurrently<T>(items: readonly T[], limit: number, body: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lane = async (): Promise<void> => {
    while (next < items.length && !failure) {
      const item = items[next++]!;
      try {
        await body(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  if (failure) throw failure.error;
}
