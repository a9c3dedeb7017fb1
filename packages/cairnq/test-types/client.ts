// The client's methods typed from a TaskDef: payload required or optional as the TaskDef says, results and rows typed.
import { defineTask } from "cairnq";
import type { CairnQ, SubmitOutcome, Task } from "cairnq";
import type { Equal } from "./assert.ts";
import { expectType } from "./assert.ts";

const summarize = defineTask<{ url: string }, { summary: string }>("summarize", { queue: "llm" });
const ping = defineTask<{ n: number } | undefined, number>("ping");
const untyped = defineTask("anything");

export async function typed(client: CairnQ): Promise<void> {
  const submitted = await client.submit(summarize, { url: "https://example.com" }, { key: "k" });
  expectType<Equal<typeof submitted, Task<{ url: string }, { summary: string }>>>();
  expectType<Equal<typeof submitted.result, { summary: string } | null>>();
  const outcome = await client.submitOutcome(summarize, { url: "u" });
  expectType<Equal<typeof outcome, SubmitOutcome<{ url: string }, { summary: string }>>>();
  const called = await client.call(summarize, { url: "u" }, { waitTimeoutMs: 1_000 });
  expectType<Equal<typeof called, { summary: string }>>();

  // @ts-expect-error the TaskDef's payload is required
  await client.submit(summarize);
  // @ts-expect-error the TaskDef's payload is required
  await client.call(summarize);
  // @ts-expect-error wrong payload type
  await client.submit(summarize, { url: 5 });
  // @ts-expect-error an unknown payload field
  await client.call(summarize, { url: "u", extra: 1 });
  // @ts-expect-error options are checked too
  await client.submit(summarize, { url: "u" }, { queu: "x" });

  // A payload type that accepts undefined makes the payload optional.
  const pong = await client.call(ping);
  expectType<Equal<typeof pong, number>>();
  await client.submit(untyped);

  // By name: untyped, or typed by explicit type arguments (payload first for submit, result first for call).
  const byName = await client.submit("report", { month: "2024-05" });
  expectType<Equal<typeof byName, Task<unknown, unknown>>>();
  const explicit = await client.submit<{ month: string }, { rows: number }>("report", { month: "2024-05" });
  expectType<Equal<typeof explicit, Task<{ month: string }, { rows: number }>>>();
  // @ts-expect-error the explicit payload type is checked
  await client.submit<{ month: string }>("report", { month: 5 });
  const n = await client.call<number>("count", {});
  expectType<Equal<typeof n, number>>();
  const anything = await client.call("count");
  expectType<Equal<typeof anything, unknown>>();

  // Reads typed from a TaskDef where one is given, untyped otherwise.
  const got = await client.get(submitted.id, summarize);
  expectType<Equal<typeof got, Task<{ url: string }, { summary: string }> | null>>();
  const plain = await client.get(submitted.id);
  expectType<Equal<typeof plain, Task | null>>();
  const byKey = await client.getByKey("k", summarize);
  expectType<Equal<typeof byKey, Task<{ url: string }, { summary: string }> | null>>();
  const done = await client.wait(submitted.id, { task: summarize, timeoutMs: 1_000 });
  expectType<Equal<typeof done, Task<{ url: string }, { summary: string }>>>();
  expectType<Equal<typeof done.payload.url, string>>();
  const doneByKey = await client.waitByKey("k", { task: summarize });
  expectType<Equal<typeof doneByKey, Task<{ url: string }, { summary: string }>>>();
  const waited = await client.wait(submitted.id);
  expectType<Equal<typeof waited, Task>>();
  const listed = await client.list({ task: summarize, status: "failed", limit: 10 });
  expectType<Equal<typeof listed, Task<{ url: string }, { summary: string }>[]>>();
  const all = await client.list();
  expectType<Equal<typeof all, Task[]>>();
  // @ts-expect-error a task name is not a TaskDef
  await client.get(submitted.id, "summarize");
}

// The result type comes from the TaskDef (or an explicit type argument), never from what the caller's variable expects.
export async function resultNotInferredFromTheCaller(client: CairnQ): Promise<void> {
  const resize = defineTask<{ url: string }, { bytes: number }>("image.resize");
  // @ts-expect-error the TaskDef's result is { bytes: number }
  const called: string = await client.call(resize, { url: "u" });
  // @ts-expect-error the TaskDef's result is { bytes: number }
  const row: Task<{ url: string }, string[]> = await client.submit(resize, { url: "u" });
  // @ts-expect-error the TaskDef's result is { bytes: number }
  const outcome: SubmitOutcome<{ url: string }, boolean> = await client.submitOutcome(resize, { url: "u" });
  const returned = async (): Promise<number> => {
    // @ts-expect-error the TaskDef's result is { bytes: number }
    return client.call(resize, { url: "u" });
  };
  // A name is still typed by explicit type arguments, and a matching annotation compiles.
  const counted: number = await client.call<number>("count");
  const bytes: { bytes: number } = await client.call(resize, { url: "u" });
  void [called, row, outcome, returned, counted, bytes];
}
