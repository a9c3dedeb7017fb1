import { describe, expect, it } from "vitest";
import { client, openStore, pgDsn, q, schemaName } from "../helpers.js";

const A = "worker_settling_a";
const B = "worker_settling_b";

/** One group claim of up to 5 tasks of `a` with `groupConcurrency: 1`, as a worker sends it. */
function claimInput(workerId: string) {
  return {
    queues: ["default"],
    workerId,
    probe: false,
    draws: (_so: readonly unknown[], index: number) => (index === 0 ? { names: ["a"], limit: 5, last: true } : null),
    flowControl: { a: { groupConcurrency: 1 } },
  };
}

describe("a group draw and the store's own settlements in flight", () => {
  it("does not count a task whose settlement this store has in flight (its handler ended), while another store still does", async () => {
    const schema = schemaName();
    const store = openStore(pgDsn(), { schema });
    const other = openStore(pgDsn(), { schema });
    await store.connect();
    await other.connect();
    const first = await store.submit({ name: "a", payload: { n: 1 }, group: "g" });
    const second = await store.submit({ name: "a", payload: { n: 2 }, group: "g" });
    const third = await store.submit({ name: "a", payload: { n: 3 }, group: "g" });
    const [held] = await store.claim(claimInput(A));
    expect(held?.id).toBe(first.id);

    // Hold the complete of the first task in flight: another transaction locks its row until we let go.
    const blocker = await client();
    await blocker.query("BEGIN");
    await blocker.query(`SELECT id FROM "${schema}".cairnq_tasks WHERE id = $1 FOR UPDATE`, [first.id]);
    const completing = store.complete({ taskId: first.id, workerId: A, attempt: held?.attempt ?? 1, result: null });

    // Another store sees the first task running, group g at its limit: nothing to take.
    expect(await other.claim(claimInput(B))).toEqual([]);
    // The store whose complete is in flight knows the handler ended: the group's slot is free for the second task.
    const taken = await store.claim(claimInput(A));
    expect(taken.map((t) => t.id)).toEqual([second.id]);
    // Two tasks of g are `running` in the table now, one of them settling: the other store still takes nothing.
    expect(await other.claim(claimInput(B))).toEqual([]);

    await blocker.query("COMMIT");
    expect((await completing).status).toBe("succeeded");
    // Settled: the second task holds g's one slot, for this store as for the other.
    expect(await store.claim(claimInput(A))).toEqual([]);
    expect(await other.claim(claimInput(B))).toEqual([]);
    await store.complete({ taskId: second.id, workerId: A, attempt: taken[0]?.attempt ?? 1, result: null });
    expect((await other.claim(claimInput(B))).map((t) => t.id)).toEqual([third.id]);
  });

  it("counts a task of its own whose settlement in flight is from an earlier attempt (the task was taken again since)", async () => {
    const schema = schemaName();
    const store = openStore(pgDsn(), { schema });
    await store.connect();
    const first = await store.submit({ name: "a", payload: { n: 1 }, group: "g" });
    const second = await store.submit({ name: "a", payload: { n: 2 }, group: "g" });
    const [held] = await store.claim(claimInput(A));
    expect(held?.id).toBe(first.id);
    // The attempt-1 lease ends (as if it expired) and a claim takes the task again as attempt 2, under B.
    await q(`UPDATE "${schema}".cairnq_tasks SET lease_until_ms = 0 WHERE id = $1`, [first.id]);
    const [again] = await store.claim(claimInput(B));
    expect([again?.id, again?.attempt]).toEqual([first.id, 2]);

    // A late complete of attempt 1 is in flight (held on the row lock); attempt 2's handler runs: g stays full.
    const blocker = await client();
    await blocker.query("BEGIN");
    await blocker.query(`SELECT id FROM "${schema}".cairnq_tasks WHERE id = $1 FOR UPDATE`, [first.id]);
    const late = store.complete({ taskId: first.id, workerId: A, attempt: 1, result: null });
    late.catch(() => {});
    expect(await store.claim(claimInput(A))).toEqual([]);
    await blocker.query("COMMIT");
    await expect(late).rejects.toMatchObject({ name: "LostLease" });
    expect(await store.claim(claimInput(A))).toEqual([]);
    await store.complete({ taskId: first.id, workerId: B, attempt: 2, result: null });
    expect((await store.claim(claimInput(A))).map((t) => t.id)).toEqual([second.id]);
  });

  it("marks the group rows of the tasks it took `claimed` in the draw's own statement, and only theirs", async () => {
    const schema = schemaName();
    const store = openStore(pgDsn(), { schema });
    await store.connect();
    const g1 = await store.submit({ name: "a", payload: { n: 1 }, group: "g" });
    const g2 = await store.submit({ name: "a", payload: { n: 2 }, group: "g" });
    const h1 = await store.submit({ name: "a", payload: { n: 3 }, group: "h" });
    const plain = await store.submit({ name: "a", payload: { n: 4 } });
    const taken = await store.claim(claimInput(A));
    // One per group (groupConcurrency 1) and the task without a group: g's second task waits.
    expect(taken.map((t) => t.id).sort()).toEqual([g1.id, h1.id, plain.id].sort());
    const rows = await q<{ task_id: string; state: string }>(`SELECT task_id, state FROM "${schema}".cairnq_ext_task_groups ORDER BY task_id`);
    expect(rows).toEqual(
      [
        { task_id: g1.id, state: "claimed" },
        { task_id: g2.id, state: "queued" },
        { task_id: h1.id, state: "claimed" },
      ].sort((x, y) => (x.task_id < y.task_id ? -1 : 1)),
    );
  });
});
