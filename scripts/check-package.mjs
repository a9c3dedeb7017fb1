#!/usr/bin/env node
// The checks publint and attw do not make, run by every published package's
// `check-package` (from its own directory, after publint --strict and
// attw --pack): what a user sees on the registry and gets from `npm install`.
//
//   - package.json carries the metadata a registry page and an audit need
//     (repository with its directory, homepage, bugs, keywords, author, MIT);
//   - LICENSE is the repository's, byte for byte, and is packed;
//   - README.md exists, shows an install line and a code example, links
//     docs/protocol.md, and uses no relative link (they break on the registry);
//   - third-party runtime dependencies are ranges, never exact pins, and a
//     database driver is only ever an optional peer (the app chooses it);
//   - the packed file list (pnpm pack --dry-run) holds every entry point and
//     every source a source map or declaration map points at.
//
// Exits 1 listing every problem found.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = "https://github.com/cairnq/cairnq";
const DRIVERS = ["better-sqlite3", "pg", "mysql2"];
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Every problem with the package in `dir`, as sentences; `packed` is the packed file list (relative paths). */
export function problemsOf(dir, packed) {
  const problems = [];
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  const rel = path.relative(ROOT, dir).split(path.sep).join("/");

  // --- metadata
  const want = {
    license: "MIT",
    homepage: `${REPO}/tree/main/${rel}#readme`,
    "bugs.url": `${REPO}/issues`,
    "repository.type": "git",
    "repository.url": `git+${REPO}.git`,
    "repository.directory": rel,
    type: "module",
    sideEffects: false,
  };
  for (const [field, value] of Object.entries(want)) {
    const got = field.split(".").reduce((o, k) => (o == null ? undefined : o[k]), pkg);
    if (got !== value) problems.push(`package.json ${field} is ${JSON.stringify(got)}, expected ${JSON.stringify(value)}`);
  }
  for (const field of ["description", "author"]) {
    if (typeof pkg[field] !== "string" || pkg[field] === "") problems.push(`package.json has no ${field}`);
  }
  if (!Array.isArray(pkg.keywords) || pkg.keywords.length === 0) problems.push("package.json has no keywords");
  if (!pkg.engines?.node) problems.push("package.json has no engines.node");
  for (const entry of ["dist", "src", "LICENSE"]) {
    if (!pkg.files?.includes(entry)) problems.push(`package.json files lacks "${entry}"`);
  }

  // --- LICENSE
  const license = path.join(dir, "LICENSE");
  if (!fs.existsSync(license)) problems.push("no LICENSE file (copy the repository's LICENSE)");
  else if (fs.readFileSync(license, "utf8") !== fs.readFileSync(path.join(ROOT, "LICENSE"), "utf8")) {
    problems.push("LICENSE differs from the repository's LICENSE (copy it again)");
  }

  // --- README
  const readmePath = path.join(dir, "README.md");
  if (!fs.existsSync(readmePath)) problems.push("no README.md");
  else {
    const readme = fs.readFileSync(readmePath, "utf8");
    if (!/^(npm|pnpm|yarn) (install|add) /m.test(readme)) problems.push("README.md has no install line (npm install …)");
    if (!/^```(ts|typescript|js)\s*$/m.test(readme)) problems.push("README.md has no ts/js code example");
    if (!readme.includes(`${REPO}/blob/main/docs/protocol.md`)) {
      problems.push(`README.md does not link the protocol (${REPO}/blob/main/docs/protocol.md)`);
    }
    // Outside code blocks, every link target must be absolute or an anchor: the registry renders the README alone.
    const prose = readme.replace(/^```[\s\S]*?^```/gm, "");
    for (const m of prose.matchAll(/\]\(([^)\s]+)[^)]*\)|^\[[^\]]+\]:\s*(\S+)/gm)) {
      const target = m[1] ?? m[2];
      if (!/^(https?:|mailto:|#)/.test(target)) problems.push(`README.md links "${target}": use an absolute URL (${REPO}/blob/main/…)`);
    }
    for (const m of prose.matchAll(/<img[^>]*\ssrc="([^"]+)"/g)) {
      if (!/^https?:/.test(m[1])) problems.push(`README.md shows the image "${m[1]}": use an absolute URL`);
    }
  }

  // --- dependencies
  for (const [name, range] of Object.entries(pkg.dependencies ?? {})) {
    if (DRIVERS.includes(name)) {
      problems.push(`"${name}" is a dependency: a driver must be an optional peer dependency, so the app installs only its own database's`);
    } else if (!range.startsWith("workspace:") && /^\d/.test(range)) {
      problems.push(`dependency ${name} is pinned to ${range}: use a range (^${range}) so an app's own copy is shared`);
    }
  }
  for (const name of Object.keys(pkg.peerDependencies ?? {})) {
    if (DRIVERS.includes(name) && pkg.peerDependenciesMeta?.[name]?.optional !== true) {
      problems.push(`peer dependency ${name} is not optional: npm would install it for every app`);
    }
  }

  // --- what is packed
  const files = new Set(packed);
  if (!files.has("LICENSE")) problems.push("LICENSE is not packed");
  if (!files.has("README.md")) problems.push("README.md is not packed");
  const entries = [pkg.main, pkg.types, ...Object.values(pkg.bin ?? {})];
  const walk = (v) => (typeof v === "string" ? entries.push(v) : v && typeof v === "object" && Object.values(v).forEach(walk));
  walk(pkg.exports);
  for (const entry of entries.filter(Boolean)) {
    const file = path.posix.normalize(entry);
    if (file !== "package.json" && !files.has(file)) problems.push(`entry point ${entry} is not packed`);
  }
  let maps = 0;
  for (const file of files) {
    if (!file.endsWith(".map")) continue;
    maps++;
    const map = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"));
    for (const source of map.sources ?? []) {
      const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(file), map.sourceRoot ?? "", source));
      if (!files.has(resolved)) problems.push(`${file} points at ${source}, which is not packed`);
    }
  }
  if (maps === 0 && files.has("dist/index.js")) problems.push("no source maps packed (the build emits them; did the build run?)");
  return problems;
}

/** The file list `pnpm pack` would put in the tarball of the package in `dir`. */
export function packedFiles(dir) {
  const out = execFileSync("pnpm", ["pack", "--dry-run", "--json"], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  const json = JSON.parse(out.slice(out.indexOf("{")));
  return json.files.map((f) => f.path);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = path.resolve(process.argv[2] ?? process.cwd());
  const name = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).name;
  const problems = problemsOf(dir, packedFiles(dir));
  if (problems.length > 0) {
    console.error(`check-package: ${name} is not ready to publish:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    process.exit(1);
  }
  console.log(`check-package: ${name}: metadata, LICENSE, README links, dependency ranges and packed files ok`);
}
