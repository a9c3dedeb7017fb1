/**
 * Child processes for the tests that cross a process boundary: fixtures run
 * with `node` (TypeScript ones through tsx, with the workspace packages mapped
 * to their sources), their stdout read line by line, and none left running
 * after its test.
 */
import type { ChildProcessByStdio, ChildProcessWithoutNullStreams } from "node:child_process";
import { spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";

/**
 * The `--import` hook that maps `@cairnq/<name>` (and `/adapter`, `/sdk`) to
 * `packages/<name>/src/*.ts` in a child process, as vitest's aliases do in the
 * test process. The same relative path from `src/` and from `dist/`.
 */
export const REGISTER_SOURCES = fileURLToPath(new URL("../register/register-src.mjs", import.meta.url));

const children = new Set<ChildProcessWithoutNullStreams>();

/** Options of {@link spawnFixture}. */
export interface SpawnFixtureOptions {
  /** The child's working directory (where `tsx` resolves from): the package root. */
  cwd: string;
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
}

/**
 * Starts `node` on a fixture file: a `.ts` fixture through tsx, with the
 * workspace packages mapped to their sources ({@link REGISTER_SOURCES}).
 * The child is remembered until {@link killChildren}.
 */
export function spawnFixture(file: string, args: readonly string[], options: SpawnFixtureOptions): ChildProcessWithoutNullStreams {
  const loader = file.endsWith(".ts") ? ["--import", "tsx", "--import", REGISTER_SOURCES] : [];
  const child = spawn(process.execPath, [...loader, file, ...args], { cwd: options.cwd, env: options.env ?? process.env });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/**
 * {@link spawnFixture} for one package's tests: `fixture` names a file in
 * `<testDir>/fixtures`, and the child runs in the package root (`testDir/..`).
 *
 * @example
 * ```ts
 * export const spawnFixture = fixtureSpawner(new URL(".", import.meta.url)); // in test/helpers.ts
 * ```
 */
export function fixtureSpawner(testDir: URL): (fixture: string, args: readonly string[]) => ChildProcessWithoutNullStreams {
  const fixtures = fileURLToPath(new URL("fixtures/", testDir));
  const cwd = fileURLToPath(new URL("..", testDir));
  return (fixture, args) => spawnFixture(`${fixtures}${fixture}`, args, { cwd });
}

/**
 * The child's side of a start-together test: prints `ready`, waits for a
 * line on stdin (the test sends "go" to every child at once), runs `work`
 * and prints its answer as one JSON line — `{ error }` and exit code 1 when
 * it throws.
 */
export function onGo(work: () => Promise<Record<string, unknown>>): void {
  process.stdout.write("ready\n");
  process.stdin.once("data", () => {
    void (async () => {
      try {
        process.stdout.write(`${JSON.stringify(await work())}\n`);
      } catch (err) {
        process.stdout.write(`${JSON.stringify({ error: String(err) })}\n`);
        process.exitCode = 1;
      } finally {
        process.stdin.pause();
      }
    })();
  });
}

/** SIGKILLs every {@link spawnFixture} child still running (call it in `afterEach`). */
export function killChildren(): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  children.clear();
}

/** Resolves with the child's next stdout line matching `predicate`; rejects, with its stderr, when it exits first. */
export function nextLine(child: ChildProcessWithoutNullStreams, predicate: (line: string) => boolean = () => true): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = "";
    let stderr = "";
    const onData = (chunk: Buffer): void => {
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (predicate(line)) {
          cleanup();
          resolve(line);
          return;
        }
      }
    };
    const onErr = (chunk: Buffer): void => {
      stderr += chunk.toString();
    };
    const onExit = (code: number | null): void => {
      cleanup();
      reject(new Error(`child exited (${code}) before the expected line; stderr: ${stderr}`));
    };
    const cleanup = (): void => {
      child.stdout.off("data", onData);
      child.stderr.off("data", onErr);
      child.off("exit", onExit);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onErr);
    child.on("exit", onExit);
  });
}

/** Resolves with the child's exit code once it has exited. */
export function exited(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/**
 * A child's environment. Not `NodeJS.ProcessEnv`: Next's types declare
 * `NODE_ENV` as always set, and a test must be able to leave it out.
 */
export type ChildEnv = Record<string, string | undefined>;

/** A long-running child started by {@link startNode}, with its output kept for failure messages. */
export interface Started {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  /** Everything it printed so far (stdout and stderr interleaved), framed with its label. */
  output(): string;
  /** Resolves with the first match of `pattern` in its output; rejects if it exits or `timeoutMs` passes first. @default timeoutMs 20_000 */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with how it exited. @default graceMs 10_000 */
  stop(graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `node <args>` in `cwd` (e.g. `["--import", "tsx", "worker.ts"]`, as `pnpm worker` would). */
export function startNode(label: string, args: readonly string[], options: { cwd: string; env: ChildEnv }): Started {
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let text = "";
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer): void => {
    text += chunk.toString("utf8");
    for (const listener of listeners) listener();
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  const exitedWith = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => {
      for (const listener of listeners) listener();
      resolve({ code, signal });
    });
  });

  return {
    child,
    output: () => `--- ${label} output ---\n${text}--- end of ${label} output ---`,
    waitFor(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const match = pattern.exec(text);
          if (match) return done(() => resolve(match));
          if (child.exitCode !== null || child.signalCode !== null) {
            done(() => reject(new Error(`${label} exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}\n${text}`)));
          }
        };
        const timer = setTimeout(() => done(() => reject(new Error(`${label} did not print ${pattern} within ${timeoutMs}ms\n${text}`))), timeoutMs);
        const done = (settle: () => void): void => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        check();
      });
    },
    async stop(graceMs = 10_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await exitedWith;
        clearTimeout(timer);
      }
      return exitedWith;
    },
  };
}
