/**
 * Small helpers the multi-process tests share: waiting for a condition
 * instead of sleeping a fixed time, reading every row of a name, and naming
 * the errors a fixture reported.
 */
import { performance } from "node:perf_hooks";
import type { CairnQ, Task } from "cairnq";
import type { FixtureMessage } from "./processes.ts";

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Calls `probe` every `pollMs` until it returns a value other than
 * `undefined`, and returns that value; past `timeoutMs` it throws
 * "no <what> within …" followed by `context()` (the children's state).
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  context: () => string = () => "",
  pollMs = 50,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const answer = await probe();
    if (answer !== undefined) return answer;
    if (performance.now() > deadline) throw new Error(`no ${what} within ${timeoutMs}ms${context()}`);
    await sleep(pollMs);
  }
}

/** Every row (with this name, when given), read a page of 1,000 at a time. */
export async function listAll(client: CairnQ, name?: string): Promise<Task[]> {
  const rows: Task[] = [];
  for (;;) {
    const page = await client.list({ ...(name === undefined ? {} : { name }), limit: 1_000, offset: rows.length });
    rows.push(...page);
    if (page.length < 1_000) return rows;
  }
}

/** An `on-error` message of a fixture, as "worker claim: error 57P01", "store listen: Error", …: where, the error's name, its SQLSTATE. */
export function describeFixtureError(message: FixtureMessage): string {
  const where = typeof message.phase === "string" ? `worker ${message.phase}` : `store ${String(message.source)}`;
  const code = typeof message.code === "string" ? ` ${message.code}` : "";
  return `${where}: ${String(message.name)}${code}`;
}
