/**
 * Results and errors no backend can hold, and what a worker does with them,
 * written once for every real store: `storable-outcome.test.ts` runs it on
 * SQLite, `integration/storable-outcome.test.ts` on Postgres.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TaskError } from "@cairnq/protocol";
import type { TaskStore } from "@cairnq/protocol";
import { waitForStatus } from "./helpers.js";
import type { Backend, OpenStore } from "./stores.js";
import { makeWorker } from "./worker.js";

/** A value nested `levels` objects deep. */
export function deep(levels: number): unknown {
  let value: unknown = "leaf";
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

/** Results no backend can hold, each of which used to fail the write, leave the task running and re-run the handler. */
const UNSTORABLE_RESULTS: readonly [string, () => unknown][] = [
  ["10,000 levels deep", () => deep(10_000)],
  [
    "a throwing getter",
    () => ({
      get x(): never {
        throw new Error("getter boom");
      },
    }),
  ],
  [
    "a throwing toJSON",
    () => ({
      toJSON(): never {
        throw new Error("toJSON boom");
      },
    }),
  ],
  [
    "a Proxy whose traps throw",
    () =>
      new Proxy(
        {},
        {
          ownKeys() {
            throw new Error("trap");
          },
        },
      ),
  ],
  ["a string with U+0000", () => ({ text: "a\u0000b" })],
  ["a lone surrogate", () => ({ text: "\ud800" })],
];

/** TaskErrors whose fields the constructor would refuse, set afterwards or by a subclass: the store refuses `retryable: "yes"`. */
const INVALID_TASK_ERRORS: readonly [string, () => TaskError][] = [
  ['retryable: "yes" set after construction', () => Object.assign(new TaskError("invalid"), { retryable: "yes" })],
  ["retryable: 1 set after construction", () => Object.assign(new TaskError("invalid"), { retryable: 1 })],
  ["a numeric code set after construction", () => Object.assign(new TaskError("invalid"), { code: 42 })],
  [
    "a subclass whose envelope() throws",
    () =>
      new (class extends TaskError {
        override envelope(): never {
          throw new Error("envelope boom");
        }
      })("invalid"),
  ],
];

/** The suite on one backend: every unstorable result or error settles its task for good after one handler run. */
export function describeUnstorableOutcomes(backend: Backend): void {
  describe(`outcomes that cannot be written (${backend.label})`, () => {
    let open: OpenStore;
    let store: TaskStore;
    beforeEach(async () => {
      open = await backend.open();
      store = open.store;
    });
    afterEach(async () => {
      await open.close();
    });

    it.each(UNSTORABLE_RESULTS)("a result with %s fails the attempt for good after ONE handler run", async (_label, make) => {
      const worker = makeWorker(store);
      let runs = 0;
      worker.task("bad", () => {
        runs += 1;
        return make() as never;
      });
      const task = await store.submit({ name: "bad", maxAttempts: 3 });
      void worker.run();
      const row = await waitForStatus(store, task.id, ["failed"], 10_000);
      await worker.stop();
      expect(runs).toBe(1);
      expect(row.attempt).toBe(1);
      expect(row.error).toMatchObject({ type: "SerializationError", code: "unserializable_result", retryable: false });
      expect((row.error as { message: string }).message).toMatch(/^the handler's result could not be stored as JSON: cannot encode result/);
    });

    it("a thrown error whose message holds U+0000 and a lone surrogate is recorded sanitised, its code kept", async () => {
      const worker = makeWorker(store);
      let runs = 0;
      worker.task("bad", () => {
        runs += 1;
        throw new TaskError("bad\u0000byte \ud800 here", { code: "upstream_garbage", details: { raw: "x\u0000y" } });
      });
      const task = await store.submit({ name: "bad", maxAttempts: 3 });
      void worker.run();
      const row = await waitForStatus(store, task.id, ["failed"], 10_000);
      await worker.stop();
      expect(runs).toBe(1);
      expect(row.error).toEqual({
        type: "TaskError",
        code: "upstream_garbage",
        message: "bad\ufffdbyte \ufffd here",
        retryable: false,
        details: { raw: "x\ufffdy" },
      });
    });

    it("a thrown Proxy is recorded", async () => {
      const worker = makeWorker(store);
      let runs = 0;
      worker.task("bad", () => {
        runs += 1;
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- throwing a non-Error is exactly the case under test
        throw new Proxy(
          {},
          {
            get() {
              throw new Error("no reading me");
            },
            getPrototypeOf() {
              throw new Error("no prototype either");
            },
          },
        );
      });
      const task = await store.submit({ name: "bad", maxAttempts: 1 });
      void worker.run();
      const row = await waitForStatus(store, task.id, ["failed"], 10_000);
      await worker.stop();
      expect(runs).toBe(1);
      expect(row.error).toMatchObject({ code: "handler_error", retryable: true });
    });

    it.each(INVALID_TASK_ERRORS)("a thrown TaskError with %s fails for good after ONE run, not left running", async (_label, make) => {
      const worker = makeWorker(store);
      let runs = 0;
      worker.task("bad", () => {
        runs += 1;
        throw make();
      });
      const task = await store.submit({ name: "bad", maxAttempts: 3 });
      void worker.run();
      const row = await waitForStatus(store, task.id, ["failed"], 5_000);
      await worker.stop();
      expect(runs).toBe(1);
      expect(row.attempt).toBe(1);
      expect(row.error).toMatchObject({ type: "InvalidTaskError", code: "invalid_task_error", retryable: false, details: {} });
      expect((row.error as { message: string }).message).toMatch(/cannot be stored as it stands \(.+\).*its message: invalid/);
    });

    it("TaskError details with non-JSON values keep their representable part", async () => {
      const worker = makeWorker(store);
      worker.task("bad", () => {
        throw new TaskError("partly representable", {
          code: "mixed_details",
          details: { ok: 1, big: 10n, nested: { nan: Number.NaN, kept: "yes", list: [1, () => 2, 3] } },
        });
      });
      const task = await store.submit({ name: "bad" });
      void worker.run();
      const row = await waitForStatus(store, task.id, ["failed"], 10_000);
      await worker.stop();
      expect(row.error).toEqual({
        type: "TaskError",
        code: "mixed_details",
        message: "partly representable",
        retryable: false,
        details: { ok: 1, nested: { kept: "yes", list: [1, null, 3] } },
      });
    });
  });
}
