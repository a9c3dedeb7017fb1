import type { QueryResult } from "kysely";
import { describe, expect, it } from "vitest";
import type { AnyKysely, QueryThunk, Row } from "../src/index.js";
import { SingleWrites, writeAlone } from "../src/index.js";
import { db, FakeServer, idWrite } from "./batching-fixtures.js";

describe("SingleWrites", () => {
  it("runs every write as its own statement, built when it runs, each caller getting its own answer", async () => {
    const server = new FakeServer();
    const write = new SingleWrites().writer(db, server, idWrite("settlement"));
    const results = await Promise.allSettled(["a", "gone1", "b"].map((id) => write(id)));
    expect(server.statements).toEqual(["one a", "one gone1", "one b"]);
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual(["row:a", "lost gone1", "row:b"]);
  });
});

describe("writeAlone", () => {
  it("builds the plan when the executor runs the statement (a bound now is read then), and answers from the last one built", async () => {
    /** Waits for `go` before running its statement, then runs the thunk twice, as a busy retry would. */
    class LateServer extends FakeServer {
      go: () => void = () => {};
      override async write(db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
        await new Promise<void>((resolve) => (this.go = resolve));
        query();
        return super.write(db, query);
      }
    }
    const server = new LateServer();
    const kind = idWrite("interactive");
    const built: string[] = [];
    const counted = { ...kind, one: (id: string) => (built.push(id), kind.one(`${id}${built.length}`)) };
    const result = writeAlone(db, server, counted, "a");
    await Promise.resolve();
    expect(built).toEqual([]);
    server.go();
    expect(await result).toBe("row:a2");
    expect(built).toEqual(["a", "a"]);
  });

  it("rejects, never throws at the call, when building the statement throws inside an executor that builds it at once", async () => {
    const kind = { ...idWrite("settlement"), one: (): never => { throw new Error("cannot bind"); } };
    let result: Promise<string> | null = null;
    expect(() => (result = writeAlone(db, new FakeServer(), kind, "a"))).not.toThrow();
    await expect(result).rejects.toThrow("cannot bind");
  });
});

