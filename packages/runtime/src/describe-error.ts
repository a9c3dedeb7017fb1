/**
 * An error envelope (§12) in one line for people, as `explain` and the
 * `cairnq` CLI print it. The envelope comes from the database, possibly
 * written by another implementation, so every field is optional here.
 */

interface EnvelopeView {
  type: string | null;
  code: string | null;
  message: string | null;
  retryable: boolean | null;
}

function envelope(error: unknown): EnvelopeView | null {
  if (error === null || error === undefined || typeof error !== "object" || Array.isArray(error)) return null;
  const e = error as Record<string, unknown>;
  const text = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);
  return { type: text(e.type), code: text(e.code), message: text(e.message), retryable: typeof e.retryable === "boolean" ? e.retryable : null };
}

/**
 * `TaskError bad_input: "no url" (not retryable)`, or `null` for an error
 * with none of type, code or message (or no object at all).
 *
 * @example
 * ```ts
 * describeError(task.error) ?? "no error envelope";
 * ```
 */
export function describeError(error: unknown): string | null {
  const e = envelope(error);
  if (e === null) return null;
  const head = [e.type, e.code].filter((p) => p !== null).join(" ");
  const parts: string[] = [];
  if (head !== "") parts.push(head);
  if (e.message !== null) parts.push(JSON.stringify(e.message));
  if (parts.length === 0) return null;
  const retry = e.retryable === null ? "" : e.retryable ? " (retryable)" : " (not retryable)";
  return `${parts.join(": ")}${retry}`;
}
