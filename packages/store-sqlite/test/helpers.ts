import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach } from "vitest";
import type { SQLiteStoreOptions } from "../src/index.js";
import { SQLiteStore } from "../src/index.js";

const dirs: string[] = [];
const stores: SQLiteStore[] = [];
const children: ChildProcessWithoutNullStreams[] = [];

/** A database path in a fresh temp directory, removed after the test. */
export function tempFile(name = "cairnq.db"): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cairnq-sqlite-"));
  dirs.push(dir);
  return path.join(dir, name);
}

/** A store closed after the test. */
export function openStore(file: string = tempFile(), options?: SQLiteStoreOptions): SQLiteStore {
  const store = new SQLiteStore(file, options);
  stores.push(store);
  return store;
}

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures");
const packageRoot = path.resolve(fixtures, "../..");

/** Starts `node` on a fixture: `.ts` fixtures run through tsx with workspace packages mapped to their sources. */
export function spawnFixture(fixture: string, args: readonly string[]): ChildProcessWithoutNullStreams {
  const loader = fixture.endsWith(".ts") ? ["--import", "tsx", "--import", path.join(fixtures, "register-src.mjs")] : [];
  const child = spawn(process.execPath, [...loader, path.join(fixtures, fixture), ...args], { cwd: packageRoot });
  children.push(child);
  return child;
}

/** Resolves with the child's next stdout line matching `predicate` (rejects on exit first). */
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

/** Resolves when the child exits, with its exit code. */
export function exited(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await Promise.all(stores.splice(0).map((store) => store.close()));
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
