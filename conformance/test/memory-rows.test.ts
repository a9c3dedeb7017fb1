/**
 * The in-memory store's status index (`memory-rows.ts`) checked two ways:
 * every selection of the protocol picks the same rows from a condition's
 * candidates as from the whole table, on random rows and parameters; and a
 * claim hands its lease recovery and draws no terminal row.
 */
import type { Task } from "@cairnq/protocol";
import { STATUSES } from "@cairnq/protocol";
import type { Expr, Params, Selection } from "@cairnq/protocol/adapter";
import * as adapter from "@cairnq/protocol/adapter";
import { describe, expect, it, vi } from "vitest";
import { MemoryRows, requiredStatuses } from "../src/memory-rows.js";

const { DRAW, RECOVER, HEARTBEAT_BATCH, CANCEL_BATCH, RETRY_BATCH, PURGE, PROBE, LIST_ROWS, QUEUE_DEPTH_ROWS, RUNNING_OF_NAME, paramsOf, selectRows } = adapter;

/** A small deterministic generator (mulberry32), so a failure names a seed that reproduces it. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NOW = 1_000_000;
const TEXTS = ["a", "b", "x", "y", "w1", "w2", ...STATUSES];

function pick<T>(rand: () => number, values: readonly T[]): T {
  return values[Math.floor(rand() * values.length)] as T;
}

function randomRows(rand: () => number, count: number): Task[] {
  const ids = Array.from({ length: count }, (_, i) => `task_${String(i).padStart(4, "0")}`);
  return ids.map((id) => {
    const status: string = pick(rand, STATUSES);
    return {
      id,
      name: pick(rand, ["x", "y"]),
      queue: pick(rand, ["a", "b"]),
      status,
      payload: {},
      metadata: {},
      result: null,
      error: null,
      attempt: Math.floor(rand() * 3),
      max_attempts: 1 + Math.floor(rand() * 3),
      priority: Math.floor(rand() * 3),
      run_at_ms: NOW - 500 + Math.floor(rand() * 1000),
      worker_id: status === "queued" ? null : pick(rand, ["w1", "w2"]),
      lease_until_ms: status === "running" ? NOW - 500 + Math.floor(rand() * 1000) : null,
      parent_id: rand() < 0.3 ? pick(rand, ids) : null,
      root_id: null,
      correlation_id: null,
      cancel_requested_at_ms: null,
      progress: null,
      message: null,
      created_at_ms: NOW - 2000,
      updated_at_ms: NOW - 1000,
      completed_at_ms: status === "queued" || status === "running" ? null : NOW - 1000,
    } as unknown as Task;
  });
}

/** A value for every parameter `where` reads, of its type, drawn at random (null included). */
function randomParams(rand: () => number, where: Expr, ids: readonly string[]): Params {
  const params: Record<string, unknown> = {};
  for (const [name, param] of paramsOf(where)) {
    const texts = name.toLowerCase().includes("id") ? [...ids.slice(0, 5), ...TEXTS] : TEXTS;
    switch (param.type) {
      case "textList":
        params[name] = rand() < 0.2 ? null : texts.filter(() => rand() < 0.3);
        break;
      case "int":
      case "float":
        params[name] = rand() < 0.2 ? null : Math.floor(rand() * 2000);
        break;
      case "bool":
        params[name] = rand() < 0.5;
        break;
      case "text":
      case "json":
        params[name] = rand() < 0.3 ? null : pick(rand, texts);
        break;
    }
  }
  return params;
}

const SELECTIONS: Record<string, Selection> = {
  DRAW: DRAW.selection,
  RECOVER: RECOVER.selection,
  HEARTBEAT_BATCH: HEARTBEAT_BATCH.selection,
  CANCEL_BATCH: CANCEL_BATCH.selection,
  RETRY_BATCH: RETRY_BATCH.selection,
  PURGE: PURGE.selection,
};
const CONDITIONS: Record<string, Expr> = {
  "PROBE.claimable": PROBE.claimable,
  "PROBE.expired": PROBE.expired,
  LIST_ROWS,
  QUEUE_DEPTH_ROWS,
  RUNNING_OF_NAME,
};
const byId = (rows: readonly Task[]): string[] => rows.map((row) => row.id).sort();

