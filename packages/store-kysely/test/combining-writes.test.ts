import { describe, expect, it } from "vitest";
import { CombiningWrites } from "../src/index.js";
import { db, FakeServer, idWrite } from "./batching-fixtures.js";

const splittable = (error: unknown): boolean => (error as { code?: unknown }).code === "23514";

describe("CombiningWrites", () => {
  it("settlements of one burst share one multi-row statement, rows sorted by key; each caller gets its own row or its own error", async () => {
    const server = new FakeServer();
    const write = new CombiningWrites({ splittable }).writer(db, server, idWrite("settlement"));
    const results = await Promise.allSettled(["c", "a", "gone1", "b"].map((id) => write(id)));
    expect(server.statements).toEqual(["many a,b,c,gone1"]);
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual(["row:c", "row:a", "lost gone1", "row:b"]);
  });

  it("a lone interactive write runs its own statement at once; writes arriving meanwhile go together after it", async () => {
    const server = new FakeServer();
    const write = new CombiningWrites({ splittable }).writer(db, server, idWrite("interactive"));
    const first = write("a");
    expect(server.statements).toEqual(["one a"]); // sent in the call itself, no turn waited for
    const rest = ["c", "b"].map((id) => write(id));
    expect(await first).toBe("row:a");
    expect(await Promise.all(rest)).toEqual(["row:c", "row:b"]);
    expect(server.statements).toEqual(["one a", "many b,c"]);
  });

  it("a multi-row statement the database rejected whole is re-sent in halves down to single rows: only the bad row's caller fails, with its own statement's error", async () => {
    const server = new FakeServer();
    server.refuse.add("c");
    const write = new CombiningWrites({ splittable }).writer(db, server, idWrite("settlement"));
    const results = await Promise.allSettled(["a", "b", "c", "d"].map((id) => write(id)));
    expect(server.statements).toEqual(["many a,b,c,d", "many a,b", "many c,d", "one c", "one d"]);
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as { code?: string }).code))).toEqual(["row:a", "row:b", "23514", "row:d"]);
  });

  it("an error that is not splittable (outcome unknown) fails every caller of the statement and re-sends nothing", async () => {
    const server = new FakeServer();
    server.lost = true;
    const write = new CombiningWrites({ splittable }).writer(db, server, idWrite("background"));
    const results = await Promise.allSettled(["a", "b", "c"].map((id) => write(id)));
    expect(server.statements).toEqual(["many a,b,c"]);
    expect(results.map((r) => r.status === "rejected" && (r.reason as Error).message)).toEqual(["connection lost", "connection lost", "connection lost"]);
  });

  it("two writes with one key never share a statement: the second goes in the next one", async () => {
    const server = new FakeServer();
    const write = new CombiningWrites({ splittable }).writer(db, server, idWrite("settlement"));
    await Promise.all(["a", "a", "b"].map((id) => write(id)));
    expect(server.statements).toEqual(["many a,b", "one a"]);
  });

  describe("takeSettlements (settleWithClaims: a claim's transaction carries the settlements waiting)", () => {
    it("takes the settlements queued behind the flush in flight, but no write of a task that flush holds; the flush does not send them again", async () => {
      const server = new FakeServer();
      const batching = new CombiningWrites({ splittable, settleWithClaims: true });
      const write = batching.writer(db, server, idWrite("settlement"));
      let release = (): void => {};
      server.gate = new Promise((resolve) => (release = resolve));
      const first = write("a");
      await new Promise((resolve) => process.nextTick(resolve));
      expect(server.statements).toEqual([]); // not at the end of the tick: a claim started this turn may carry it
      await new Promise((resolve) => setImmediate(resolve)); // the turn's flush has begun: "a" is in flight (held)
      expect(server.statements).toEqual(["one a"]);
      const again = write("a");
      const rest = ["c", "b", "gone1"].map((id) => write(id));
      const taken = batching.takeSettlements?.();
      expect(taken?.count).toBe(3);
      const queries = taken?.queries() ?? [];
      expect(queries.map((q) => q.sql)).toEqual(["many b,c,gone1"]);
      server.gate = null;
      release();
      taken?.settle([await server.write(db, () => queries[0] as never)]);
      const settled = await Promise.allSettled(rest);
      expect(settled.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual(["row:c", "row:b", "lost gone1"]);
      expect(await first).toBe("row:a");
      expect(await again).toBe("row:a");
      // The flush after "a" sent only the second "a": b, c and gone1 went with the (here simulated) claim.
      expect(server.statements).toEqual(["one a", "many b,c,gone1", "one a"]);
    });

    it("a lone settlement taken is its own single-row statement; nothing waiting, or a batching without the option, takes nothing", async () => {
      const server = new FakeServer();
      const batching = new CombiningWrites({ splittable, settleWithClaims: true });
      const write = batching.writer(db, server, idWrite("settlement"));
      expect(batching.takeSettlements?.()).toBeNull();
      const lone = write("x");
      const taken = batching.takeSettlements?.();
      const queries = taken?.queries() ?? [];
      expect(queries.map((q) => q.sql)).toEqual(["one x"]);
      taken?.settle([{ rows: [{ id: "x" }] }]);
      expect(await lone).toBe("row:x");
      await new Promise((resolve) => setImmediate(resolve));
      expect(server.statements).toEqual([]); // its own flush found nothing left to send

      const plain = new CombiningWrites({ splittable });
      const plainWrite = plain.writer(db, new FakeServer(), idWrite("settlement"));
      const pending = plainWrite("y");
      expect(plain.takeSettlements).toBeUndefined(); // claims take the plain path
      expect(await pending).toBe("row:y");
    });

    it("with settleAloneUpTo, up to that many settlements taken go as their own statements, each caller answered by its own; more go as one", async () => {
      const server = new FakeServer();
      const batching = new CombiningWrites({ splittable, settleWithClaims: true, settleAloneUpTo: 3 });
      const write = batching.writer(db, server, idWrite("settlement"));
      const three = ["c", "gone1", "b"].map((id) => write(id));
      const taken = batching.takeSettlements?.();
      expect(taken?.count).toBe(3);
      const queries = taken?.queries() ?? [];
      expect(queries.map((q) => q.sql)).toEqual(["one b", "one c", "one gone1"]);
      const results = [];
      for (const query of queries) results.push(await server.write(db, () => query));
      taken?.settle(results);
      const settled = await Promise.allSettled(three);
      expect(settled.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual(["row:c", "lost gone1", "row:b"]);

      const four = ["d", "e", "f", "g"].map((id) => write(id));
      const more = batching.takeSettlements?.();
      const manyQueries = more?.queries() ?? [];
      expect(manyQueries.map((q) => q.sql)).toEqual(["many d,e,f,g"]);
      more?.settle([await server.write(db, () => manyQueries[0] as never)]);
      expect(await Promise.all(four)).toEqual(["row:d", "row:e", "row:f", "row:g"]);
      expect(() => new CombiningWrites({ splittable, settleWithClaims: true, settleAloneUpTo: 0 })).toThrow(RangeError);
      expect(() => new CombiningWrites({ splittable, settleWithClaims: true, settleAloneUpTo: 1.5 })).toThrow(RangeError);
    });

    it("only settlements ride: interactive and background writes are never taken", async () => {
      const batching = new CombiningWrites({ splittable, settleWithClaims: true });
      const server = new FakeServer();
      const background = batching.writer(db, server, idWrite("background"));
      const interactive = batching.writer(db, server, idWrite("interactive"));
      const writes = [background("h"), interactive("s1"), interactive("s2")];
      expect(batching.takeSettlements?.()).toBeNull();
      expect(await Promise.all(writes)).toEqual(["row:h", "row:s1", "row:s2"]);
    });

    it("a claim that failed with nothing applied hands its settlements back, written on their own; one whose outcome is unknown fails them with its error", async () => {
      const server = new FakeServer();
      const batching = new CombiningWrites({ splittable, settleWithClaims: true });
      const write = batching.writer(db, server, idWrite("settlement"));
      const [a, b] = ["a", "b"].map((id) => write(id));
      const rejected = batching.takeSettlements?.();
      rejected?.queries();
      rejected?.fail(Object.assign(new Error("deadlock"), { code: "23514" }));
      expect(await Promise.all([a, b])).toEqual(["row:a", "row:b"]);
      expect(server.statements).toEqual(["many a,b"]);

      const c = write("c");
      const lost = batching.takeSettlements?.();
      lost?.fail(new Error("connection lost"));
      await expect(c).rejects.toThrow("connection lost");
      expect(server.statements).toEqual(["many a,b"]);
    });
  });
});
