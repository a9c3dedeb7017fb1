/**
 * `cairnq stats --by-group <name>` on a SQLite file, through the built CLI:
 * queued and running tasks of a name per group, most queued first.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import type { CliRun } from "../support/cli.js";

let dir = "";
let file = "";

function cli(args: readonly string[]): Promise<CliRun> {
  return runCli(args, { env: { NO_COLOR: "1" } });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cairnq-cli-groups-"));
  file = join(dir, "cairnq.db");
  const store = new SQLiteStore(file);
  for (let i = 0; i < 3; i++) await store.submit({ name: "export", group: "acme" });
  await store.submit({ name: "export", group: "globex" });
  await store.submit({ name: "export" });
  // Group names as a user may write them: a terminal escape, a tab and a line break, and a long one.
  await store.submit({ name: "weird", group: "\u001b[31mRED\tx\ny" });
  await store.submit({ name: "weird", group: "g".repeat(300) });
  // Room for three: the task without a group (taken first when it is in the head of the plain order, as here),
  // then one task per group (groupConcurrency 1).
  await store.claim({ queues: ["default"], workerId: "worker_cli", names: ["export"], limit: 3, flowControl: { export: { groupConcurrency: 1 } } });
  await store.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("prints queued and running per group, most queued first, as a table and as JSON", async () => {
  const json = await cli(["stats", "--db", file, "--by-group", "export", "--json"]);
  expect(json.code, json.stderr).toBe(0);
  // The claim took one task per group (groupConcurrency 1); the task without a group is not counted by group.
  expect(JSON.parse(json.stdout)).toEqual({
    name: "export",
    groups: [
      { group: "acme", queued: 2, running: 1 },
      { group: "globex", queued: 0, running: 1 },
    ],
    more: false,
  });
  const text = await cli(["stats", "--db", file, "--by-group", "export"]);
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(/GROUP\s+QUEUED\s+RUNNING/);
  expect(text.stdout).toMatch(/acme\s+2\s+1/);
  const limited = await cli(["stats", "--db", file, "--by-group", "export", "--limit", "1", "--json"]);
  expect(JSON.parse(limited.stdout)).toMatchObject({ groups: [{ group: "acme" }], more: true });
  // A cut table says so; one that holds every group (--limit 2 here) does not.
  expect((await cli(["stats", "--db", file, "--by-group", "export", "--limit", "1"])).stdout).toContain("more: only the group with the most queued tasks shown; --limit shows more");
  expect((await cli(["stats", "--db", file, "--by-group", "export", "--limit", "2"])).stdout).not.toContain("more:");
  const none = await cli(["stats", "--db", file, "--by-group", "nothing"]);
  expect(none.stdout).toContain("no queued or running task of 'nothing' has a group");
});

it("shows group names escaped and cut in the table, whole in JSON", async () => {
  const text = await cli(["stats", "--db", file, "--by-group", "weird"]);
  expect(text.code, text.stderr).toBe(0);
  // No control character reaches the terminal: the escape, the tab and the line break are written out.
  expect([...text.stdout].filter((c) => c !== "\n" && c.charCodeAt(0) < 0x20)).toEqual([]);
  expect(text.stdout).toContain("\\x1b[31mRED\\tx\\ny");
  expect(text.stdout.trimEnd().split("\n")).toHaveLength(3);
  // The long name is cut to 48 characters, so the table stays narrow.
  expect(text.stdout).toContain(`${"g".repeat(47)}…`);
  expect(Math.max(...text.stdout.split("\n").map((line) => line.length))).toBeLessThan(80);
  const json = JSON.parse((await cli(["stats", "--db", file, "--by-group", "weird", "--json"])).stdout) as { groups: { group: string }[] };
  expect(json.groups.map((g) => g.group).sort()).toEqual(["\u001b[31mRED\tx\ny", "g".repeat(300)].sort());
});

it("refuses --queue with --by-group (the groups are counted across every queue) and --limit without it, exit 2 saying what to type", async () => {
  const queued = await cli(["stats", "--db", file, "--by-group", "export", "--queue", "nope"]);
  expect(queued.code).toBe(2);
  expect(queued.stdout).toBe("");
  expect(queued.stderr).toContain(
    "error: stats --by-group counts the groups of 'export' across every queue, so it takes no --queue: cairnq stats --by-group export, or cairnq stats --queue nope for that queue's counts",
  );
  const limited = await cli(["stats", "--db", file, "--limit", "1", "--json"]);
  expect(limited.code).toBe(2);
  expect(JSON.parse(limited.stdout)).toEqual({
    error: { code: "usage", message: "stats --limit caps the groups of --by-group and takes nothing else: cairnq stats --by-group <task name> --limit 1, or cairnq stats for every queue" },
  });
});
