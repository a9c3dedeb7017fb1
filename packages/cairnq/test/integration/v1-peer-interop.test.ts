/**
 * A protocol v1 peer beside CairnQ's extensions. The peer (test/support/v1-peer.ts)
 * is a second implementation written from docs/protocol.md alone: plain SQL on
 * the v1 table, no extension table known. On a database where CairnQ runs durable
 * steps (journals, parked tasks) and groups (group rows, rotation state), the two
 * share every ordinary task both ways; the peer claims group tasks ignoring the
 * group limits (as docs/protocol.md says a v1 peer does) without leaving CairnQ's
 * group state stuck; and the peer's purge takes the journal and group rows with
 * the task through the foreign keys.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { CairnQ, Worker } from "cairnq";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { closeAdmin, dropSchema, freshSchemaName, pgDsn } from "../support/postgres.ts";
import type { PeerSql } from "../support/v1-peer.ts";
import { V1Peer } from "../support/v1-peer.ts";
import { sleep, until } from "../support/waiting.ts";
import { runCli } from "../support/cli.ts";
import type { CliRun } from "../support/cli.ts";

interface Side {
  readonly client: CairnQ;
  /** The `cairnq` CLI's database arguments for this side. */
  readonly db: readonly string[];
  worker(): Worker;
  readonly peerSql: PeerSql;
  dispose(): Promise<void>;
}

const WORKER = { concurrency: 4, pollIntervalMs: 50 } as const;

function register(worker: Worker): Worker {
  worker.task("journey", async (ctx, p: { n: number }) => {
    const doubled = await ctx.step("double", () => p.n * 2);
    await ctx.sleep("nap", 30);
    return { doubled };
  });
  worker.task("export", { groupConcurrency: 1 }, (_ctx, p: { n: number }) => ({ exported: p.n }));
  worker.task("plain", (_ctx, p: unknown) => ({ echoed: p }));
  worker.task("meta", (ctx) => ({ metadata: ctx.metadata }));
  return worker;
}

