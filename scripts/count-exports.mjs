#!/usr/bin/env node
// Counts what each published entry point exports, from the built packages:
// values are what `import()` of the entry point really holds at run time;
// types are the names the entry point's declaration file exports with no run
// time value (interfaces, type aliases, `export type`). A class counts once,
// as a value. Run `pnpm build` first.
//
//   node scripts/count-exports.mjs            a table of counts
//   node scripts/count-exports.mjs --names    the names too
//   node scripts/count-exports.mjs --json     one JSON document
//
// It also says where one name has two meanings, and exits 1 if any:
//   - a name exported by two entry points of one package (each name lives in
//     one entry point, so an import line has one right answer), except the
//     types `@cairnq/conformance/vitest` re-exports so that a store's test
//     file needs that one import;
//   - a name exported by two packages as two different declarations (one
//     name, one meaning), except the umbrella's `CairnQ` and `Worker`, which
//     are the client's and the worker's classes with factories added.

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";
import ts from "typescript";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PACKAGES = ["cairnq", "client", "worker", "dashboard", "protocol", "store-kysely", "store-sqlite", "store-postgres", "store-mysql", "retention", "runtime", "testing"]
  .map((dir) => path.join(ROOT, "packages", dir))
  .concat(path.join(ROOT, "conformance"));
/** Deliberate re-declarations: the umbrella's subclasses that add factories to the same class. */
const SAME_THING = new Set(["cairnq:CairnQ", "cairnq:Worker"]);
/** Entry points that re-export their package's types on purpose: one import line for a store's test file. */
const CONVENIENCE = new Set(["@cairnq/conformance/vitest"]);

/** Every entry point of the package in `dir` (its exports map, `./package.json` aside). */
function entryPoints(dir) {
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  return Object.entries(pkg.exports)
    .filter(([subpath]) => subpath !== "./package.json")
    .map(([subpath, target]) => ({
      pkg: pkg.name,
      specifier: subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`,
      js: path.join(dir, target.default),
      dts: path.join(dir, target.types),
    }));
}

const entries = PACKAGES.flatMap(entryPoints);
const program = ts.createProgram(
  entries.map((e) => e.dts),
  { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, skipLibCheck: true, noEmit: true },
);
const checker = program.getTypeChecker();

/** The declaration a name finally points at, as `file:position`, to tell one thing re-exported from two things named alike. */
function origin(symbol) {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const decl = target.declarations?.[0];
  if (decl === undefined) return `?:${target.name}`;
  const file = decl.getSourceFile().fileName;
  // The same source reached through dist in one package and through a workspace link in another resolves to one real path.
  return `${fs.realpathSync(file)}:${decl.pos}`;
}

const results = [];
for (const entry of entries) {
  const source = program.getSourceFile(entry.dts);
  if (source === undefined) throw new Error(`${entry.dts} is missing: run pnpm build first`);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  const exported = moduleSymbol === undefined ? [] : checker.getExportsOfModule(moduleSymbol);
  const runtime = new Set(Object.keys(await import(pathToFileURL(entry.js).href)));
  const values = [...runtime].sort();
  const types = exported
    .map((s) => s.name)
    .filter((name) => !runtime.has(name))
    .sort();
  const origins = new Map(exported.map((s) => [s.name, origin(s)]));
  results.push({ ...entry, values, types, origins });
}

const problems = [];
const byName = new Map();
for (const r of results) {
  for (const [name, where] of r.origins) {
    if (!byName.has(name)) byName.set(name, []);
    byName.get(name).push({ r, where });
  }
}
for (const [name, seen] of byName) {
  for (let i = 0; i < seen.length; i++) {
    for (let j = i + 1; j < seen.length; j++) {
      const a = seen[i];
      const b = seen[j];
      const convenience = (CONVENIENCE.has(a.r.specifier) || CONVENIENCE.has(b.r.specifier)) && a.where === b.where && !a.r.values.includes(name);
      if (a.r.pkg === b.r.pkg && !convenience) problems.push(`${name} is exported by both ${a.r.specifier} and ${b.r.specifier}`);
      else if (a.where !== b.where && !SAME_THING.has(`${a.r.pkg}:${name}`) && !SAME_THING.has(`${b.r.pkg}:${name}`)) {
        problems.push(`${name} means two things: ${a.r.specifier} and ${b.r.specifier} export different declarations`);
      }
    }
  }
}

if (process.argv.includes("--json")) {
  const doc = Object.fromEntries(results.map((r) => [r.specifier, { values: r.values, types: r.types }]));
  process.stdout.write(`${JSON.stringify({ entryPoints: doc, problems }, null, 2)}\n`);
} else {
  const width = Math.max(...results.map((r) => r.specifier.length));
  console.log(`${"entry point".padEnd(width)}  values  types`);
  for (const r of results) {
    console.log(`${r.specifier.padEnd(width)}  ${String(r.values.length).padStart(6)}  ${String(r.types.length).padStart(5)}`);
    if (process.argv.includes("--names")) {
      console.log(`  values: ${r.values.join(", ")}`);
      console.log(`  types:  ${r.types.join(", ")}`);
    }
  }
  for (const p of problems) console.log(`problem: ${p}`);
}
process.exitCode = problems.length === 0 ? 0 : 1;
