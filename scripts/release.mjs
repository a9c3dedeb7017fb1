#!/usr/bin/env node
// `pnpm release [--dry-run]`: everything publishing needs, short of the
// credentials.
//
//   1. the release plan: pending changesets (`changeset status`). A real
//      release refuses while any are pending — run `pnpm changeset version`,
//      review the versions and CHANGELOGs, commit, then release that commit;
//      a dry run prints the plan and goes on with the current versions;
//   2. turbo run build typecheck lint check-package (publint, attw, and
//      scripts/check-package.mjs on every published package);
//   3. what each package's tarball holds (pnpm pack --dry-run);
//   4. publish: a dry run runs `pnpm -r publish --dry-run` (contacts the
//      registry, uploads nothing); a real run checks `npm whoami` first, so a
//      missing login fails before anything is published, then runs
//      `changeset publish` (publishes each package whose version is not on
//      the registry yet, in dependency order, and tags it).
//
// Private packages (examples, bench, tests) are never versioned or
// published: .changeset/config.json's privatePackages and `private: true`.

import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { packedFiles } from "./check-package.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
process.chdir(ROOT);
const args = process.argv.slice(2).filter((a) => a !== "--");
const dryRun = args.includes("--dry-run");
for (const a of args) {
  if (a !== "--dry-run") {
    console.error(`release: unknown argument '${a}'; usage: pnpm release [--dry-run]`);
    process.exit(2);
  }
}
process.env.TURBO_TELEMETRY_DISABLED ??= "1";
process.env.TURBO_NO_UPDATE_NOTIFIER ??= "1";
if (!process.env.npm_config_nodedir && fs.existsSync("/usr/include/node/node.h")) process.env.npm_config_nodedir = "/usr";

function step(title) {
  console.log(`\n== ${title}`);
}

/** Runs a command with inherited output; exits this script with its code on failure. */
function run(cmd, cmdArgs) {
  console.log(`> ${cmd} ${cmdArgs.join(" ")}`);
  const r = spawnSync(cmd, cmdArgs, { stdio: "inherit", env: process.env });
  if (r.status !== 0) {
    console.error(`release: '${cmd} ${cmdArgs.join(" ")}' failed (exit ${r.status ?? r.signal}); nothing was published`);
    process.exit(r.status || 1);
  }
}

/** The published workspace packages: packages/* and conformance, unless private. */
function publishedPackages() {
  const dirs = [...fs.readdirSync("packages").map((d) => path.join("packages", d)), "conformance"];
  return dirs
    .filter((d) => fs.existsSync(path.join(d, "package.json")))
    .map((d) => ({ dir: d, pkg: JSON.parse(fs.readFileSync(path.join(d, "package.json"), "utf8")) }))
    .filter(({ pkg }) => pkg.private !== true);
}

step(`release plan${dryRun ? " (dry run)" : ""}`);
const statusFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "cairnq-release-")), "status.json");
execFileSync("pnpm", ["exec", "changeset", "status", `--output=${path.relative(ROOT, statusFile)}`], { stdio: ["ignore", "ignore", "inherit"] });
const status = JSON.parse(fs.readFileSync(statusFile, "utf8"));
// Private dependents (examples, bench, tests) appear with type "none": they are never versioned.
status.releases = status.releases.filter((r) => r.type !== "none");
fs.rmSync(path.dirname(statusFile), { recursive: true, force: true });
if (status.releases.length > 0) {
  for (const r of status.releases) console.log(`  ${r.name}: ${r.oldVersion} → ${r.newVersion} (${r.type}, ${r.changesets.length} changesets)`);
  if (!dryRun) {
    console.error(
      `\nrelease: ${status.changesets.length} changesets are pending. Run 'pnpm changeset version', review the versions and CHANGELOGs, ` +
        `commit, and release that commit (a dry run shows this plan and checks the rest).`,
    );
    process.exit(1);
  }
  console.log(`  (${status.changesets.length} pending changesets: a real release needs 'pnpm changeset version' committed first;` +
    ` the dry run goes on with the current versions)`);
} else {
  console.log("  no pending changesets: releasing the versions in the package.json files");
}

step("build, typecheck, lint, check-package");
run("pnpm", ["exec", "turbo", "run", "build", "typecheck", "lint", "check-package", "--concurrency=1", "--output-logs=errors-only", "--ui=stream"]);

step("tarballs");
const packages = publishedPackages();
for (const { dir, pkg } of packages) {
  const files = packedFiles(dir);
  const bytes = files.reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
  console.log(`  ${pkg.name}@${pkg.version}: ${files.length} files, ${(bytes / 1024).toFixed(0)} kB unpacked`);
}

if (dryRun) {
  step("publish (dry run: nothing is uploaded)");
  run("pnpm", ["-r", "--filter", "./packages/*", "--filter", "./conformance", "publish", "--dry-run", "--no-git-checks", "--access", "public"]);
  console.log(`\nrelease: dry run ok — ${packages.length} packages would be published.`);
} else {
  step("publish");
  const who = spawnSync("npm", ["whoami"], { encoding: "utf8" });
  if (who.status !== 0) {
    console.error("release: not logged in to the npm registry (npm whoami failed). Log in (npm login) or set NPM_TOKEN in ~/.npmrc; nothing was published.");
    process.exit(1);
  }
  console.log(`  as ${who.stdout.trim()}`);
  run("pnpm", ["exec", "changeset", "publish"]);
}
