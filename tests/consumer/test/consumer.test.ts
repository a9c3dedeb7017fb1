/**
 * The consumer test: what a user gets from the registry, tested the way a
 * user gets it. Every published package is packed with `pnpm pack` (so
 * `workspace:^` becomes a version, `files` decides what ships), and the
 * tarballs are installed with npm into apps under the OS temp directory,
 * outside the workspace, so nothing resolves through pnpm's links:
 *
 *   - a SQLite app (`cairnq` + `better-sqlite3`) runs the top README's first
 *     `ts` code block, copied out of README.md here so the README cannot drift:
 *     it must type-check against the installed declarations (skipLibCheck off),
 *     print what its `// …` comments say, and exit by itself; the installed
 *     `cairnq` bin then reads the database it wrote;
 *   - a Postgres-only app (`cairnq` + `pg`) must have no better-sqlite3
 *     anywhere in node_modules, runs a `call()` on Postgres
 *     (CAIRNQ_TEST_PG_DSN, a fresh schema it drops), and gets the
 *     "npm install better-sqlite3" error from a SQLite factory;
 *   - an app with `cairnq` alone (no better-sqlite3, nothing compiled) runs
 *     the same README example under Node 22 (node:sqlite) and under Bun
 *     (bun:sqlite, the TypeScript file as is), both fetched by
 *     scripts/runtimes.mjs.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureRuntime } from "../../../scripts/runtimes.mjs";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PG_DSN = process.env.CAIRNQ_TEST_PG_DSN;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion; a non-zero exit or a hang past `timeoutMs` throws with the whole output. */
function run(cmd: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`could not run ${cmd}: ${err.message}`));
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const ran = { code, stdout, stderr };
      if (code === 0) return resolve(ran);
      const why = signal === "SIGKILL" ? `did not finish within ${options.timeoutMs}ms (killed)` : `exited with ${code ?? signal}`;
      reject(new Error(`${cmd} ${args.join(" ")} (in ${options.cwd}) ${why}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`));
    });
  });
}

/**
 * The environment of everything run in an app: ours without what pnpm, turbo
 * and vitest set for this script — the npm_* settings describe the
 * workspace, and pnpm's NODE_PATH would let the app resolve the workspace's
 * own better-sqlite3 — keeping only what the native build needs (the local
 * Node headers: no prebuilt binary or header download reaches this machine).
 */
function appEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(npm_|pnpm_|NODE_PATH$|NODE_OPTIONS$|VITEST|TURBO_)/i.test(k)) env[k] = v;
  }
  const nodedir = process.env.npm_config_nodedir ?? (fs.existsSync("/usr/include/node/node.h") ? "/usr" : undefined);
  if (nodedir !== undefined) env.npm_config_nodedir = nodedir;
  env.npm_config_update_notifier = "false";
  return { ...env, ...extra };
}

const NPM_INSTALL = ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"];

/** The pnpm that runs this test (npm_execpath), else the one on PATH. */
function pnpmCommand(): [string, string[]] {
  const execpath = process.env.npm_execpath;
  if (execpath && /^pnpm/.test(path.basename(execpath))) {
    return /\.[cm]?js$/.test(execpath) ? [process.execPath, [execpath]] : [execpath, []];
  }
  return ["pnpm", []];
}

/** Every workspace package that is published: `packages/*` and `conformance`, unless private. */
function publishedPackageDirs(): string[] {
  const dirs = [...fs.readdirSync(path.join(ROOT, "packages")).map((d) => path.join(ROOT, "packages", d)), path.join(ROOT, "conformance")];
  return dirs.filter((dir) => {
    const file = path.join(dir, "package.json");
    return fs.existsSync(file) && (JSON.parse(fs.readFileSync(file, "utf8")) as { private?: boolean }).private !== true;
  });
}