describe("MemoryRows: the candidates of a condition", () => {
  it("are the rows of the statuses the claim's rules require, read off the rules", () => {
    const params = { queues: ["a"], names: null, workerId: "w1", leaseMs: 1000, limit: 5 };
    expect(requiredStatuses(DRAW.selection.where, params)).toEqual(new Set(["queued"]));
    expect(requiredStatuses(RECOVER.selection.where, {})).toEqual(new Set(["running"]));
    expect(requiredStatuses(LIST_ROWS, { status: "failed" })).toEqual(new Set(["failed"]));
    expect(requiredStatuses(LIST_ROWS, { status: null })).toBeNull();
    // PURGE reads a task's parent, which must be found among the rows handed over: every row, then.
    expect(requiredStatuses(PURGE.selection.where, {})).toBeNull();
  });

  it("give every selection and read the rows the whole table gives it, on random rows and parameters", () => {
    for (let seed = 1; seed <= 200; seed += 1) {
      const rand = random(seed);
      const all = randomRows(rand, 40);
      const table = new MemoryRows();
      for (const row of all) table.set(row);
      // Rewrites move rows between statuses, as the store's writes do.
      for (const row of all.slice(0, 10)) table.set({ ...row, status: pick(rand, STATUSES) });
      table.delete((all[10] as Task).id);
      const rows = [...table.values()];
      const ids = rows.map((row) => row.id);
      for (const [label, selection] of Object.entries(SELECTIONS)) {
        const params = randomParams(rand, selection.where, ids);
        const whole = selectRows(selection, rows, params, NOW);
        const narrowed = selectRows(selection, table.candidates(selection.where, params), params, NOW);
        expect(selection.orderBy.length > 0 ? narrowed.map((row) => row.id) : byId(narrowed), `${label}, seed ${seed}`).toEqual(
          selection.orderBy.length > 0 ? whole.map((row) => row.id) : byId(whole),
        );
      }
      for (const [label, where] of Object.entries(CONDITIONS)) {
        const params = randomParams(rand, where, ids);
        const holding = (from: readonly Task[]): string[] => byId(from.filter((row) => adapter.holds(where, { row: row as never, params, nowMs: NOW })));
        expect(holding(table.candidates(where, params)), `${label}, seed ${seed}`).toEqual(holding(rows));
      }
    }
  });
});

describe("MemoryStore: a claim among terminal rows", () => {
  it("hands its lease recovery and its draws no terminal row, and claims the one due", async () => {
    // A store whose selectRows records the rows it is handed (the real one runs). Loaded afresh with the
    // mock, since a run that shares modules between files may have loaded the store already.
    const handed: { selection: unknown; statuses: string[] }[] = [];
    vi.resetModules();
    vi.doMock("@cairnq/protocol/adapter", async (importOriginal) => {
      const original = await importOriginal<typeof adapter>();
      return {
        ...original,
        selectRows: (selection: Selection, rows: Iterable<Task>, params: Params, nowMs: number): Task[] => {
          const all = [...rows];
          handed.push({ selection, statuses: all.map((row) => row.status) });
          return original.selectRows(selection, all, params, nowMs);
        },
      };
    });
    try {
      const { MemoryStore } = await import("../src/memory-store.js");
      const fresh = await import("@cairnq/protocol/adapter");
      const store = new MemoryStore({ clock: () => NOW });
      for (let i = 0; i < 20; i += 1) {
        await store.submit({ name: "done" });
        const [row] = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 1000 });
        await store.complete({ taskId: (row as Task).id, workerId: "w1", attempt: 1, result: i });
      }
      const due = await store.submit({ name: "job" });
      handed.length = 0;
      const claimed = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 1000 });
      expect(claimed.map((row) => row.id)).toEqual([due.id]);
      const ofClaim = handed.filter((call) => call.selection === fresh.DRAW.selection || call.selection === fresh.RECOVER.selection);
      expect(ofClaim.length).toBeGreaterThanOrEqual(2);
      expect(ofClaim.flatMap((call) => call.statuses).filter((status) => status !== "queued" && status !== "running")).toEqual([]);
    } finally {
      vi.doUnmock("@cairnq/protocol/adapter");
      vi.resetModules();
    }
  });
});
