/**
 * `cairnq list --json | head -c 20`: a reader that closes the pipe before the
 * CLI is done writing ends the CLI quietly with 141 (128 + SIGPIPE, what a
 * shell reports for coreutils cut off the same way), not with an unhandled
 * EPIPE stack trace.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI_BIN as BIN, cliEnv } from "../support/cli.js";

/** Runs the CLI with its stdout closed by the reader before anything is read; resolves with its exit status and stderr. */
function cliIntoClosedPipe(args: readonly string[]): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"], env: cliEnv() });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr });
    });
  });
}

describe("cairnq with its stdout closed by the reader", () => {
  let dir = "";
  let file = "";
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairnq-cli-pipe-"));
    file = join(dir, "cairnq.db");
    const store = new SQLiteStore(file);
    for (let i = 0; i < 20; i++) await store.submit({ name: "x", payload: { i } });
    await store.close();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("ends quietly with 141, JSON or text", async () => {
    for (const args of [["list", "--limit", "1000", "--json"], ["list"], ["stats"]]) {
      const run = await cliIntoClosedPipe([...args, "--db", file]);
      expect(run, args.join(" ")).toEqual({ code: 141, signal: null, stderr: "" });
    }
  });
});