/** The first ```ts block of the top README, verbatim. */
function readmeExample(): string {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const m = /^```ts\n([\s\S]*?)^```$/m.exec(readme);
  if (!m?.[1]) throw new Error("README.md has no ```ts code block: the consumer test runs the README's first one");
  return m[1];
}

/** `console.log(…); // expected` lines of the example, in order: what its stdout must say. */
function expectedOutput(code: string): string[] {
  return [...code.matchAll(/^\s*console\.log\(.*\);\s*\/\/\s*(.+?)\s*$/gm)].map((m) => m[1]!);
}

/** Whether a directory named `name` exists anywhere under `dir` (nested installs included). */
function findPackageDir(dir: string, name: string): string | null {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const full = path.join(dir, entry.name);
    if (entry.name === name) return full;
    const found = findPackageDir(full, name);
    if (found !== null) return found;
  }
  return null;
}

/** Every native addon (`*.node` file) under `dir`. */
function nativeAddons(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, encoding: "utf8" })).filter((file) => file.endsWith(".node"));
}

/** An app directory with a package.json (ESM), as `npm init` would leave it. */
function makeApp(name: string): string {
  const dir = path.join(work, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "package.json"), `${JSON.stringify({ name, private: true, type: "module" }, null, 2)}\n`);
  return dir;
}

/**
 * A directory of local prebuilds for better-sqlite3's install script, holding the binary the
 * workspace already built for this Node (`version`: the workspace's copy, which the install pins).
 * The script (`prebuild-install || node-gyp rebuild`) downloads a prebuilt binary from the
 * project's releases; with no network here it would compile SQLite from source instead, a minute
 * of CPU in the busiest phase of `pnpm test`. prebuild-install's documented
 * `npm_config_better_sqlite3_local_prebuilds` directory stands in for that download, file name and
 * archive layout as published.
 */
