/**
 * docs/writing-a-store.md stays true to the code: every block marked
 * `<!-- excerpt: path -->` is a piece of that file (its lines in order, runs
 * between `// …` lines consecutive, indentation aside), and every name a
 * TypeScript block imports from a `@cairnq/*` package is exported by that
 * package's entry (values and types alike, read from the entry's source).
 * The guide's case families per capability are checked against `CONFORMANCE_CASES`,
 * and its skeleton dialect (test/support/guide-skeleton.ts) builds a store.
 */
import { readFileSync } from "node:fs";
import { CONFORMANCE_CASES, DEFAULT_STORE_CAPABILITIES } from "@cairnq/conformance";
import type { StoreCapabilities } from "@cairnq/protocol";
import { DummyDriver, Kysely, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler } from "kysely";
import { describe, expect, it } from "vitest";
import { MyStore } from "./support/guide-skeleton.js";

const ROOT = new URL("../../../", import.meta.url);
const GUIDE = readFileSync(new URL("docs/writing-a-store.md", ROOT), "utf8");

interface Block {
  readonly lang: string;
  readonly code: string;
  /** The file the block is an excerpt of, when marked. */
  readonly excerptOf: string | null;
}

function blocks(markdown: string): Block[] {
  const found: Block[] = [];
  const fence = /(?:<!-- excerpt: (\S+) -->\n)?```(\w*)\n([\s\S]*?)\n```/g;
  for (const m of markdown.matchAll(fence)) found.push({ excerptOf: m[1] ?? null, lang: m[2] ?? "", code: m[3] ?? "" });
  return found;
}

const ELISION = /^\s*\/\/ …\s*$/;
const lines = (text: string): string[] => text.split("\n").map((l) => l.trim()).filter((l) => l !== "");

/** Whether `excerpt`'s runs (split at `// …` lines) appear in `source`, each consecutively, in order. */
function isExcerptOf(excerpt: string, source: string): { ok: true } | { ok: false; missing: string } {
  const file = lines(source);
  const runs: string[][] = [[]];
  for (const line of excerpt.split("\n")) {
    if (ELISION.test(line)) runs.push([]);
    else if (line.trim() !== "") runs.at(-1)!.push(line.trim());
  }
  let from = 0;
  for (const run of runs.filter((r) => r.length > 0)) {
    let at = -1;
    for (let i = from; i + run.length <= file.length; i++) {
      if (run.every((line, j) => file[i + j] === line)) {
        at = i;
        break;
      }
    }
    if (at === -1) return { ok: false, missing: run.join("\n") };
    from = at + run.length;
  }
  return { ok: true };
}

/** The entry source of a `@cairnq/*` import specifier in this repository. */
function entrySource(specifier: string): string {
  const sub = /^@cairnq\/protocol\/(adapter|sdk)$/.exec(specifier);
  if (sub) return `packages/protocol/src/${sub[1]}.ts`;
  if (specifier === "@cairnq/conformance") return "conformance/src/index.ts";
  if (specifier === "@cairnq/conformance/vitest") return "conformance/src/vitest.ts";
  if (specifier === "@cairnq/test-support") return "packages/test-support/src/index.ts";
  const pkg = /^@cairnq\/([a-z-]+)$/.exec(specifier);
  if (!pkg) throw new Error(`the guide imports ${specifier}, which this test does not know how to resolve`);
  return `packages/${pkg[1]}/src/index.ts`;
}

/** Every name an entry exports (named re-exports, `export type`, declarations), following `export *`. */
function exportedNames(path: string, seen = new Set<string>()): Set<string> {
  const names = new Set<string>();
  if (seen.has(path)) return names;
  seen.add(path);
  const source = readFileSync(new URL(path, ROOT), "utf8");
  for (const m of source.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const part of (m[1] ?? "").split(",")) {
      const name = part.trim().replace(/^type\s+/, "").split(/\s+as\s+/).at(-1)?.trim();
      if (name) names.add(name);
    }
  }
  for (const m of source.matchAll(/export\s+(?:declare\s+)?(?:abstract\s+)?(?:class|function|const|let|interface|type|enum)\s+(\w+)/g)) names.add(m[1]!);
  for (const m of source.matchAll(/export\s+\*\s+from\s+"(\.[^"]+)"/g)) {
    const target = new URL(m[1]!.replace(/\.js$/, ".ts"), new URL(path, ROOT)).pathname.slice(new URL(ROOT).pathname.length);
    for (const name of exportedNames(target, seen)) names.add(name);
  }
  return names;
}

