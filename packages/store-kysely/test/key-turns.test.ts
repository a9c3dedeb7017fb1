import { describe, expect, it } from "vitest";
import { KeyTurns } from "../src/key-turns.js";

const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

describe("KeyTurns", () => {
  it("lets the turns of one key go in the order they were taken, whatever order they are given back in, and forgets idle keys", async () => {
    const turns = new KeyTurns();
    const ran: string[] = [];
    const a = turns.take("k");
    const b = turns.take("k");
    const c = turns.take("k");
    const other = turns.take("other");
    void c.ready.then(() => ran.push("c"));
    void b.ready.then(() => ran.push("b"));
    void a.ready.then(() => ran.push("a"));
    void other.ready.then(() => ran.push("other"));
    await tick();
    expect(ran).toEqual(["a", "other"]);
    c.release(); // given back early (its submit failed before its turn): still waits for b
    await tick();
    expect(ran).toEqual(["a", "other"]);
    a.release();
    await tick();
    expect(ran).toEqual(["a", "other", "b"]);
    expect(turns.keysInFlight).toBe(2);
    b.release();
    other.release();
    other.release(); // idempotent
    await tick();
    expect(ran).toEqual(["a", "other", "b", "c"]);
    expect(turns.keysInFlight).toBe(0);
  });
});