async function betterSqlitePrebuilds(version: string): Promise<string> {
  const pkgDir = path.dirname(createRequire(path.join(ROOT, "packages/store-sqlite/package.json")).resolve("better-sqlite3/package.json"));
  const installed = (JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8")) as { version: string }).version;
  if (installed !== version) throw new Error(`the workspace's better-sqlite3 is ${installed}, but cairnq's devDependencies pin ${version}: run pnpm install`);
  const dir = path.join(work, "prebuilds");
  fs.mkdirSync(dir, { recursive: true });
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  await run("tar", ["-czf", path.join(dir, name), "-C", pkgDir, "build/Release/better_sqlite3.node"], { cwd: work, timeoutMs: 60_000 });
  return dir;
}

let work = "";
let tarballs: string[] = [];
let peers: Record<string, string> = {};

beforeAll(async () => {
  if (!PG_DSN) {
    throw new Error("CAIRNQ_TEST_PG_DSN is not set: the consumer test runs a call() on Postgres (pnpm test provides one; see docs/testing.md)");
  }
  work = fs.mkdtempSync(path.join(os.tmpdir(), "cairnq-consumer-"));
  const packs = path.join(work, "packs");
  fs.mkdirSync(packs);
  const [pnpm, pre] = pnpmCommand();
  // One at a time: pack is quick, and the machine is shared.
  for (const dir of publishedPackageDirs()) {
    const { stdout } = await run(pnpm, [...pre, "pack", "--pack-destination", packs, "--json"], { cwd: dir, timeoutMs: 60_000 });
    const json = JSON.parse(stdout.slice(stdout.indexOf("{"))) as { filename: string };
    tarballs.push(path.isAbsolute(json.filename) ? json.filename : path.join(packs, path.basename(json.filename)));
  }
  for (const t of tarballs) if (!fs.existsSync(t)) throw new Error(`pnpm pack reported ${t}, which does not exist`);
  peers = (JSON.parse(fs.readFileSync(path.join(ROOT, "packages/cairnq/package.json"), "utf8")) as { peerDependencies: Record<string, string> })
    .peerDependencies;
});

afterAll(() => {
  if (work !== "") fs.rmSync(work, { recursive: true, force: true });
  work = "";
  tarballs = [];
});

describe("a SQLite app: npm install cairnq better-sqlite3", () => {
  it("runs the README's example verbatim, type-checked against the installed packages, and the cairnq bin reads its database", async () => {
    const app = makeApp("sqlite-app");
    // The tarballs stand in for the registry's copies of cairnq and its @cairnq/* dependencies.
    // The version the workspace tests with (cairnq's devDependency), which npm checks against cairnq's peer range.
    const betterSqlite = (JSON.parse(fs.readFileSync(path.join(ROOT, "packages/cairnq/package.json"), "utf8")) as { devDependencies: Record<string, string> })
      .devDependencies["better-sqlite3"]!;
    const prebuilds = await betterSqlitePrebuilds(betterSqlite);
    await run("npm", [...NPM_INSTALL, ...tarballs, `better-sqlite3@${betterSqlite}`, "@types/node@^20"], {
      cwd: app,
      env: appEnv({ npm_config_better_sqlite3_local_prebuilds: prebuilds }),
      timeoutMs: 540_000,
    });
    expect(fs.existsSync(path.join(app, "node_modules/better-sqlite3/package.json"))).toBe(true);
    expect(fs.existsSync(path.join(app, "node_modules/better-sqlite3/build/Release/obj.target")), "better-sqlite3 was compiled instead of taking the local prebuild").toBe(false);
    expect(fs.existsSync(path.join(app, "node_modules/pg")), "pg installed in a SQLite-only app").toBe(false);

    const code = readmeExample();
    const expected = expectedOutput(code);
    expect(expected.length, "the README example shows its output in `// …` comments").toBeGreaterThan(0);

    // Types first: the example must compile against what was installed, declarations included.
    fs.writeFileSync(path.join(app, "example.ts"), code);
    fs.writeFileSync(
      path.join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          lib: ["ES2023"],
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ["node"],
        },
        files: ["example.ts"],
      }),
    );
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app, env: appEnv(), timeoutMs: 120_000 });

    // Then run it, as the user would after compiling it.
    const js = ts.transpileModule(code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
    fs.writeFileSync(path.join(app, "example.mjs"), js);
    const { stdout } = await run(process.execPath, ["example.mjs"], { cwd: app, env: appEnv(), timeoutMs: 60_000 });
    expect(stdout.trimEnd().split("\n")).toEqual(expected);

    const stats = await run(path.join(app, "node_modules/.bin/cairnq"), ["stats", "--db", "./cairnq.db", "--json"], {
      cwd: app,
      env: appEnv(),
      timeoutMs: 60_000,
    });
    const { totals } = JSON.parse(stats.stdout) as { totals: Record<string, number> };
    expect(totals).toMatchObject({ succeeded: 2, queued: 0, running: 0 });
  }, 900_000);
});

