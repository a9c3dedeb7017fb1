// Compiled expecting errors: each `// error:` comment is a regular expression the diagnostic on the next line
// must match (and "not:" one it must not), so the compiler's explanation is tested, not only that it refuses.
import { defineTask } from "cairnq";
import type { CairnQ } from "cairnq";

const summarize = defineTask<{ url: string }, { summary: string }>("summarize");

export async function wrong(client: CairnQ): Promise<void> {
  // error: Type 'number' is not assignable to type 'string' | not: parameter of type 'string'
  await client.submit(summarize, { url: 5 });
  // error: Type 'number' is not assignable to type 'string' | not: parameter of type 'string'
  await client.call(summarize, { url: 5 });
  // error: Expected 2-3 arguments, but got 1
  await client.submit(summarize);
  // error: payload\.at is a Date, which JSON turns into a string
  defineTask<{ at: Date }>("dated");
}
