/**
 * The flow-control step of a claim cycle (`ClaimInput.flowControl`; the rules
 * are `@cairnq/protocol` `flow-control.ts`). Runs inside the claim's write
 * transaction, right after lease recovery (so an expired lease has already
 * freed its slot) and around the draws:
 *
 * 1. `begin`: take the key lock on `flowLockKey(name)` for every limited name,
 *    in sorted order (two claims of overlapping names never deadlock), then
 *    read each name's running count and rate-window count and wrap the
 *    draw planner so no draw exceeds the allowance. On SQLite the write
 *    transaction already serialises every claim; on Postgres the lock is a
 *    transaction-scoped advisory lock, so claims of one limited name queue
 *    behind each other while claims that carry no limit for it never wait.
 *    Where the key lock has a statement form, the locks (and each grouped
 *    name's first read) are sent with the transaction's head
 *    (`headStatements`) and `begin` checks their results.
 * 2. the draws: a draw of one grouped name (`groupConcurrency`,
 *    `groupRateLimit`) is picked by that name's {@link GroupDraw} instead of
 *    the plain draw (fair rotation across groups, per-group limits).
 * 3. `end`: record each claimed row of a rate-limited name in
 *    `cairnq_ext_rate_claims` at a `now` read after its draw, with the
 *    `rateLimit` it was counted against in `cairnq_ext_rate_limits`, and
 *    delete that name's records outside the window.
 */
import type { ClaimInput, Task } from "@cairnq/protocol";
import { RATE_LIMIT_SCOPES } from "@cairnq/protocol";
import type { DrawPlanner, NormalizedClaim, NormalizedFlowControl } from "@cairnq/protocol/adapter";
import { claimFlowControl, FLOW_NAME, flowAllowance, flowLimitedDraws, flowLockKey, hasGroupLimits, RUNNING_OF_NAME, x } from "@cairnq/protocol/adapter";
import type { Params } from "@cairnq/protocol/adapter";
import type { StatementTemplate } from "./compiler.js";
import { paramsOfAll } from "./compiler.js";
import type { CompiledQuery, QueryResult } from "kysely";
import type { QueryRunner, Row } from "./executor.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUP_TABLES, RATE_CLAIMS_TABLE, RATE_LIMITS_TABLE } from "./extension-tables.js";
import type { ClaimEnd, GroupFirstPage, GroupFirstReads } from "./group-draw.js";
import { GroupDraw } from "./group-draw.js";
import type { GroupPrune } from "./group-prune.js";
import { markRequeued } from "./group-requeue.js";
import type { KeyLockStatement } from "./key-lock.js";
import { RateLimitWrites } from "./rate-limit-records.js";
import { rateWindowSql, RECORD_RATE_LIMIT } from "./rate-window-reads.js";
import { TASKS_TABLE } from "./statements.js";

const CAP = x.param("cap", "int");
const PER_MS = x.param("perMs", "int");
const TASK_IDS = x.param("taskIds", "textList");

/** Running rows of `:name`, counting at most `:cap` (the limit) of them over the partial lease index. */
const RUNNING_COUNT_TEMPLATE: StatementTemplate = {
  params: paramsOfAll([RUNNING_OF_NAME], [CAP]),
  clock: null,
  build: (c) => `SELECT count(*) AS n FROM (SELECT 1 AS one FROM ${TASKS_TABLE} WHERE ${c.condition(RUNNING_OF_NAME) ?? "TRUE"} LIMIT ${c.slot(CAP)}) AS q`,
};

/** Recorded claims of `:name` inside the window `(now − perMs, now]`. */
const WINDOW_COUNT_TEMPLATE: StatementTemplate = {
  params: [FLOW_NAME, PER_MS],
  clock: "statement",
  build: (c) => `SELECT count(*) AS n FROM ${RATE_CLAIMS_TABLE} WHERE name = ${c.slot(FLOW_NAME)} AND ${rateWindowSql(c, PER_MS)}`,
};

