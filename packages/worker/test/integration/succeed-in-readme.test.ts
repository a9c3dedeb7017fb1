/**
 * The README's `ctx.succeedIn(fn)` example (support/succeed-in-example.ts) run
 * on a worker over Postgres in a fresh schema with the example's `bookings`
 * table: the task succeeded with the handler's result, and the booking it
 * wrote committed with it.
 */
import { PostgresStore } from "@cairnq/store-postgres";
import { PgAdmin, pgDsn } from "@cairnq/test-support";
import { afterAll, describe, expect, it } from "vitest";
import { runExample } from "../support/succeed-in-example.js";

describe("the README's succeedIn example", () => {
  const admin = new PgAdmin();
  afterAll(() => admin.close());

  it("Postgres: the booking commits together with the settlement", async () => {
    const schema = await admin.createSchema("readme_succeed_in");
    try {
      await admin.q(`CREATE TABLE "${schema}".bookings (order_id integer PRIMARY KEY)`);
      const store = new PostgresStore(pgDsn(), { schema });
      try {
        expect(await runExample(store)).toEqual({ booked: 42 });
      } finally {
        await store.close();
      }
      expect(await admin.q(`SELECT order_id FROM "${schema}".bookings`)).toEqual([{ order_id: 42 }]);
    } finally {
      await admin.dropSchema(schema);
    }
  }, 60_000);
});