describe("a Postgres-only app: npm install cairnq pg", () => {
  it("installs no better-sqlite3, runs a call() on Postgres, and a SQLite factory says to install its driver", async () => {
    const app = makeApp("postgres-app");
    await run("npm", [...NPM_INSTALL, ...tarballs, `pg@${peers.pg}`], { cwd: app, env: appEnv(), timeoutMs: 300_000 });
    expect(fs.existsSync(path.join(app, "node_modules/pg/package.json"))).toBe(true);
    expect(findPackageDir(path.join(app, "node_modules"), "better-sqlite3"), "better-sqlite3 in a Postgres-only install").toBeNull();

    const schema = `cairnq_consumer_${randomBytes(5).toString("hex")}`;
    fs.writeFileSync(
      path.join(app, "call.mjs"),
      `import pg from "pg";
import { CairnQ, Worker, defineTask } from "cairnq";

const dsn = process.env.CAIRNQ_TEST_PG_DSN;
const schema = process.env.SCHEMA;
const add = defineTask("consumer.add");
const worker = Worker.postgres(dsn, { schema });
worker.task(add, async (_ctx, { a, b }) => ({ sum: a + b }));
const running = worker.run();
const cairnq = CairnQ.postgres(dsn, { schema });
try {
  console.log(JSON.stringify(await cairnq.call(add, { a: 2, b: 3 }, { waitTimeoutMs: 60_000 })));
} finally {
  await worker.stop();
  await running;
  await worker.close();
  await cairnq.close();
  const admin = new pg.Client({ connectionString: dsn });
  await admin.connect();
  await admin.query(\`drop schema if exists "\${schema}" cascade\`);
  await admin.end();
}

const sqlite = CairnQ.sqlite("./never.db");
try {
  await sqlite.stats();
  console.log("sqlite: opened without better-sqlite3?");
} catch (err) {
  console.log(\`sqlite: \${err.name}: \${err.message}\`);
} finally {
  await sqlite.close().catch(() => {});
}
`,
    );
    const { stdout } = await run(process.execPath, ["call.mjs"], {
      cwd: app,
      env: appEnv({ CAIRNQ_TEST_PG_DSN: PG_DSN, SCHEMA: schema }),
      timeoutMs: 90_000,
    });
    const [result, sqliteLine] = stdout.trimEnd().split("\n");
    expect(JSON.parse(result!)).toEqual({ sum: 5 });
    // Node 20 has no node:sqlite: the message names every driver it tried, then the fixes.
    expect(sqliteLine).toMatch(/^sqlite: CairnQError: @cairnq\/store-sqlite found no SQLite driver on Node v20.*better-sqlite3 is not installed.*npm install better-sqlite3$/);
  }, 600_000);
});

describe("an app without better-sqlite3 on Node 22 and on Bun: npm install cairnq", () => {
  it("installs nothing native and runs the README's example on node:sqlite under Node 22 and on bun:sqlite under Bun", async () => {
    // Fetched before the install, so a runtime that cannot be had fails first, with its reason.
    const node22 = ensureRuntime("node22");
    const bun = ensureRuntime("bun");
    const app = makeApp("no-addon-app");
    await run("npm", [...NPM_INSTALL, ...tarballs], { cwd: app, env: appEnv(), timeoutMs: 300_000 });
    expect(findPackageDir(path.join(app, "node_modules"), "better-sqlite3"), "better-sqlite3 in an install that did not ask for it").toBeNull();
    expect(nativeAddons(path.join(app, "node_modules")), "native addons in the install").toEqual([]);

    const code = readmeExample();
    const expected = expectedOutput(code);
    fs.writeFileSync(path.join(app, "example.ts"), code);
    const js = ts.transpileModule(code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
    fs.writeFileSync(path.join(app, "example.mjs"), js);
    fs.writeFileSync(
      path.join(app, "driver.mjs"),
      `import { SQLiteStore } from "cairnq";
const store = new SQLiteStore("./cairnq.db");
await store.connect();
const { succeeded } = (await store.stats()).default;
console.log(store.driver, succeeded);
await store.close();
`,
    );
    for (const [runtime, file] of [
      [node22, "example.mjs"],
      [bun, "example.ts"],
    ] as const) {
      fs.rmSync(path.join(app, "cairnq.db"), { force: true });
      const ran = await run(runtime.bin, [file], { cwd: app, env: appEnv(), timeoutMs: 60_000 });
      // Bun's console.log spreads an object over lines (`{\n  bytes: 3200,\n}`): compared without layout.
      const layout = (text: string): string => text.replace(/\s+/g, "").replace(/,([}\]])/g, "$1");
      expect(layout(ran.stdout), `${runtime.label}: ${file}`).toBe(layout(expected.join("\n")));
      expect(ran.stderr, `${runtime.label} printed to stderr`).toBe("");
      const driver = await run(runtime.bin, ["driver.mjs"], { cwd: app, env: appEnv(), timeoutMs: 60_000 });
      expect(driver.stdout.trim()).toBe(`${runtime.driver} 2`);
    }
  }, 600_000);
});