/** Records the claimed rows `:taskIds` of `:name` at `now` (read after the draw). */
const RECORD_TEMPLATE: StatementTemplate = {
  params: [FLOW_NAME, TASK_IDS],
  clock: "statement",
  build: (c, env) =>
    `INSERT INTO ${RATE_CLAIMS_TABLE} (name, claimed_at_ms, task_id) SELECT name, ${c.now()}, id FROM ${TASKS_TABLE} ` +
    `WHERE name = ${c.slot(FLOW_NAME)} AND ${c.condition(x.inList(x.col("id"), TASK_IDS)) ?? env.syntax.literal(false)}`,
};

/** Deletes the records of `:name` outside every window still to be checked (`claimed_at_ms ≤ now − perMs`). */
const PRUNE_TEMPLATE: StatementTemplate = {
  params: [FLOW_NAME, PER_MS],
  clock: "statement",
  build: (c) => `DELETE FROM ${RATE_CLAIMS_TABLE} WHERE name = ${c.slot(FLOW_NAME)} AND ${rateWindowSql(c, PER_MS, { outside: true })}`,
};

/** One claim cycle's flow control; see the module comment. */
export class FlowControlStep {
  readonly #limits: ReadonlyMap<string, NormalizedFlowControl>;
  readonly #ext: StoreExtensions;
  /** The group draw of each grouped name (one with `groupConcurrency` or `groupRateLimit`). */
  readonly #groups = new Map<string, GroupDraw>();
  /** The key locks sent with the head ({@link headStatements}), in sorted name order; `null`: taken in {@link begin}. */
  #headLocks: KeyLockStatement[] | null = null;
  /** The grouped names whose first read was sent with the head, in order after the locks, each with its first page when that was sent too. */
  #heads: { readonly name: string; readonly page: GroupFirstPage | null }[] = [];
  /** The first reads the head brought, by grouped name, until that name's first draw uses its own. */
  readonly #firstReads = new Map<string, GroupFirstReads>();
  /** The limit rows this claim writes (`rate-limit-records.ts`): noted as written once it commits ({@link committed}). */
  readonly #limitWrites: RateLimitWrites;

  private constructor(limits: ReadonlyMap<string, NormalizedFlowControl>, ext: StoreExtensions, settling: readonly string[], prune: GroupPrune | null) {
    this.#limits = limits;
    this.#ext = ext;
    this.#limitWrites = new RateLimitWrites(ext.rateLimits);
    for (const [name, l] of limits) {
      const groupLimits = { groupConcurrency: l.groupConcurrency ?? null, groupRateLimit: l.groupRateLimit ?? null };
      if (hasGroupLimits(l)) this.#groups.set(name, new GroupDraw(ext, name, groupLimits, settling, prune, this.#limitWrites));
    }
  }

  /** Whether some name of the claim is drawn by a group draw (`groupConcurrency` or `groupRateLimit`). */
  get drawsGroups(): boolean {
    return this.#groups.size > 0;
  }

