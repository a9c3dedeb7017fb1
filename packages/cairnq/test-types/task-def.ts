// defineTask accepts only payload and result types that survive JSON; the error names the field.
import { defineTask } from "cairnq";
import type { JsonProblem, TaskDef, TaskPayload, TaskResult } from "cairnq";
import type { Equal } from "./assert.ts";
import { expectType } from "./assert.ts";

interface Email {
  to: string;
  cc?: string[];
  meta: { tries: number; tags: readonly string[]; flag: boolean | null };
}
const email = defineTask<Email, { sent: true; id: string }>("email");
expectType<Equal<typeof email, TaskDef<Email, { sent: true; id: string }>>>();
expectType<Equal<TaskPayload<typeof email>, Email>>();
expectType<Equal<TaskResult<typeof email>, { sent: true; id: string }>>();

// Untyped and loosely typed definitions are not checked (nothing is promised).
defineTask("untyped");
defineTask<unknown, unknown>("unknown");
defineTask<Record<string, unknown>, string[]>("records");
defineTask<{ a: [number, string] }, null>("tuple");
defineTask<void, void>("nothing");

// @ts-expect-error a Date comes back as a string
defineTask<{ at: Date }>("dated");
// @ts-expect-error a Map comes back as {}
defineTask<{ seen: Map<string, number> }>("mapped");
// @ts-expect-error a function is dropped
defineTask<{ run: () => void }>("callback");
// @ts-expect-error a bigint cannot be encoded
defineTask<{ n: bigint }>("big");
// @ts-expect-error the result is checked too, deep inside
defineTask<{ ok: true }, { rows: { when: Date }[] }>("deep-result");
// @ts-expect-error a class instance with methods does not come back as one
defineTask<{ url: URL }>("url");

expectType<Equal<JsonProblem<Email>, never>>();
expectType<Equal<JsonProblem<{ at: Date }, "payload">, "payload.at is a Date, which JSON turns into a string: send an ISO string or epoch ms">>();

// Recursive types are fine (checked to a depth, then trusted).
interface Tree {
  label: string;
  children: Tree[];
}
defineTask<Tree, Tree>("tree");
