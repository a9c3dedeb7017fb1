/**
 * `cairnq purge`: what it says it deleted names the cutoff it was given, as
 * given (`--older-than 1h30m15s` is not "more than 1 h 30 min ago": a task
 * finished 1 h 30 min 10 s ago was kept).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CairnQ } from "@cairnq/client";
import { describe, expect, it } from "vitest";
import { purgeCommand } from "../src/cli/commands.js";
import type { CliIo } from "../src/cli/output.js";
import { runCli } from "../src/cli/program.js";

const io: CliIo = { out: () => {}, err: () => {}, color: false, tty: false, env: {}, now: () => 1_000 };

describe("purgeCommand", () => {
  it.each([
    [5_415_000, "1 h 30 min 15 s"],
    [1_500, "1.5 s"],
    [604_800_000, "7 d"],
    [0, "0 ms"],
  ])("says the cutoff of %d ms exactly: %s", async (olderThanMs, said) => {
    const client = { purge: () => Promise.resolve(["task_1", "task_2"]) } as unknown as CairnQ;
    const out = await purgeCommand(client, io, { olderThanMs, status: "succeeded" });
    expect(out.text).toBe(`deleted 2 succeeded tasks completed more than ${said} ago`);
  });
});

describe("cairnq purge --older-than past the 100-year bound", () => {
  it("names the flag the user typed, not the client's olderThanMs", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cairnq-purge-"));
    try {
      let out = "";
      const cli: CliIo = { out: (text) => (out += text), err: (text) => (out += text), color: false, tty: false, env: {}, now: () => 0 };
      const db = join(dir, "cairnq.db");
      expect(await runCli(["migrate", "--db", db], cli)).toBe(0);
      out = "";
      expect(await runCli(["purge", "--older-than", "36501d", "--db", db], cli)).not.toBe(0);
      expect(out).toContain("--older-than is at most 36500d");
      expect(out).not.toContain("olderThanMs");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
