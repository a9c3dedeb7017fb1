import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { createTestQueue } from "@cairnq/testing";

const read = (path: string): string => readFileSync(new URL(`../${path}`, import.meta.url), "utf8");

/** The first ```ts block after `heading` in `markdown`. */
function blockAfter(markdown: string, heading: string): string {
  const section = markdown.slice(markdown.indexOf(heading));
  const start = section.indexOf("```ts\n") + "```ts\n".length;
  return section.slice(start, section.indexOf("```\n", start));
}

it("the README's example is test/readme-example.test.ts, verbatim", () => {
  const readme = read("README.md");
  const marker = "<!-- example: test/readme-example.test.ts -->\n```ts\n";
  const start = readme.indexOf(marker);
  expect(start).toBeGreaterThanOrEqual(0);
  const body = readme.slice(start + marker.length);
  expect(body.slice(0, body.indexOf("```\n"))).toBe(read("test/readme-example.test.ts"));
});

it("the worker README's 'Testing your handlers' example is this test's code, and does what its comments say", async () => {
  const own = read("test/readme.test.ts");
  const begin = own.indexOf("  // example:begin\n") + "  // example:begin\n".length;
  const code = own
    .slice(begin, own.indexOf("  // example:end\n"))
    .split("\n")
    .map((line) => line.replace(/^ {2}/, ""))
    .join("\n");
  expect(blockAfter(read("../worker/README.md"), "## Testing your handlers")).toBe(code);

  // example:begin
  const queue = await createTestQueue(); // @cairnq/testing, a dev dependency
  queue.worker({ retryBackoffMs: 1000 }).task("charge", (ctx) => {
    if (ctx.attempt === 1) throw new Error("timed out");
    return "charged";
  });
  await queue.client.submit("charge");
  const first = await queue.drain(); // first.ran: attempt 1, outcome "retrying"
  const later = await queue.advance(1000); // past its backoff — later.ran: attempt 2, outcome "succeeded"
  await queue.close();
  // example:end
  expect(first.ran.map((run) => [run.attempt, run.outcome])).toEqual([[1, "retrying"]]);
  expect(later.ran.map((run) => [run.attempt, run.outcome])).toEqual([[2, "succeeded"]]);
});
