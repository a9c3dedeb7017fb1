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
});
