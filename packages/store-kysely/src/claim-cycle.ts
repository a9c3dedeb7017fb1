import type { ClaimInput, Task } from "@cairnq/protocol";
import type { DrawPlanner, NormalizedClaim, Params } from "@cairnq/protocol/adapter";
import { answerReprobe, DRAW, drawParams, normalizeClaim, probeParams, RECOVER } from "@cairnq/protocol/adapter";
import type { QueryResult } from "kysely";
import { CompiledQuery } from "kysely";
import { rowsPerWrite } from "./capabilities.js";
import type { CompiledStatement } from "./compiler.js";
import type { QueryRunner, Row, TransactionHead } from "./executor.js";
import type { TakenWrites } from "./write-batching.js";
import type { StoreExtensions } from "./extension-tables.js";
import { FlowControlStep } from "./flow-control-step.js";
import type { ClaimEnd } from "./group-draw.js";
import { GroupPrune } from "./group-prune.js";
import { decodeTask } from "./rows.js";
import { PROBE_TEMPLATE, setTransitionTemplate } from "./statements.js";
import type { SettlementsInFlight } from "./settlements-in-flight.js";
import type { StoreLifecycle } from "./store-lifecycle.js";
import type { StoreStatements } from "./store-statements.js";

const RECOVER_TEMPLATE = setTransitionTemplate(RECOVER, ["id"]);
/** Recovery in a claim that draws groups: the recovered rows' statuses say which went back to `queued` (their group rows are marked). */
const RECOVER_STATUS_TEMPLATE = setTransitionTemplate(RECOVER, ["id", "status"]);
/** The transaction's first statement when recovery's own result is needed (an executor may send the first with `BEGIN` and drop its result). */
const NOTHING = CompiledQuery.raw("SELECT 1");
const DRAW_TEMPLATE = setTransitionTemplate(DRAW, "task");

/**
 * The claim cycle (§5.10): a read-only probe outside any transaction (an idle
 * worker never takes the write lock; skipped with `probe: false`), then ONE
 * write transaction — lease recovery over the whole table, then the draw
 * planner's draws until it returns `null` (with flow control, inside its
 * locks and allowances); with `reprobe`, the probe once more as the
 * transaction's last statement, its answer reported after the commit.
 *
 * The transaction always goes through the executor's `writeTransactionWith`,
 * whose default is right on any backend; Postgres sends the head in one
 * round trip, SQLite runs it straight on its writer.
 */
export class ClaimCycle {
  readonly #statements: StoreStatements;
  readonly #lifecycle: StoreLifecycle;
  readonly #extensions: StoreExtensions;
  readonly #inFlight: SettlementsInFlight | null;
  /** When this store last pruned each grouped name's idle group rows (`group-prune.ts`): one per store, as the store's claims share it. */
  readonly #groupPrune: GroupPrune;

  /**
   * @param statements - The store's statements.
   * @param lifecycle - The store's gate for calls.
   * @param extensions - The extension tables flow control uses.
   * @param inFlight - The store's settlements in flight, whose tasks a group draw does not count as running; `null` where claims see them anyway.
   */
  constructor(statements: StoreStatements, lifecycle: StoreLifecycle, extensions: StoreExtensions, inFlight: SettlementsInFlight | null = null) {
    this.#statements = statements;
    this.#lifecycle = lifecycle;
    this.#extensions = extensions;
    this.#inFlight = inFlight;
    this.#groupPrune = new GroupPrune(extensions);
  }

