import Database from "better-sqlite3";
import type { SQLiteStore } from "../src/index.js";
import { describe, expect, it } from "vitest";
import { openStore, tempFile } from "./helpers.js";

/** The group rows of name `g`: served order and whether each may have queued work. */
function groupRows(file: string): { group_key: string; served_seq: number; active: number }[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare("SELECT group_key, served_seq, active FROM cairnq_ext_groups WHERE name = 'g' ORDER BY group_key").all() as never;
  } finally {
    db.close();
  }
}

async function claim(store: SQLiteStore, limit: number): Promise<string[]> {
  const rows = await store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, names: ["g"], limit, probe: false, flowControl: { g: { groupConcurrency: 10 } } });
  return rows.map((row) => (row.payload as { id: string }).id);
}

describe("group draw bookkeeping (group-draw.ts step 4)", () => {
  it("a served group whose due work the draw took goes inactive with its served order bumped past the active groups', and a submit wakes it", async () => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    const submit = (group: string, id: string) => store.submit({ name: "g", group, payload: { id } });
    await submit("a", "a1");
    await submit("b", "b1");
    await submit("b", "b2");
    expect((await claim(store, 10)).sort()).toEqual(["a1", "b1", "b2"]);
    // Both served (one past the highest active served_seq, 0), both left without queued work: inactive.
    expect(groupRows(file)).toEqual([
      { group_key: "a", served_seq: 1, active: 0 },
      { group_key: "b", served_seq: 1, active: 0 },
    ]);
    await submit("c", "c1");
    await submit("a", "a2");
    // c was never served (served_seq 0): it goes before a; then one past the active a (1). A claim of one row
    // asked the page for one task per group, so it cannot tell c has no other: c stays active.
    expect(await claim(store, 1)).toEqual(["c1"]);
    expect(groupRows(file)).toEqual([
      { group_key: "a", served_seq: 1, active: 1 },
      { group_key: "b", served_seq: 1, active: 0 },
      { group_key: "c", served_seq: 2, active: 1 },
    ]);
    // a is served (one past c, the highest active); c, found without due work, goes inactive.
    expect(await claim(store, 1)).toEqual(["a2"]);
    expect(groupRows(file)).toEqual([
      { group_key: "a", served_seq: 3, active: 1 },
      { group_key: "b", served_seq: 1, active: 0 },
      { group_key: "c", served_seq: 2, active: 0 },
    ]);
    expect(await claim(store, 1)).toEqual([]);
    expect(groupRows(file)).toEqual([
      { group_key: "a", served_seq: 3, active: 0 },
      { group_key: "b", served_seq: 1, active: 0 },
      { group_key: "c", served_seq: 2, active: 0 },
    ]);
  });

  it("a claim serving groups of different served numbers moves each of them, and no group between them that it did not serve", async () => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    for (const id of ["a1", "a2", "b1", "b2", "c1", "c2"]) await store.submit({ name: "g", group: id.slice(0, 1), payload: { id } });
    const claimIn = async (limit: number) =>
      store.claim({ queues: ["default"], workerId: "w1", leaseMs: 30_000, names: ["g"], limit, probe: false, flowControl: { g: { groupConcurrency: 1 } } });
    // The group of each task claimed (the two tasks of a group may be taken in either order: same priority, ids of one millisecond).
    const groups = (rows: readonly { payload: unknown }[]) => rows.map((row) => (row.payload as { id: string }).id[0]);
    expect(groups(await claimIn(1))).toEqual(["a"]);
    // a is full (its task runs): b is served next; its task then ends, so b has room again.
    const taken = await claimIn(1);
    expect(groups(taken)).toEqual(["b"]);
    await store.complete({ taskId: (taken[0] as { id: string }).id, workerId: "w1", attempt: 1, result: null });
    expect(groupRows(file)).toEqual([
      { group_key: "a", served_seq: 1, active: 1 },
      { group_key: "b", served_seq: 2, active: 1 },
      { group_key: "c", served_seq: 0, active: 1 },
    ]);
    // Served order c (0), a (1, full), b (2): the claim serves c and b, whose served numbers differ, and skips a between them.
    expect(groups(await claimIn(3))).toEqual(["c", "b"]);
    expect(groupRows(file)).toEqual([
      { group_key: "a", served_seq: 1, active: 1 },
      { group_key: "b", served_seq: 3, active: 1 },
      { group_key: "c", served_seq: 3, active: 1 },
    ]);
  });

  it("a served group with due work left stays active", async () => {
    const file = tempFile();
    const store = openStore(file);
    await store.connect();
    for (const id of ["a1", "a2", "a3"]) await store.submit({ name: "g", group: "a", payload: { id } });
    expect(await claim(store, 2)).toHaveLength(2);
    expect(groupRows(file)).toEqual([{ group_key: "a", served_seq: 1, active: 1 }]);
  });
});