/** `{ specifier, names }` of every `import … from "@cairnq/…"` in `code`. */
function cairnqImports(code: string): { specifier: string; names: string[] }[] {
  return [...code.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+"(@cairnq\/[^"]+)"/g)].map((m) => ({
    specifier: m[2]!,
    names: m[1]!.split(",").map((n) => n.trim().replace(/^type\s+/, "")).filter((n) => n !== ""),
  }));
}

const all = blocks(GUIDE);

describe("docs/writing-a-store.md", () => {
  it("has excerpts and TypeScript blocks to check", () => {
    expect(all.filter((b) => b.excerptOf !== null).length).toBeGreaterThanOrEqual(7);
    expect(all.filter((b) => b.lang === "ts").length).toBeGreaterThanOrEqual(8);
  });

  for (const [i, block] of all.entries()) {
    if (block.excerptOf === null) continue;
    it(`excerpt ${i} is a piece of ${block.excerptOf}`, () => {
      const result = isExcerptOf(block.code, readFileSync(new URL(block.excerptOf!, ROOT), "utf8"));
      expect(result).toEqual({ ok: true });
    });
  }

  it("imports only names the @cairnq packages export", () => {
    const unknown: string[] = [];
    for (const block of all.filter((b) => b.lang === "ts")) {
      for (const { specifier, names } of cairnqImports(block.code)) {
        const exported = exportedNames(entrySource(specifier));
        for (const name of names) if (!exported.has(name)) unknown.push(`${name} from ${specifier}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it("builds a store from the skeleton dialect, with the defaults the guide names", () => {
    const db = new Kysely<Record<string, never>>({
      dialect: {
        createAdapter: () => new SqliteAdapter(),
        createDriver: () => new DummyDriver(),
        createIntrospector: (k) => new SqliteIntrospector(k),
        createQueryCompiler: () => new SqliteQueryCompiler(),
      },
    });
    const store = new MyStore(db);
    expect(store.dialect.name).toBe("mydb");
    expect(store.dialect.syntax.placeholder(2, "text")).toBe("?2");
    expect(store.dialect.capabilities).toEqual({ skipLocked: false, pushWakeups: false, transactionalComplete: false, databaseClock: false });
    expect(store.capabilities).toMatchObject({ flowControl: true, schedules: true, durableSteps: true, groups: true, pushWakeups: false });
  });

  it("names the kit's case families as the kit gates them", () => {
    const runs = (caps: Partial<StoreCapabilities>): string[] =>
      CONFORMANCE_CASES.filter((c) => (c.skipUnless?.({ ...DEFAULT_STORE_CAPABILITIES, ...caps }) ?? null) === null).map((c) => c.id);
    const mysql = { transactionalComplete: true, databaseClock: true, flowControl: true, schedules: true, completeRef: true, claimReprobe: true, durableSteps: true, queueHealth: true, groups: true };
    expect(GUIDE).toContain("The MySQL store runs every case but one, `push-signals`");
    expect(CONFORMANCE_CASES.map((c) => c.id).filter((id) => !runs(mysql).includes(id))).toEqual(["push-signals"]);
    expect(runs({}).length).toBeGreaterThan(CONFORMANCE_CASES.length / 2);
    // Each flag's row: the cases it turns on (every other flag as the MySQL store declares them) all match the
    // row's id patterns, and there is at least one.
    const gained = (flag: keyof StoreCapabilities): string[] =>
      runs({ ...mysql, [flag]: true }).filter((id) => !runs({ ...mysql, [flag]: false }).includes(id));
    const rows: [keyof StoreCapabilities, string, RegExp][] = [
      ["transactionalComplete", "| `complete-in` |", /^complete-in$/],
      ["flowControl", "| `flow-*` and, with `groups`, `group-*` |", /^(flow|group)-/],
      ["groups", "| `group-*` (with `flowControl`) |", /^group-/],
      ["schedules", "| `schedule-slot*`, `group-schedule-slots` |", /^(schedule-slot|group-schedule-slots$)/],
      ["completeRef", "| `complete-ref-*` |", /^complete-ref-/],
      ["claimReprobe", "| `claim-reprobe-*` |", /^claim-reprobe-/],
      ["durableSteps", "| `steps-*`, `group-debounce-begun` (with `groups`) |", /^(steps-|group-debounce-begun$)/],
      ["pushWakeups", "| `push-signals`, in place of `subscribe-without-push-is-silent` |", /^push-signals$/],
    ];
    for (const [flag, text, pattern] of rows) {
      expect(GUIDE).toContain(text);
      const ids = gained(flag);
      expect(ids.length, flag).toBeGreaterThan(0);
      expect(ids.filter((id) => !pattern.test(id)), flag).toEqual([]);
    }
    for (const flag of ["databaseClock", "queueHealth"] as const) expect(gained(flag), flag).toEqual([]);
  });
});
