import { readFileSync } from "node:fs";
import { expect, it } from "vitest";

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), "utf8");

it("the README's example is test/memory-store.test.ts, verbatim", () => {
  const readme = read("README.md");
  const marker = "<!-- example: test/memory-store.test.ts -->\n```ts\n";
  const start = readme.indexOf(marker);
  expect(start).toBeGreaterThanOrEqual(0);
  const body = readme.slice(start + marker.length);
  expect(body.slice(0, body.indexOf("```\n"))).toBe(read("test/memory-store.test.ts"));
});