  /** One claim cycle; see the class comment. `async`: an invalid input rejects before anything runs. */
  async claim(input: ClaimInput): Promise<Task[]> {
    const claim = normalizeClaim(input);
    // The settlements in flight as the claim begins: a group draw does not count their tasks as running.
    const flow = FlowControlStep.of(input, this.#extensions, this.#inFlight?.fences() ?? [], this.#groupPrune);
    if (flow?.drawsGroups === true) this.#inFlight?.follow();
    const probed = probeParams(claim);
    return this.#lifecycle.run(async () => {
      if (claim.probe) {
        const probe = (await this.#statements.read(PROBE_TEMPLATE, probed)).rows[0];
        if (!truthy(probe?.found)) {
          answerReprobe(claim, false);
          return [];
        }
      }
      await flow?.prepare();
      const transaction = new ClaimTransaction(this.#statements, claim, probed, flow);
      const { db, dialect } = this.#statements;
      if (flow !== null || dialect.writes.takeSettlements === undefined) {
        const claimed = await dialect.executor.writeTransactionWith(db, transaction.head, transaction.body);
        flow?.committed();
        answerReprobe(claim, transaction.claimable);
        return claimed;
      }
      return this.#claimCarrying(claim, transaction);
    });
  }

  /**
   * The claim's transaction carrying the settlements waiting in the dialect's write batching
   * (`WriteBatching.takeSettlements`, taken when the transaction first runs): their statements
   * after lease recovery, before the draws; their callers settled once it committed (or, when it
   * failed, written again on their own or given its error). Not with flow control, whose draws
   * read what the transaction's settlements would change under its plan.
   */
  async #claimCarrying(claim: NormalizedClaim, transaction: ClaimTransaction): Promise<Task[]> {
    const { db, dialect } = this.#statements;
    let taken: TakenWrites | null | undefined;
    let carrying = 0;
    let carried: readonly QueryResult<Row>[] | null = null;
    const settle = (): void => {
      if (taken === null || taken === undefined || carried === null) return;
      const results = carried;
      carried = null;
      const settling = taken;
      taken = null;
      settling.settle(results);
    };
    const head = (): TransactionHead => {
      const own = transaction.head();
      if (taken === undefined) taken = dialect.writes.takeSettlements?.() ?? null;
      if (taken === null) return own;
      const settlements = taken.queries();
      carrying = settlements.length;
      return { ...own, statements: [...settlements, ...own.statements] };
    };
    const body = (tx: QueryRunner | null, results: readonly QueryResult<Row>[]): Promise<Task[]> => {
      carried = results.slice(0, carrying);
      // Committed with the head (no transaction left open): the settlements are written; their callers hear it now.
      if (tx === null) settle();
      return transaction.body(tx, results.slice(carrying));
    };
    let claimed: Task[];
    try {
      claimed = await dialect.executor.writeTransactionWith(db, head, body);
    } catch (error) {
      // Not committed (a failure after the commit left `taken` null): nothing of the settlements was applied, or the outcome is unknown.
      if (taken === null || taken === undefined || !taken.fail(error)) throw error;
      // Rejected whole with settlements aboard, which now go again on their own: the claim runs once more
      // without them, so a settlement the database refuses (a value too large for MySQL's
      // max_allowed_packet, a data error) fails its own caller, not the claim (and a worker's claim loop).
      taken = null;
      claimed = await dialect.executor.writeTransactionWith(db, transaction.head, transaction.body);
      answerReprobe(claim, transaction.claimable);
      return claimed;
    }
    settle();
    answerReprobe(claim, transaction.claimable);
    return claimed;
  }
}

/** A draw the planner asked for that can match a row: its index and parameters. */
interface PlannedDraw {
  readonly index: number;
  readonly params: Params;
  readonly last: boolean;
}

/** One claim cycle's write transaction: its head, its body, and what the probe again answered. */
class ClaimTransaction {
  /** The probe again's answer (whether anything was left to claim); false when not asked for. */
  claimable = false;
  readonly #statements: StoreStatements;
  readonly #claim: NormalizedClaim;
  /** The most rows one draw takes: the dialect's `maxRowsPerWrite`. */
  readonly #most: number;
  readonly #flow: FlowControlStep | null;
  readonly #recover: CompiledStatement;
  /** The probe run again as the last statement, when asked for: it sees the draws' rows as running, so it answers whether anything was left. */
  readonly #again: CompiledStatement | null;
  readonly #probed: Params;
  /** The index the planner continues from after the head's draw; `null` when the head holds none. */
  #next: number | null = null;

  constructor(statements: StoreStatements, claim: NormalizedClaim, probed: Params, flow: FlowControlStep | null) {
    this.#statements = statements;
    this.#claim = claim;
    this.#most = rowsPerWrite(statements.dialect.capabilities);
    this.#flow = flow;
    this.#probed = probed;
    this.#recover = statements.compiler.statement(RECOVER_TEMPLATE, {});
    this.#again = claim.reprobe === null ? null : statements.compiler.statement(PROBE_TEMPLATE, probed);
  }

