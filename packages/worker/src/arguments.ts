/**
 * Words for refusing the arguments of a registration call (`worker.task`, `worker.schedule`, `worker.on`) that
 * has a fixed shape: an argument past its last one, or a handler that is no function, would otherwise be
 * dropped unread or fail only when first called, far from the mistake.
 */

import { describeKind } from "@cairnq/runtime";

/** "1 argument (an object)" or "2 arguments": what a call got beyond the arguments it takes. */
export function argumentsAfter(extra: readonly unknown[]): string {
  return extra.length === 1 ? `1 argument (${describeKind(extra[0])})` : `${extra.length} arguments`;
}
