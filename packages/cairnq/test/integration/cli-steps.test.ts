/**
 * The durable-steps journal in the CLI, on SQLite and Postgres: `cairnq get`
 * lists it as a timeline, and `cairnq explain` says what a parked task waits
 * for. The task is parked through the store's own operations (as a worker
 * would), then read by the built CLI in another process.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TaskStepStore } from "@cairnq/protocol";
import { PARK_FOREVER_AT_MS } from "@cairnq/protocol";
import { newWorkerId } from "@cairnq/protocol/adapter";
import { PostgresStore } from "@cairnq/store-postgres";
import { SQLiteStore } from "@cairnq/store-sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { closeAdmin, dropSchema, freshSchemaName, pgDsn } from "../support/postgres.js";
import { runCli } from "../support/cli.js";
import type { CliRun } from "../support/cli.js";

function cli(args: readonly string[]): Promise<CliRun> {
  return runCli(args, { env: { NO_COLOR: "1" } });
}

async function parkedTask(store: TaskStepStore): Promise<string> {
  const task = await store.submit({ name: "order.fulfil", queue: "orders", payload: { id: "o-1" } });
  const workerId = newWorkerId();
  const [claimed] = await store.claim({ queues: ["orders"], workerId, leaseMs: 30_000 });
  if (claimed?.id !== task.id) throw new Error("the claim did not take the task");
  const owned = { taskId: task.id, workerId, attempt: claimed.attempt };
  await store.recordStep({ ...owned, name: "charge", kind: "step", status: "done", seq: 1, result: { chargeId: "ch_1" } });
  await store.parkStep({ ...owned, name: "approval", kind: "wait", seq: 2, message: "approval", untilMs: PARK_FOREVER_AT_MS });
  return task.id;
}

const backends = [
  {
    name: "SQLite",
    async open() {
      const dir = mkdtempSync(join(tmpdir(), "cairnq-cli-steps-"));
      const file = join(dir, "cairnq.db");
      return { store: new SQLiteStore(file), db: ["--db", file], dispose: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: "Postgres",
    async open() {
      const schema = await freshSchemaName("cairnq_cli_steps");
      return { store: new PostgresStore(pgDsn(), { schema, listen: false }), db: ["--db", pgDsn(), "--schema", schema], dispose: () => dropSchema(schema) };
    },
  },
];

afterAll(closeAdmin);

for (const backend of backends) {
  describe(`durable steps in the CLI on ${backend.name}`, () => {
    it("get lists the journal as a timeline; explain says the task is parked and what it waits for", async () => {
      const { store, db, dispose } = await backend.open();
      try {
        const id = await parkedTask(store);
        const plain = await store.submit({ name: "plain" });
        const text = await cli(["get", id, ...db]);
        expect(text.code, text.stderr).toBe(0);
        expect(text.stdout).toMatch(/steps\n\s+charge\s+step\s+done\s+attempt 1 .*→ \{"chargeId":"ch_1"\}/);
        expect(text.stdout).toMatch(/approval\s+wait\s+waiting\s+attempt 1 .*waiting for a message 'approval'.*with no timeout/);
        const json = JSON.parse((await cli(["get", id, ...db, "--json"])).stdout) as { steps: { name: string; status: string }[] };
        expect(json.steps.map((s) => [s.name, s.status])).toEqual([
          ["charge", "done"],
          ["approval", "waiting"],
        ]);
        const explained = JSON.parse((await cli(["explain", id, ...db, "--json"])).stdout) as { explanation: { state: string; summary: string } };
        expect(explained.explanation.state).toBe("parked");
        expect(explained.explanation.summary).toContain("waiting for a message 'approval'");
        // A task without steps prints no steps section.
        expect((await cli(["get", plain.id, ...db])).stdout).not.toContain("steps");
      } finally {
        await store.close();
        await dispose();
      }
    });
  });
}