  /**
   * The head, built once per attempt (from draw 0, as a planner expects of a replayed transaction).
   * Lease recovery is always first, before any draw (in a claim that draws groups, after a `SELECT 1`
   * that stands for the first statement: its result, the rows it requeued, is read). With flow control the draws depend on what the
   * transaction reads (locks, counts), so the head is recovery, then the flow-control statements that
   * depend on nothing read (the key locks and the group draws' first reads: `FlowControlStep.headStatements`). Without, the first draw depends
   * on nothing the transaction reads, so it is planned here and goes with BEGIN and recovery (one
   * round trip on Postgres); when the planner says no draw follows it (`last`), the head is the whole
   * transaction, the probe again (if asked for) its last statement, and COMMIT goes with it too.
   */
  readonly head = (): TransactionHead => {
    const first = this.#recover.query({});
    if (this.#flow !== null) {
      // The first draw as planned now (the body plans it again): what the head's group reads are sized for.
      const planned = nextDraw(this.#claim, this.#claim.draws, [], 0, this.#most);
      const statements = this.#flow.headStatements(this.#claim, planned?.params ?? null);
      if (!this.#flow.drawsGroups) return { first, statements, last: false };
      // A claim that draws groups reads what recovery requeued (their group rows are marked: `group-requeue.ts`), so recovery is not first.
      const recover = this.#statements.compiler.statement(RECOVER_STATUS_TEMPLATE, {}).query({});
      return { first: NOTHING, statements: [recover, ...statements], last: false };
    }
    const found = nextDraw(this.#claim, this.#claim.draws, [], 0, this.#most);
    this.#next = found === null ? null : found.index + 1;
    const tail = this.#again === null ? [] : [this.#probeAgain()];
    if (found === null) return { first, statements: tail, last: true, plainDraws: true };
    const drawn = this.#statements.compiler.statement(DRAW_TEMPLATE, found.params).query(found.params);
    return found.last ? { first, statements: [drawn, ...tail], last: true, plainDraws: true } : { first, statements: [drawn], last: false, plainDraws: true };
  };

  /** After the head: the rest of the draws in the open transaction, or — committed with the head — its rows. */
  readonly body = async (tx: QueryRunner | null, results: readonly QueryResult<Row>[]): Promise<Task[]> => {
    if (this.#flow !== null) {
      if (tx === null) throw new Error("the executor committed a claim transaction whose head was not its last part");
      const recovered = this.#flow.drawsGroups ? (results[0]?.rows ?? []) : null;
      const draws = await this.#flow.begin(tx, this.#claim.draws, recovered === null ? results : results.slice(1), recovered);
      const claimed = await this.#drawFrom(tx, draws, [], 0);
      await this.#flow.end(tx, claimed);
      return claimed;
    }
    // Committed with the head: the planner promised no further draw, and the probe again (if any) is its last result.
    if (tx === null && this.#again !== null) this.claimable = truthy(results[results.length - 1]?.rows[0]?.found);
    if (this.#next === null) return [];
    const drawn = (results[0]?.rows ?? []).map(decodeTask);
    if (tx === null) return drawn;
    return this.#drawFrom(tx, this.#claim.draws, drawn, this.#next);
  };

  /** The planner's draws from `start` on, appended to `claimed`, until it returns `null`; then the probe again, if asked for. */
  async #drawFrom(tx: QueryRunner, draws: DrawPlanner, claimed: Task[], start: number): Promise<Task[]> {
    for (let found = nextDraw(this.#claim, draws, claimed, start, this.#most); found !== null; found = nextDraw(this.#claim, draws, claimed, found.index + 1, this.#most)) {
      // The last draw may end the transaction when nothing else follows it (the flow step's end writes nothing).
      const end: ClaimEnd | null = found.last && this.#flow?.endsEmpty === true ? { tail: this.#again === null ? [] : [this.#probeAgain()], results: null } : null;
      const grouped = this.#flow?.drawGroups(tx, found.params, end) ?? null;
      if (grouped !== null) claimed.push(...(await grouped));
      else for (const row of (await this.#statements.exec(tx, DRAW_TEMPLATE, found.params)).rows) claimed.push(decodeTask(row));
      if (end !== null && end.results !== null) {
        // The draw's batch ran the tail and ended the transaction: nothing more runs on it.
        if (this.#again !== null) this.claimable = truthy(end.results[0]?.rows[0]?.found);
        return claimed;
      }
    }
    if (this.#again !== null) this.claimable = truthy((await tx.executeQuery(this.#probeAgain())).rows[0]?.found);
    return claimed;
  }

  #probeAgain(): CompiledQuery<Row> {
    return (this.#again as CompiledStatement).query(this.#probed);
  }
}

/**
 * The planner's first draw from `start` on that can match a row, or `null` once the planner ends. Its limit is held
 * to `most`, the dialect's `maxRowsPerWrite` (a draw is one write that returns its rows, and on MySQL its ids travel
 * in a session variable: see the capability): a claim asking for more comes back with fewer rows, as one with fewer
 * tasks due does.
 */
function nextDraw(claim: NormalizedClaim, draws: DrawPlanner, claimed: readonly Task[], start: number, most: number): PlannedDraw | null {
  for (let index = start; ; index += 1) {
    const draw = draws(claimed, index);
    if (draw === null) return null;
    const params = drawParams(claim, draw.names, Math.min(draw.limit, most));
    if (params !== null) return { index, params, last: draw.last === true };
  }
}

function truthy(value: unknown): boolean {
  return value === true || value === 1 || value === "1" || value === "t" || value === 1n;
}
