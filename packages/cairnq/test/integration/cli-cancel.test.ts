/**
 * `cairnq cancel` of a running task says what happens next as `cairnq
 * explain` does: with a live lease, the handler sees the cancel at its next
 * heartbeat; with an expired one (its worker died), no handler is left, and
 * the next claim's lease recovery ends it canceled.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli as cli } from "../support/cli.js";

describe("cairnq cancel of a running task", () => {
  let dir = "";
  let file = "";
  let store: SQLiteStore;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "cairnq-cli-cancel-"));
    file = join(dir, "cairnq.db");
    store = new SQLiteStore(file);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function running(name: string, leaseMs: number): Promise<string> {
    const { id } = await store.submit({ name, queue: name });
    const [task] = await store.claim({ queues: [name], names: [name], workerId: "w-cancel", leaseMs });
    expect(task?.id).toBe(id);
    return id;
  }

  it("whose lease expired says the next claim's recovery ends it canceled, as explain does, not that a handler will see it", async () => {
    const id = await running("dead", 1);
    while (((await store.get(id))?.lease_until_ms ?? Infinity) >= Date.now()) await new Promise((resolve) => setTimeout(resolve, 20));
    const run = await cli(["cancel", id, "--db", file]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`requested cancel of 1 running task: ${id}`);
    expect(run.stdout).toContain("awaits recovery, which the next claim by any worker of this database performs; it then ends canceled (a cancel was requested)");
    expect(run.stdout).not.toContain("next heartbeat");
    const explained = await cli(["explain", id, "--db", file, "--json"]);
    expect(JSON.parse(explained.stdout)).toMatchObject({ explanation: { state: "lease-expired" } });
  });

  it("whose lease is live says its handler sees the cancel at its next heartbeat", async () => {
    const id = await running("live", 600_000);
    const run = await cli(["cancel", id, "--db", file]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`requested cancel of 1 running task: ${id}`);
    expect(run.stdout).toContain("The handler learns it at its next heartbeat");
  });
});
