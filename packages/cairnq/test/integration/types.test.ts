/**
 * The type tests (test-types/): compiled — never run — with TypeScript 5.9
 * (the repository's compiler) and TypeScript 7 (the native compiler, what
 * `npm install typescript` gives today), against the BUILT declarations of
 * `cairnq`, as an application sees them.
 *
 * - test-types/*.ts must compile cleanly (`// @ts-expect-error` marks what
 *   must not compile, `expectType<Equal<…>>()` what a type must be);
 * - test-types/errors/*.ts must fail exactly where a `// error: <regex>`
 *   comment says, with a message matching it (and not matching its
 *   `| not: <regex>` part): the compiler's explanation is part of the API.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { assertBuilt } from "../support/processes.ts";

const PACKAGE = fileURLToPath(new URL("../..", import.meta.url));
const TYPES = join(PACKAGE, "test-types");
const require = createRequire(join(PACKAGE, "package.json"));

/** The `tsc` bin a TypeScript package declares (TypeScript 7's exports map hides `bin/` from `require.resolve`). */
function tscOf(pkg: string): string {
  const manifest = require.resolve(`${pkg}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifest, "utf8")) as { bin: { tsc: string } };
  return join(dirname(manifest), bin.tsc);
}

/** The two compilers: the repository's TypeScript 5.9 and the `typescript7` alias (npm:typescript@7). */
const COMPILERS = [
  { label: "TypeScript 5.9", tsc: tscOf("typescript"), major: "5" },
  { label: "TypeScript 7", tsc: tscOf("typescript7"), major: "7" },
] as const;

function tsc(compiler: (typeof COMPILERS)[number], args: string[]): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [compiler.tsc, ...args], { cwd: PACKAGE, encoding: "utf8", timeout: 120_000 });
  if (run.error) throw run.error;
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** The diagnostics of a `--pretty false` run: `file(line,col): error TSxxxx: message` and its indented elaboration. */
function diagnostics(output: string): { file: string; line: number; message: string }[] {
  const found: { file: string; line: number; message: string }[] = [];
  for (const text of output.split("\n")) {
    const match = /^(.+?)\((\d+),\d+\): error (TS\d+: .*)$/.exec(text.trim());
    if (match) found.push({ file: match[1]!.replaceAll("\\", "/"), line: Number(match[2]), message: match[3]! });
    else if (/^\s/.test(text) && found.length > 0) found[found.length - 1]!.message += `\n${text.trim()}`;
  }
  return found;
}

/** The `// error: <regex> [| not: <regex>]` expectations of test-types/errors, by file and the line they govern. */
function expectations(): { file: string; line: number; must: RegExp; mustNot: RegExp | null }[] {
  const dir = join(TYPES, "errors");
  return readdirSync(dir)
    .filter((name) => name.endsWith(".ts"))
    .flatMap((name) =>
      readFileSync(join(dir, name), "utf8")
        .split("\n")
        .flatMap((text, index) => {
          const match = /^\s*\/\/ error: (.*?)(?: \| not: (.*))?$/.exec(text);
          if (!match) return [];
          return [{ file: `test-types/errors/${name}`, line: index + 2, must: new RegExp(match[1]!), mustNot: match[2] === undefined ? null : new RegExp(match[2]) }];
        }),
    );
}

describe.each(COMPILERS)("type tests with $label", (compiler) => {
  it("is the compiler it says", () => {
    expect(tsc(compiler, ["--version"]).output.trim()).toMatch(new RegExp(`^Version ${compiler.major}\\.`));
  });

  it("test-types/*.ts compile cleanly against the built declarations", () => {
    assertBuilt();
    const run = tsc(compiler, ["-p", "test-types/tsconfig.json", "--pretty", "false"]);
    expect(run.output.trim()).toBe("");
    expect(run.status).toBe(0);
  }, 120_000);

  it("test-types/errors/*.ts fail where they say, with the explanation they say", () => {
    assertBuilt();
    const run = tsc(compiler, ["-p", "test-types/errors/tsconfig.json", "--pretty", "false"]);
    const found = diagnostics(run.output);
    const wanted = expectations();
    expect(wanted.length).toBeGreaterThan(0);
    for (const want of wanted) {
      const here = found.filter((d) => d.file === want.file && d.line === want.line);
      expect(here.map((d) => d.message).join("\n"), `${want.file}:${want.line}`).toMatch(want.must);
      if (want.mustNot) for (const d of here) expect(d.message, `${want.file}:${want.line}`).not.toMatch(want.mustNot);
    }
    const unexpected = found.filter((d) => !wanted.some((w) => w.file === d.file && w.line === d.line));
    expect(unexpected, "errors no `// error:` comment announced").toEqual([]);
    expect(run.status).not.toBe(0);
  }, 120_000);
});
