import { afterEach, describe, expect, it, vi } from "vitest";
import { WaiterSet } from "@cairnq/runtime";

afterEach(() => {
  vi.useRealTimers();
});

describe("WaiterSet", () => {
  it("a wait ends at its timeout, honoured past 2^31 ms", async () => {
    vi.useFakeTimers();
    const set = new WaiterSet<string>();
    let done = false;
    const waiting = set.wait("a", 2 ** 31 + 10).then(() => {
      done = true;
    });
    expect(set.size).toBe(1);
    await vi.advanceTimersByTimeAsync(2 ** 31);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(10);
    await waiting;
    expect(done).toBe(true);
    expect(set.size).toBe(0);
  });

  it("wakeWhere wakes only matching waiters; wakeAll the rest; onLeave sees each once", async () => {
    const left: string[] = [];
    const set = new WaiterSet<string>({ onLeave: (w) => left.push(w.data) });
    const a = set.wait("a", 60_000);
    const b = set.wait("b", 60_000);
    expect(set.wakeWhere((d) => d === "a")).toBe(1);
    await a;
    expect(set.waiters().map((w) => w.data)).toEqual(["b"]);
    expect(set.wakeAll()).toBe(1);
    await b;
    expect(set.wakeAll()).toBe(0);
    expect(left).toEqual(["a", "b"]);
  });

  it("wakeKey uses the index, and needs keyOf", async () => {
    const set = new WaiterSet<{ id: string }>({ keyOf: (d) => d.id });
    const one = set.wait({ id: "t1" }, 60_000);
    const two = set.wait({ id: "t1" }, 60_000);
    const other = set.wait({ id: "t2" }, 60_000);
    expect(set.wakeKey("t1")).toBe(2);
    expect(set.wakeKey("none")).toBe(0);
    await Promise.all([one, two]);
    expect(set.size).toBe(1);
    for (const w of set.waiters()) w.wake();
    await other;
    expect(set.wakeKey("t2")).toBe(0);
    expect(() => new WaiterSet<string>().wakeKey("x")).toThrow(/keyOf/);
  });

  it("wakeKey's before sees each woken waiter's data before it wakes, and no other", async () => {
    const set = new WaiterSet<{ id: string; row?: string }>({ keyOf: (d) => d.id });
    const a = { id: "t1" } as { id: string; row?: string };
    const b = { id: "t2" } as { id: string; row?: string };
    const waitA = set.wait(a, 60_000).then(() => a.row);
    const waitB = set.wait(b, 60_000);
    expect(
      set.wakeKey("t1", (d) => {
        d.row = "terminal";
      }),
    ).toBe(1);
    expect(await waitA).toBe("terminal");
    expect(b.row).toBeUndefined();
    expect(set.hasKey("t1")).toBe(false);
    expect(set.hasKey("t2")).toBe(true);
    set.wakeAll();
    await waitB;
    expect(set.hasKey("t2")).toBe(false);
    expect(() => new WaiterSet<string>().hasKey("x")).toThrow(/keyOf/);
  });

  it("an abort ends a wait and removes it; an aborted signal or a zero timeout never registers", async () => {
    const set = new WaiterSet<string>();
    const controller = new AbortController();
    const waiting = set.wait("a", 60_000, controller.signal);
    controller.abort();
    await waiting;
    expect(set.size).toBe(0);
    await set.wait("b", 60_000, controller.signal);
    await set.wait("c", 0);
    expect(set.size).toBe(0);
  });

  it("timeouts are unref'd by default and ref'd with unref: false", async () => {
    const spy = vi.spyOn(globalThis, "setTimeout");
    const set = new WaiterSet<string>();
    const a = set.wait("a", 60_000);
    expect((spy.mock.results[0]?.value as NodeJS.Timeout).hasRef()).toBe(false);
    set.wakeAll();
    await a;
    const refd = new WaiterSet<string>({ unref: false });
    const b = refd.wait("b", 60_000);
    expect((spy.mock.results[1]?.value as NodeJS.Timeout).hasRef()).toBe(true);
    refd.wakeAll();
    await b;
    spy.mockRestore();
  });
});
