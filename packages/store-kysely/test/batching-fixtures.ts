/** Fakes for the write-batching tests: a server that logs statements, and a kind of write over plain ids. */
import type { QueryResult } from "kysely";
import { CompiledQuery } from "kysely";
import type { AnyKysely, BatchableWrite, MergedOutcome, PlannedWrite, QueryThunk, Row, WriteLatency } from "../src/index.js";
import { KyselyExecutor } from "../src/index.js";

/** The batchings under test never touch `db`: the fake executor answers every statement. */
export const db = null as unknown as AnyKysely;

/**
 * An executor whose writes each log their SQL and answer a microtask later (or once `gate` resolves); a statement holding
 * a row named in `refuse` fails whole with SQLSTATE 23514 (as a CHECK would), `lost` fails with no
 * SQLSTATE (a connection lost with the outcome unknown).
 */
export class FakeServer extends KyselyExecutor {
  readonly statements: string[] = [];
  refuse = new Set<string>();
  lost = false;
  /** While set, every write waits for it before answering (a statement held in flight). */
  gate: Promise<void> | null = null;

  override async write(_db: AnyKysely, query: QueryThunk): Promise<QueryResult<Row>> {
    const built = query();
    this.statements.push(built.sql);
    await Promise.resolve();
    if (this.gate !== null) await this.gate;
    if (this.lost) throw new Error("connection lost");
    const ids = built.parameters as string[];
    const bad = ids.find((id) => this.refuse.has(id));
    if (bad !== undefined) throw Object.assign(new Error(`row ${bad} refused`), { code: "23514" });
    // A row whose id starts with "gone" fails its guard: no row comes back for it.
    return { rows: ids.filter((id) => !id.startsWith("gone")).map((id) => ({ id, status: "done" })) };
  }
}

/** A kind of write over ids whose statement names them: `one` for one id, `many` for several; "gone…" ids lose their lease. */
export function idWrite(latency: WriteLatency): BatchableWrite<string, string> {
  const answerOne = (id: string, result: QueryResult<Row>): string => {
    if (result.rows.length === 0) throw new Error(`lost ${id}`);
    return `row:${id}`;
  };
  return {
    name: "touch",
    latency,
    key: (id) => id,
    bytes: () => 10,
    one: (id): PlannedWrite<string> => ({ query: CompiledQuery.raw(`one ${id}`, [id]), answer: (result) => answerOne(id, result) }),
    many: (ids): PlannedWrite<MergedOutcome<string>[]> => ({
      query: CompiledQuery.raw(`many ${ids.join(",")}`, [...ids]),
      answer: (result) => {
        const back = new Set(result.rows.map((row) => String(row.id)));
        return ids.map((id) => (back.has(id) ? { ok: true, value: `row:${id}` } : { ok: false, error: new Error(`lost ${id}`) }));
      },
    }),
    manyLocked: () => {
      throw new Error("a combining batching never runs the locked form");
    },
  };
}

