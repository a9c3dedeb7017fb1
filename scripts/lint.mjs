#!/usr/bin/env node
// `pnpm lint:repo` (the root task `//#lint:repo`, run by `pnpm test`): every
// workspace package's `lint` in ONE ESLint process.
//
// Each package's `lint` script is `eslint <paths>` run from its directory.
// Typed linting (typescript-eslint's projectService) builds a TypeScript
// program for each tsconfig: 17 separate ESLint processes each loaded
// TypeScript, ESLint and the plugins again and parsed the standard library,
// @types/node and the dependencies' declarations again. In one process the
// project service shares parsed files between the packages' programs: the same
// files, the same rules (the root eslint.config.js, as each package's run
// finds it), about half the CPU time (docs/testing.md, "The checks").
//
// The paths come from the packages' own `lint` scripts, so a path added there
// is linted here too; a `lint` script that is anything but `eslint <paths>`
// fails this script rather than being left out.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The workspace's package directories, relative to the root (pnpm-workspace.yaml's globs: `dir` or `dir/*`). */
export function workspaceDirs(root = ROOT) {
  const yaml = fs.readFileSync(path.join(root, "pnpm-workspace.yaml"), "utf8");
  const block = /^packages:\s*\n((?:[ \t]+-[^\n]*\n?)+)/m.exec(yaml);
  if (!block) throw new Error("pnpm-workspace.yaml: no packages list");
  const dirs = [];
  for (const m of block[1].matchAll(/-\s*["']?([^"'\s]+)["']?/g)) {
    const glob = m[1];
    if (glob.endsWith("/*")) {
      const parent = glob.slice(0, -2);
      const at = path.join(root, parent);
      if (!fs.existsSync(at)) continue;
      for (const entry of fs.readdirSync(at, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
        if (entry.isDirectory() && fs.existsSync(path.join(at, entry.name, "package.json"))) dirs.push(`${parent}/${entry.name}`);
      }
    } else if (!glob.includes("*")) {
      if (fs.existsSync(path.join(root, glob, "package.json"))) dirs.push(glob);
    } else {
      throw new Error(`pnpm-workspace.yaml: the glob ${glob} is neither "dir" nor "dir/*"; teach scripts/lint.mjs to read it`);
    }
  }
  return dirs;
}

/**
 * Packages left to their own `lint` task (run beside this one by `pnpm test`): examples/nextjs, whose
 * lint waits for its `next build` (a minute, the last build to finish), which no other package needs.
 * Waiting for it here would hold every package's lint back until then.
 */
export const OWN_LINT = ["examples/nextjs"];

/** Every path the packages' `lint` scripts name, relative to the root (but OWN_LINT's). */
export function lintPaths(root = ROOT) {
  const paths = [];
  for (const dir of workspaceDirs(root)) {
    if (OWN_LINT.includes(dir)) continue;
    const script = JSON.parse(fs.readFileSync(path.join(root, dir, "package.json"), "utf8")).scripts?.lint;
    if (script === undefined) continue;
    const words = script.trim().split(/\s+/);
    if (words[0] !== "eslint" || words.length < 2 || words.slice(1).some((w) => w.startsWith("-") || /["'$&|;<>*]/.test(w))) {
      throw new Error(`${dir}: its lint script is "${script}"; scripts/lint.mjs runs only "eslint <paths>" scripts`);
    }
    for (const p of words.slice(1)) {
      if (!fs.existsSync(path.join(root, dir, p))) throw new Error(`${dir}: its lint script names ${p}, which does not exist`);
      paths.push(path.posix.join(dir, p));
    }
  }
  return paths;
}

/**
 * The builds turbo.json's `//#lint:repo` waits for must be every package's build (but OWN_LINT's), as each package's
 * own `lint` waited for its build and its dependencies' (typed rules read their declarations from
 * dist/): returns the builds it misses, as turbo task ids.
 */
export function missingBuilds(root = ROOT) {
  const dependsOn = JSON.parse(fs.readFileSync(path.join(root, "turbo.json"), "utf8")).tasks["//#lint:repo"]?.dependsOn ?? [];
  const missing = [];
  for (const dir of workspaceDirs(root)) {
    if (OWN_LINT.includes(dir)) continue;
    const pkg = JSON.parse(fs.readFileSync(path.join(root, dir, "package.json"), "utf8"));
    if (pkg.scripts?.build !== undefined && !dependsOn.includes(`${pkg.name}#build`)) missing.push(`${pkg.name}#build`);
  }
  return missing;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const missing = missingBuilds();
  if (missing.length > 0) {
    console.error(`lint: turbo.json's //#lint:repo does not depend on ${missing.join(", ")}: add them to its dependsOn`);
    process.exit(1);
  }
  const paths = lintPaths();
  const eslint = path.join(ROOT, "node_modules", ".bin", "eslint");
  console.log(`lint: one ESLint run over ${paths.length} paths of every package's lint script`);
  const r = spawnSync(eslint, [...paths, ...process.argv.slice(2)], { cwd: ROOT, stdio: "inherit" });
  if (r.error) {
    console.error(`lint: could not run ${eslint}: ${r.error.message}`);
    process.exit(1);
  }
  process.exit(r.status ?? 1);
}
