import { describe, expect, it, vi } from "vitest";
import type { CombinedWrite } from "../src/index.js";
import { WriteCombiner } from "../src/index.js";

/** A runner that records each flush and settles it when the test says so. */
function controlledRunner(): {
  flushes: string[][];
  release: () => void;
  run: (batch: readonly CombinedWrite<string, string>[]) => Promise<void>;
} {
  const flushes: string[][] = [];
  let releases: (() => void)[] = [];
  return {
    flushes,
    release: () => {
      const pending = releases;
      releases = [];
      for (const r of pending) r();
    },
    run: async (batch) => {
      flushes.push(batch.map((e) => e.item));
      await new Promise<void>((resolve) => releases.push(resolve));
      for (const entry of batch) entry.resolve(`done:${entry.item}`);
    },
  };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("WriteCombiner", () => {
  it("group commit: the first write flushes at the end of the turn; writes arriving meanwhile go together once it returns", async () => {
    const runner = controlledRunner();
    const combiner = new WriteCombiner(runner.run);
    const a = combiner.add("a", "a", 1);
    await turn();
    expect(runner.flushes).toEqual([["a"]]);
    const rest = ["b", "c", "d"].map((item) => combiner.add(item, item, 1));
    await turn();
    expect(runner.flushes).toHaveLength(1); // collecting while the first flush is in flight
    runner.release();
    expect(await a).toBe("done:a");
    await turn();
    expect(runner.flushes).toEqual([["a"], ["b", "c", "d"]]);
    runner.release();
    expect(await Promise.all(rest)).toEqual(["done:b", "done:c", "done:d"]);
  });

  it("runAlone: an idle combiner runs the lone write at once as the flush in flight; writes arriving meanwhile wait for it, then go together", async () => {
    const runner = controlledRunner();
    const combiner = new WriteCombiner(runner.run);
    let finishAlone = (): void => {};
    const alone = combiner.runAlone(() => new Promise<string>((resolve) => (finishAlone = () => resolve("alone"))));
    expect(alone).not.toBeNull();
    expect(combiner.flushing).toBe(true);
    expect(combiner.runAlone(() => Promise.resolve("second"))).toBeNull(); // busy: the caller adds instead
    const rest = ["b", "c"].map((item) => combiner.add(item, item, 1));
    await turn();
    expect(runner.flushes).toEqual([]); // waiting behind the lone write
    finishAlone();
    expect(await alone).toBe("alone");
    await turn();
    expect(runner.flushes).toEqual([["b", "c"]]);
    expect(combiner.runAlone(() => Promise.resolve("third"))).toBeNull(); // a flush is in flight
    runner.release();
    expect(await Promise.all(rest)).toEqual(["done:b", "done:c"]);
    await turn();
    // After a flush of two the writes come in bursts: runAlone stands aside until a flush carries one write again.
    expect(combiner.runAlone(() => Promise.resolve("burst"))).toBeNull();
    const single = combiner.add("d", "d", 1);
    await turn();
    runner.release();
    expect(await single).toBe("done:d");
    await turn();
    const failing = combiner.runAlone(() => Promise.reject(new Error("boom")));
    await expect(failing).rejects.toThrow("boom");
    expect(combiner.flushing).toBe(false); // a failed lone write frees the combiner too
    const thrown = combiner.runAlone(() => {
      throw new Error("sync");
    });
    await expect(thrown).rejects.toThrow("sync");
    expect(combiner.flushing).toBe(false);
  });

  it("runAlone after a burst: the first of each burst of resubmitting callers does not split the batch", async () => {
    const runner = controlledRunner();
    const combiner = new WriteCombiner(runner.run);
    const submit = (item: string): Promise<string> => combiner.runAlone(() => Promise.resolve(`alone:${item}`)) ?? combiner.add(item, item, 1);
    // A burst after idle: the first runs alone, the rest gather behind it.
    const first = ["a", "b", "c"].map(submit);
    expect(await first[0]).toBe("alone:a");
    await turn();
    expect(runner.flushes).toEqual([["b", "c"]]);
    runner.release();
    await Promise.all(first);
    // Those callers resubmit together: one batch, no lone first.
    const second = ["d", "e", "f"].map(submit);
    await turn();
    expect(runner.flushes).toEqual([["b", "c"], ["d", "e", "f"]]);
    runner.release();
    expect(await Promise.all(second)).toEqual(["done:d", "done:e", "done:f"]);
  });

  it('flushAt "tick": the first write flushes at the end of the tick, before the loop turn ends; writes of every promise chain of the tick share it', async () => {
    const runner = controlledRunner();
    const combiner = new WriteCombiner(runner.run, {}, "tick");
    const order: string[] = [];
    setImmediate(() => order.push("turn"));
    // "c" comes from a promise chain a few steps long, as a worker's next call ends after its predecessor's settlement.
    const chained = Promise.resolve()
      .then(() => undefined)
      .then(() => undefined)
      .then(() => combiner.add("c", "c", 1));
    const first = [combiner.add("a", "a", 1), combiner.add("b", "b", 1), chained];
    expect(runner.flushes).toEqual([]); // not synchronously
    await new Promise<void>((resolve) => process.nextTick(resolve));
    expect(runner.flushes).toEqual([["a", "b", "c"]]);
    expect(order).toEqual([]); // the loop turn has not ended
    const later = combiner.add("d", "d", 1); // collects behind the flush in flight, as with "turn"
    await turn();
    expect(runner.flushes).toHaveLength(1);
    runner.release();
    expect(await Promise.all(first)).toEqual(["done:a", "done:b", "done:c"]);
    await turn();
    expect(runner.flushes).toEqual([["a", "b", "c"], ["d"]]);
    runner.release();
    expect(await later).toBe("done:d");
  });

  it("writes of one turn share a flush", async () => {
    const runner = controlledRunner();
    const combiner = new WriteCombiner(runner.run);
    const all = ["a", "b", "c"].map((item) => combiner.add(item, item, 1));
    await turn();
    expect(runner.flushes).toEqual([["a", "b", "c"]]);
    runner.release();
    await Promise.all(all);
  });

  it("never puts two writes with one key in a flush; the second waits for the next, in order", async () => {
    const runner = controlledRunner();
    const combiner = new WriteCombiner<string, string>(runner.run);
    const results = [combiner.add("k1-first", "k1", 1), combiner.add("k2", "k2", 1), combiner.add("k1-second", "k1", 1), combiner.add("free", null, 1)];
    await turn();
    expect(runner.flushes).toEqual([["k1-first", "k2", "free"]]);
    runner.release();
    await turn();
    expect(runner.flushes[1]).toEqual(["k1-second"]);
    runner.release();
    expect(await Promise.all(results)).toEqual(["done:k1-first", "done:k2", "done:k1-second", "done:free"]);
  });

  it("bounds a flush by rows and by bytes (an oversized write runs alone)", async () => {
    const runner = controlledRunner();
    const combiner = new WriteCombiner(runner.run, { maxRows: 2, maxBytes: 10, maxPendingRows: 100, maxPendingBytes: 1000 });
    const all = [combiner.add("a", null, 1), combiner.add("b", null, 1), combiner.add("c", null, 1), combiner.add("big", null, 50), combiner.add("d", null, 6), combiner.add("e", null, 6)];
    for (let i = 0; i < 5; i++) {
      await turn();
      runner.release();
    }
    await Promise.all(all);
    // An entry that does not fit is passed over (it goes first next time); a flush's first entry always fits.
    expect(runner.flushes).toEqual([["a", "b"], ["c", "d"], ["big"], ["e"]]);
  });

  it("backpressure: callers past the pending bound wait until a flush takes writes, then enter in arrival order", async () => {
    const runner = controlledRunner();
    const combiner = new WriteCombiner(runner.run, { maxRows: 2, maxPendingRows: 2 });
    const first = combiner.add("a", null, 1);
    await turn(); // "a" in flight
    const queued = [combiner.add("b", null, 1), combiner.add("c", null, 1)];
    let entered = 0;
    const late = ["d", "e"].map((item) =>
      combiner.add(item, null, 1).then((v) => {
        entered += 1;
        return v;
      }),
    );
    await turn();
    expect(combiner.pending).toBe(2); // d and e wait outside: the pending bound is reached
    runner.release();
    await first;
    await turn();
    expect(runner.flushes[1]).toEqual(["b", "c"]);
    expect(combiner.pending).toBe(2); // d and e entered once b and c were taken
    expect(entered).toBe(0);
    runner.release();
    await turn();
    expect(runner.flushes[2]).toEqual(["d", "e"]);
    runner.release();
    expect(await Promise.all([...queued, ...late])).toEqual(["done:b", "done:c", "done:d", "done:e"]);
  });

  it("a runner that throws fails the writes it left unsettled, with its error, and the next flush still runs", async () => {
    let calls = 0;
    const combiner = new WriteCombiner<string, string>(async (batch) => {
      calls += 1;
      if (calls === 1) {
        batch[0]?.resolve("kept");
        throw new Error("boom");
      }
      for (const entry of batch) entry.resolve("ok");
    });
    const a = combiner.add("a", null, 1);
    const b = combiner.add("b", null, 1);
    expect(await a).toBe("kept");
    await expect(b).rejects.toThrow("boom");
    expect(await combiner.add("c", null, 1)).toBe("ok");
  });

  it("flushes under an app's fake timers (vi.useFakeTimers() fakes setImmediate): a combined write does not wait for a faked tick", async () => {
    vi.useFakeTimers();
    try {
      const combiner = new WriteCombiner<string, string>(async (batch) => {
        for (const entry of batch) entry.resolve(`done:${entry.item}`);
      });
      expect(await Promise.all([combiner.add("a", "a", 1), combiner.add("b", "b", 1)])).toEqual(["done:a", "done:b"]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("rejects bounds that are not positive integers", () => {
    expect(() => new WriteCombiner(async () => {}, { maxRows: 0 })).toThrow(/maxRows/);
    expect(() => new WriteCombiner(async () => {}, { maxBytes: 1.5 })).toThrow(/maxBytes/);
  });
});
