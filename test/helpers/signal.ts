/** A promise, and what settles it: how a test holds one step until another has happened. */
export function signal(): { wait: Promise<void>; fire: () => void } {
  let fire = () => undefined as void;
  const wait = new Promise<void>((resolve) => (fire = resolve));
  return { wait, fire };
}
