/**
 * A minimal protocol v1 peer, written from docs/protocol.md §5 alone: it
 * submits (§5.1, T1 without a key), claims (§5.10: lease recovery, then one
 * draw), completes (§5.15) and purges (§5.9) with plain SQL on the v1 table
 * and knows nothing of any extension table. The interop tests run it beside
 * CairnQ on a database where durable steps, groups and trace context are in
 * use, as another v1 implementation (another language's SDK) would share it.
 *
 * One peer speaks one SQL flavour; `sql` runs a statement with `?`
 * placeholders and returns its rows.
 */
export interface PeerSql {
  readonly flavour: "sqlite" | "postgres";
  run(text: string, values: readonly unknown[]): Promise<Record<string, unknown>[]>;
}

export interface PeerTask {
  readonly id: string;
  readonly name: string;
  readonly status: string;
  readonly attempt: number;
  readonly payload: unknown;
}

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** A §2.4 task id: `task_` + a ULID (48-bit ms time, 80 random bits, Crockford base32). */
function taskId(nowMs: number): string {
  let time = "";
  for (let t = nowMs, i = 0; i < 10; i += 1, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  let random = "";
  for (let i = 0; i < 16; i += 1) random += CROCKFORD[Math.floor(Math.random() * 32)];
  return `task_${time}${random}`;
}

const ENVELOPE = '{"type":"LeaseExpired","code":"lease_expired","message":"task lease expired and max attempts reached","retryable":false,"details":{}}';

export class V1Peer {
  readonly workerId = `worker_peer_${Math.random().toString(36).slice(2, 10)}`;

  constructor(private readonly sql: PeerSql) {}

  /** `?` placeholders → `$n` on Postgres. */
  #q(text: string, values: readonly unknown[]): Promise<Record<string, unknown>[]> {
    let n = 0;
    const compiled = this.sql.flavour === "postgres" ? text.replace(/\?/g, () => `$${(n += 1)}`) : text;
    return this.sql.run(compiled, values);
  }

  /**
   * §5.1 without a key: one insert, run_at = created = updated = now. `metadata` is any JSON value (the
   * v1 column holds any), written as given: a peer may store `null`, an array, a string or a number.
   */
  async submit(name: string, payload: unknown, queue = "default", metadata: unknown = {}): Promise<string> {
    const now = Date.now();
    const id = taskId(now);
    await this.#q(
      "INSERT INTO cairnq_tasks (id, name, queue, status, payload, metadata, max_attempts, priority, run_at_ms, root_id, created_at_ms, updated_at_ms) " +
        "VALUES (?, ?, ?, 'queued', ?, ?, 3, 0, ?, ?, ?, ?)",
      [id, name, queue, JSON.stringify(payload), JSON.stringify(metadata), now, id, now, now],
    );
    return id;
  }

  /** §5.10: lease recovery over the whole table, then one draw of up to `limit` due tasks, in one transaction. */
  async claim(names: readonly string[], limit = 1, leaseMs = 30_000, queue = "default"): Promise<PeerTask[]> {
    const now = Date.now();
    const pg = this.sql.flavour === "postgres";
    await this.#q(pg ? "BEGIN" : "BEGIN IMMEDIATE", []);
    try {
      await this.#q(
        "UPDATE cairnq_tasks SET " +
          "status = CASE WHEN cancel_requested_at_ms IS NOT NULL THEN 'canceled' WHEN attempt < max_attempts THEN 'queued' ELSE 'failed' END, " +
          "completed_at_ms = CASE WHEN cancel_requested_at_ms IS NULL AND attempt < max_attempts THEN completed_at_ms ELSE ? END, " +
          "worker_id = CASE WHEN cancel_requested_at_ms IS NULL AND attempt < max_attempts THEN NULL ELSE worker_id END, " +
          "run_at_ms = CASE WHEN cancel_requested_at_ms IS NULL AND attempt < max_attempts THEN ? ELSE run_at_ms END, " +
          "progress = CASE WHEN cancel_requested_at_ms IS NULL AND attempt < max_attempts THEN NULL ELSE progress END, " +
          "message = CASE WHEN cancel_requested_at_ms IS NULL AND attempt < max_attempts THEN NULL ELSE message END, " +
          `error = CASE WHEN cancel_requested_at_ms IS NULL AND attempt >= max_attempts THEN ${pg ? "CAST(? AS jsonb)" : "?"} ELSE error END, ` +
          "lease_until_ms = NULL, updated_at_ms = ? " +
          "WHERE status = 'running' AND lease_until_ms IS NOT NULL AND lease_until_ms <= ?",
        [now, now, ENVELOPE, now, now],
      );
      const marks = names.map(() => "?").join(", ");
      const pick =
        `SELECT id FROM cairnq_tasks WHERE status = 'queued' AND queue = ? AND name IN (${marks}) AND run_at_ms <= ? ` +
        `ORDER BY priority DESC, run_at_ms ASC, id ASC LIMIT ?${pg ? " FOR UPDATE SKIP LOCKED" : ""}`;
      const rows = await this.#q(
        `UPDATE cairnq_tasks SET status = 'running', worker_id = ?, lease_until_ms = ?, attempt = attempt + 1, updated_at_ms = ? ` +
          `WHERE id IN (${pick}) RETURNING id, name, status, attempt, payload`,
        [this.workerId, now + leaseMs, now, queue, ...names, now, limit],
      );
      await this.#q("COMMIT", []);
      return rows.map((row) => ({
        id: String(row.id),
        name: String(row.name),
        status: String(row.status),
        attempt: Number(row.attempt),
        payload: typeof row.payload === "string" ? (JSON.parse(row.payload) as unknown) : row.payload,
      }));
    } catch (err) {
      await this.#q("ROLLBACK", []);
      throw err;
    }
  }

  /** §5.15, owner-guarded: succeeded (or canceled when flagged); returns whether this peer still held the task. */
  async complete(id: string, result: unknown): Promise<boolean> {
    const now = Date.now();
    const pg = this.sql.flavour === "postgres";
    const rows = await this.#q(
      "UPDATE cairnq_tasks SET " +
        "status = CASE WHEN cancel_requested_at_ms IS NOT NULL THEN 'canceled' ELSE 'succeeded' END, " +
        `result = CASE WHEN cancel_requested_at_ms IS NOT NULL THEN result ELSE ${pg ? "CAST(? AS jsonb)" : "?"} END, ` +
        "progress = CASE WHEN cancel_requested_at_ms IS NOT NULL THEN progress ELSE 1 END, " +
        "lease_until_ms = NULL, completed_at_ms = ?, updated_at_ms = ? " +
        "WHERE id = ? AND status = 'running' AND worker_id = ? AND lease_until_ms > ? RETURNING id",
      [JSON.stringify(result), now, now, id, this.workerId, now],
    );
    return rows.length === 1;
  }

  /** §5.9 with `older_than_ms` 0: deletes terminal tasks completed before now; returns their ids. */
  async purge(limit = 1000): Promise<string[]> {
    const now = Date.now();
    const pg = this.sql.flavour === "postgres";
    const pick =
      "SELECT id FROM cairnq_tasks WHERE status IN ('succeeded', 'failed', 'canceled') AND completed_at_ms IS NOT NULL AND completed_at_ms < ? " +
      `ORDER BY completed_at_ms ASC LIMIT ?${pg ? " FOR UPDATE SKIP LOCKED" : ""}`;
    const rows = await this.#q(`DELETE FROM cairnq_tasks WHERE id IN (${pick}) RETURNING id`, [now, limit]);
    return rows.map((row) => String(row.id));
  }

  /** Rows of `table` that point at a task no longer in `cairnq_tasks` (an extension row left behind). */
  async orphans(table: string): Promise<number> {
    const rows = await this.#q(`SELECT COUNT(*) AS n FROM ${table} WHERE task_id NOT IN (SELECT id FROM cairnq_tasks)`, []);
    return Number(rows[0]?.n);
  }
}
