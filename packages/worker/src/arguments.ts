/**
 * Words for refusing the arguments of a registration call (`worker.task`, `worker.schedule`, `worker.on`) that
 * has a fixed shape: an argument past its last one, or a handler that is no function, would otherwise be
 * dropped unread or fail only when first called, far from the mistake.
 */

/** "1 argument (an object)" or "2 arguments": what a call got beyond the arguments it takes. */
export function argumentsAfter(extra: readonly unknown[]): string {
  return extra.length === 1 ? `1 argument (${describeArgument(extra[0])})` : `${extra.length} arguments`;
}

/** What an argument was, in a few words: `null`, `undefined`, "an array", "an object", "a string", … */
export function describeArgument(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  const type = typeof value;
  return type === "object" ? "an object" : `a ${type}`;
}