  /** Whether {@link end} writes nothing (no name has `rateLimit`): a claim's last draw may then end the transaction ({@link ClaimEnd}). */
  get endsEmpty(): boolean {
    for (const limits of this.#limits.values()) if (limits.rateLimit !== null) return false;
    return true;
  }

  /**
   * The rows of a draw of one grouped name, picked by its group draw (`group-draw.ts`); `null` for any
   * other draw, which the claim runs as the plain draw. Call inside the transaction, after {@link begin}.
   * `end`: the transaction's end, offered when this draw is its last part (see {@link ClaimEnd}).
   */
  drawGroups(tx: QueryRunner, params: Params, end: ClaimEnd | null = null): Promise<Task[]> | null {
    const names = params.names as readonly string[] | null;
    const group = names?.length === 1 ? this.#groups.get(names[0] as string) : undefined;
    if (group === undefined) {
      // A plain draw may take tasks the head's first reads saw: the group draws after it read afresh.
      this.#firstReads.clear();
      return null;
    }
    const name = names?.[0] as string;
    // The first read of the name's first draw came with the head; a later draw of the name reads afresh.
    const read = this.#firstReads.get(name) ?? null;
    this.#firstReads.delete(name);
    return group.draw(tx, params, read, end);
  }

  /**
   * The statements the claim transaction sends with its head, right after lease recovery, built per
   * attempt: the key locks of every limited name in sorted order, when the dialect's key lock has a
   * statement form (`KeyLock.statement`), then each grouped name's first read (sweep and head,
   * `GroupDraw.firstRead`), which only depends on the claim's queues, and — for the grouped name the
   * claim's first draw (`firstDraw`, as the planner gave it before the transaction: its `names` and
   * `limit`) begins with — the first page of its groups (`GroupDraw.firstPage`). So on Postgres the
   * locks and those reads share the round trip of `BEGIN` and recovery. {@link begin} gets their results.
   */
  headStatements(claim: NormalizedClaim, firstDraw: Params | null = null): CompiledQuery<Row>[] {
    this.#heads = [];
    this.#headLocks = [];
    const keyLock = this.#ext.dialect.keyLock;
    for (const name of [...this.#limits.keys()].sort()) {
      const lock = keyLock.statement?.(flowLockKey(name)) ?? null;
      if (lock === null) {
        // Nothing to send for this lock: `begin` takes them all the usual way.
        this.#headLocks = null;
        break;
      }
      this.#headLocks.push(lock);
    }
    const queries: CompiledQuery<Row>[] = (this.#headLocks ?? []).map((lock) => lock.query);
    // The first draw's first part is its first name's when every one of its names is limited (flowLimitedDraws).
    const drawNames = (firstDraw?.names ?? null) as readonly string[] | null;
    const leading = drawNames !== null && drawNames.every((name) => this.#limits.has(name)) ? drawNames[0] : undefined;
    if (claim.queues.length > 0) {
      for (const [name, group] of this.#groups) {
        if (claim.names !== null && !claim.names.includes(name)) continue;
        const page = name === leading ? group.firstPage(claim.queues, firstDraw?.limit as number) : null;
        this.#heads.push({ name, page });
        queries.push(group.firstRead(claim.queues));
        if (page !== null) queries.push(page.query);
      }
    }
    return queries;
  }

  /**
   * The step for `input`, or `null` when it carries no limits. Validates `input.flowControl` (an `InvalidArgument` before anything runs).
   * `settling`: the fences of the store's settlements in flight (`SettlementsInFlight`), whose tasks the group draws do not count as running.
   * `prune`: the store's prune of idle group rows (`group-prune.ts`), which the group draws run when it is due.
   */
  static of(input: ClaimInput, ext: StoreExtensions, settling: readonly string[] = [], prune: GroupPrune | null = null): FlowControlStep | null {
    const limits = claimFlowControl(input);
    return limits === null ? null : new FlowControlStep(limits, ext, settling, prune);
  }

  /** Outside the transaction: creates the tables the claim's limits use on first use (rate claims, group tables, recorded rate limits). */
  async prepare(): Promise<void> {
    if (this.#groups.size > 0) await this.#ext.ensure(GROUP_TABLES);
    const limits = [...this.#limits.values()];
    if (limits.some((l) => l.rateLimit !== null)) await this.#ext.ensure(RATE_CLAIMS_TABLE);
    if (limits.some((l) => l.rateLimit !== null || (l.groupRateLimit ?? null) !== null)) await this.#ext.ensure(RATE_LIMITS_TABLE);
  }

  /**
   * Locks, counts and wraps `draws`; call after lease recovery, before the first draw. `recovered`: the
   * rows lease recovery changed (`id`, `status`) when the claim draws groups: the group rows of those it
   * requeued are marked (`group-requeue.ts`), and the group draws then read afresh.
   */
  async begin(tx: QueryRunner, draws: DrawPlanner, headResults: readonly QueryResult<Row>[] = [], recovered: readonly Row[] | null = null): Promise<DrawPlanner> {
    const allowance = new Map<string, number>();
    const names = [...this.#limits.keys()].sort();
    // The locks sent with the head: a lock taken elsewhere throws here, before any result read after it is used.
    const locks = this.#headLocks;
    if (locks === null) for (const name of names) await this.#ext.dialect.keyLock.acquire(tx, flowLockKey(name));
    else locks.forEach((lock, i) => lock.check(headResults[i]));
    this.#firstReads.clear();
    let at = locks?.length ?? 0;
    for (const { name, page } of this.#heads) {
      const head = headResults[at++]?.rows ?? [];
      const pageRows = page === null ? null : (headResults[at++]?.rows ?? []);
      this.#firstReads.set(name, { head, page: page === null || pageRows === null ? null : { rows: pageRows, pageSize: page.pageSize, perGroup: page.perGroup } });
    }
    const requeued = (recovered ?? []).filter((row) => row.status === "queued").map((row) => String(row.id));
    if (requeued.length > 0) {
      // Rare (a lease ran out): the head's first reads do not show the marks, so the group draws read afresh.
      await markRequeued(this.#ext, requeued, tx);
      this.#firstReads.clear();
    }
    for (const name of names) {
      const limits = this.#limits.get(name) as NormalizedFlowControl;
      let running = 0;
      let inWindow = 0;
      if (limits.globalConcurrency !== null) {
        running = Number((await this.#ext.exec(tx, RUNNING_COUNT_TEMPLATE, { name, cap: limits.globalConcurrency })).rows[0]?.n ?? 0);
      }
      if (limits.rateLimit !== null) {
        inWindow = Number((await this.#ext.exec(tx, WINDOW_COUNT_TEMPLATE, { name, perMs: limits.rateLimit.perMs })).rows[0]?.n ?? 0);
      }
      allowance.set(name, flowAllowance(limits, running, inWindow));
    }
    return flowLimitedDraws(draws, allowance);
  }

  /**
   * Records the cycle's claims of rate-limited names with the limit they were counted against (for `explain`:
   * `rate-window-reads.ts`) and prunes their old records, in one batch; call after the last draw.
   */
  async end(tx: QueryRunner, claimed: readonly Task[]): Promise<void> {
    const writes: CompiledQuery<Row>[] = [];
    const query = (template: StatementTemplate, params: Params): CompiledQuery<Row> => this.#ext.statements.compiler.statement(template, params).query(params);
    // In sorted name order, as the flow locks are taken: two claims' row locks come in one order.
    for (const name of [...this.#limits.keys()].sort()) {
      const rateLimit = (this.#limits.get(name) as NormalizedFlowControl).rateLimit;
      if (rateLimit === null) continue;
      const taskIds = claimed.filter((row) => row.name === name).map((row) => row.id);
      // The limit's row only when this store has not written it lately (`rate-limit-records.ts`).
      const limitRow = taskIds.length > 0 ? this.#limitWrites.plan(name, RATE_LIMIT_SCOPES.name, rateLimit) : [];
      if (taskIds.length > 0) writes.push(query(RECORD_TEMPLATE, { name, taskIds }), ...limitRow.map((p) => query(RECORD_RATE_LIMIT, p)));
      writes.push(query(PRUNE_TEMPLATE, { name, perMs: rateLimit.perMs }));
    }
    if (writes.length > 0) await this.#ext.dialect.executor.batch(tx, writes);
  }
  /** The claim's transaction committed: the limit rows it wrote are noted (`rate-limit-records.ts`). */
  committed(): void {
    this.#limitWrites.committed();
  }

}