async function sqliteSide(): Promise<Side> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cairnq-v1-peer-"));
  const file = path.join(dir, "q.db");
  const client = CairnQ.sqlite(file);
  await client.connect();
  // The peer's own connection, set up as §3.9 says (WAL, busy timeout, foreign keys on).
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("busy_timeout = 5000");
  db.pragma("foreign_keys = ON");
  const peerSql: PeerSql = {
    flavour: "sqlite",
    run: (text, values) => {
      const statement = db.prepare(text);
      return Promise.resolve(statement.reader ? (statement.all(...values) as Record<string, unknown>[]) : (statement.run(...values), []));
    },
  };
  return {
    client,
    db: ["--db", file],
    worker: () => register(Worker.sqlite(file, WORKER)),
    peerSql,
    dispose: async () => {
      db.close();
      await client.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresSide(): Promise<Side> {
  const schema = await freshSchemaName("cq_v1peer");
  const client = CairnQ.postgres(pgDsn(), { schema });
  await client.connect();
  const conn = new pg.Client({ connectionString: pgDsn(), options: `-c search_path=${schema}` });
  await conn.connect();
  const peerSql: PeerSql = { flavour: "postgres", run: async (text, values) => (await conn.query(text, [...values])).rows as Record<string, unknown>[] };
  return {
    client,
    db: ["--db", pgDsn(), "--schema", schema],
    worker: () => register(Worker.postgres(pgDsn(), { ...WORKER, schema })),
    peerSql,
    dispose: async () => {
      await conn.end();
      await client.close();
      await dropSchema(schema);
    },
  };
}

async function allSucceeded(client: CairnQ, ids: readonly string[], timeoutMs = 20_000): Promise<void> {
  await until(
    `${ids.length} tasks succeeded`,
    async () => ((await Promise.all(ids.map((id) => client.get(id)))).every((t) => t?.status === "succeeded") ? true : undefined),
    timeoutMs,
  );
}

async function runWorker(side: Side, body: () => Promise<void>): Promise<void> {
  const worker = side.worker();
  const running = worker.run();
  try {
    await body();
  } finally {
    await worker.stop();
    await running;
  }
}

afterAll(() => closeAdmin());

/** The built `cairnq` bin as a child process: its exit code and output. */
function cli(args: readonly string[]): Promise<CliRun> {
  return runCli(args, { env: { NO_COLOR: "1" } });
}

describe.each([
  ["sqlite", sqliteSide],
  ["postgres", postgresSide],
] as const)("a protocol v1 peer beside durable steps and groups (%s)", (_label, open) => {
  it("shares ordinary tasks both ways, ignores group limits without leaving CairnQ's group state stuck, and purges journals with their tasks", async () => {
    const side = await open();
    const peer = new V1Peer(side.peerSql);
    try {
      const { client } = side;
      const journeys = await Promise.all([1, 2, 3].map((n) => client.submit("journey", { n })));
      const exports = await Promise.all([1, 2, 3, 4].map((n) => client.submit("export", { n }, { group: "acme" })));
      let fromPeer = "";
      await runWorker(side, async () => {
        await allSucceeded(client, [...journeys, ...exports].map((t) => t.id));
        // A task the peer submitted with its own INSERT runs on CairnQ's worker.
        fromPeer = await peer.submit("plain", { from: "peer" });
        await allSucceeded(client, [fromPeer]);
      });
      expect((await client.get(fromPeer))?.result).toEqual({ echoed: { from: "peer" } });
      for (const journey of journeys) {
        const done = await client.get(journey.id);
        expect(done?.result).toEqual({ doubled: (journey.payload as { n: number }).n * 2 });
        // Parked once: the sleep gave the attempt back, so the journey finished on attempt 1.
        expect(done?.attempt).toBe(1);
        expect((await client.steps(journey.id)).map((s) => s.name)).toEqual(["double", "nap"]);
      }

      // With no CairnQ worker running, the peer claims what CairnQ's client submitted, group tasks included.
      const plain = await Promise.all([1, 2, 3].map((n) => client.submit("plain", { n })));
      const grouped = await Promise.all([5, 6].map((n) => client.submit("export", { n }, { group: "acme" })));
      const claimed = await peer.claim(["plain", "export"], 10);
      expect(claimed.map((t) => t.id).sort()).toEqual([...plain, ...grouped].map((t) => t.id).sort());
      // A v1 peer knows no groups: both acme exports are running at once, past groupConcurrency 1.
      expect(claimed.filter((t) => t.name === "export")).toHaveLength(2);
      for (const task of claimed) expect(await peer.complete(task.id, { by: "peer", n: (task.payload as { n: number }).n })).toBe(true);
      for (const task of [...plain, ...grouped]) {
        const row = await client.get(task.id);
        expect([row?.status, row?.result]).toEqual(["succeeded", { by: "peer", n: (task.payload as { n: number }).n }]);
      }

      // CairnQ's group limit still admits new acme work after the peer finished acme tasks behind its back.
      const later = await Promise.all([7, 8, 9].map((n) => client.submit("export", { n }, { group: "acme" })));
      await runWorker(side, () => allSucceeded(client, later.map((t) => t.id)));

      // The peer's purge (§5.9) deletes every finished task; the journals and group rows go with them.
      await sleep(5);
      const purged: string[] = [];
      for (let batch = await peer.purge(); batch.length > 0; batch = await peer.purge()) purged.push(...batch);
      expect(purged).toHaveLength(journeys.length + exports.length + 1 + plain.length + grouped.length + later.length);
      expect(await client.list({ limit: 100 })).toEqual([]);
      for (const table of ["cairnq_ext_steps", "cairnq_ext_messages", "cairnq_ext_task_groups"]) expect(await peer.orphans(table)).toBe(0);
    } finally {
      await side.dispose();
    }
  }, 60_000);

  it("runs a peer's tasks whose metadata is JSON null, an array, a string or a number: the handler and `cairnq get` see it as stored", async () => {
    const side = await open();
    const peer = new V1Peer(side.peerSql);
    try {
      const stored: unknown[] = [null, [1, "a"], "text", 7];
      const ids: string[] = [];
      for (const metadata of stored) ids.push(await peer.submit("meta", {}, "default", metadata));
      await runWorker(side, () => allSucceeded(side.client, ids));
      for (const [i, id] of ids.entries()) expect((await side.client.get(id))?.result).toEqual({ metadata: stored[i] });
      const shown = await cli(["get", ids[0] as string, ...side.db]);
      expect([shown.code, shown.stderr]).toEqual([0, ""]);
      expect(shown.stdout).toContain("metadata\n  null");
      expect((await cli(["get", ids[1] as string, ...side.db])).stdout).toMatch(/metadata\n {2}\[\n {4}1,\n {4}"a"\n {2}\]/);
    } finally {
      await side.dispose();
    }
  }, 60_000);
});
