/**
 * The worker's failure write (§8.4): a failure the store refuses as too large
 * for the database (`SerializationError`, e.g. MySQL's `StatementTooLarge`:
 * nothing written) is written again cut down, so the task fails as it would
 * have instead of staying `running` until its lease expires. The envelope it
 * starts from is already storable (`storable-outcome.ts`).
 */
import type { ErrorEnvelope, FailInput, Task, TaskStore } from "@cairnq/protocol";
import { SerializationError } from "@cairnq/protocol";
import { sanitizeText } from "@cairnq/protocol/adapter";
import { fallbackEnvelope } from "@cairnq/protocol/sdk";

/**
 * How much of each text field (`type`, `code`, `message`) a failure too large for the store keeps, in UTF-16
 * units: enough to say what went wrong, far under any statement limit (MySQL's `max_allowed_packet` is 16 MiB by
 * default; the first error the repro met was 17 MiB of message).
 */
const OVERSIZE_TEXT_CHARS = 8192;

/** A fail whose envelope was already made storable (`storableEnvelope`). */
export type FailWrite = FailInput & { readonly retryable: boolean };

/**
 * Writes a failure (§8.4). One the store refuses with `SerializationError` — a statement too large for the
 * database (MySQL's `StatementTooLarge`, an error message over `max_allowed_packet`), nothing written — is
 * written again with {@link oversizeEnvelope}, as a result too large ends `unserializable_result`: the failure
 * is recorded, with its code and retry decision, instead of the task staying `running` until its lease expires.
 * Resolves with the row and the envelope that was written.
 */
export async function writeFailure(store: Pick<TaskStore, "fail">, input: FailWrite): Promise<{ row: Task; error: unknown }> {
  try {
    return { row: await store.fail(input), error: input.error };
  } catch (err) {
    if (!(err instanceof SerializationError)) throw err;
    const error = oversizeEnvelope(input.error, input.retryable, err);
    return { row: await store.fail({ ...input, error }), error };
  }
}

/**
 * The envelope stored in place of one the store could not hold: its `type`, `code` and the start of its
 * `message` (each cut to {@link OVERSIZE_TEXT_CHARS}), the message saying it was cut and why; `details` dropped.
 */
export function oversizeEnvelope(envelope: unknown, retryable: boolean, refusal: SerializationError): ErrorEnvelope {
  const { type, code, message } = fallbackEnvelope(envelope, retryable);
  const more = message.length > OVERSIZE_TEXT_CHARS ? `… (${message.length} characters)` : "";
  return fallbackEnvelope(
    {
      type: cut(type),
      code: cut(code),
      message: `${cut(message)}${more} [not stored as given, the store refused it: ${cut(refusal.message)}; type, code and message are kept up to ${OVERSIZE_TEXT_CHARS} characters each, details dropped]`,
    },
    retryable,
  );
}

/** `text` cut to {@link OVERSIZE_TEXT_CHARS}, storable on every backend (a surrogate pair the cut splits becomes U+FFFD). */
function cut(text: string): string {
  return sanitizeText(text.length <= OVERSIZE_TEXT_CHARS ? text : text.slice(0, OVERSIZE_TEXT_CHARS));
}
