/**
 * Tries `attempt` until `done` holds of what it answered, for at most `ms`: for what the service
 * promises "within" a time (another instance's change reaching this one), where no event of its
 * own says when. Answers the last result and how long it took; throws with the last result when
 * the time runs out.
 */
export async function within<T>(ms: number, attempt: () => Promise<T>, done: (value: T) => boolean): Promise<{ value: T; elapsedMs: number }> {
  const start = performance.now();
  for (;;) {
    const value = await attempt();
    const elapsedMs = performance.now() - start;
    if (done(value)) return { value, elapsedMs };
    if (elapsedMs > ms) throw new Error(`not within ${ms} ms; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
