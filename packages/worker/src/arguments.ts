/**
 * Words for refusing the arguments of a registration call (`worker.task`, `worker.schedule`, `worker.on`) that
 * has a fixed shape: an argument past its last one, or a handler that is no function, would otherwise be
 * dropped unread or fail only when first called, far from the mistake.
 */

import { InvalidArgument } from "@cairnq/protocol";
import { describeKind } from "@cairnq/runtime";

import { WORKER_EVENT_NAMES } from "./events.js";

/** "1 argument (an object)" or "2 arguments": what a call got beyond the arguments it takes. */
export function argumentsAfter(extra: readonly unknown[]): string {
  return extra.length === 1 ? `1 argument (${describeKind(extra[0])})` : `${extra.length} arguments`;
}

/** Refuses an event name `worker.on`/`worker.off` does not know, naming the ones it does. */
export function requireEventName(event: unknown, method: "on" | "off"): void {
  if (typeof event === "string" && (WORKER_EVENT_NAMES as readonly string[]).includes(event)) return;
  const got = typeof event === "string" ? JSON.stringify(event) : describeKind(event);
  throw new InvalidArgument("event", `worker.${method}(event, listener) got the event ${got}, which a worker never emits; the events are ${WORKER_EVENT_NAMES.join(", ")}`);
}
