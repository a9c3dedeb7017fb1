/**
 * The rate-window read (`FlowReadStore.rateWindows` in `@cairnq/protocol`
 * `rate-windows.ts`) — what `explain` shows of a full `rateLimit` or
 * `groupRateLimit` window — and the one write it depends on.
 *
 * Terminology (scopes as `RATE_LIMIT_SCOPES` in `rate-windows.ts`):
 * - **recorded limit**: the row's `max_claims` and `per_ms`: a limit a claim
 *   of this name enforced last (by up to a minute, one another store enforced
 *   before it; a claim without the limit writes nothing). A claim that records
 *   claims under a limit upserts it ({@link RECORD_RATE_LIMIT}, in the
 *   statements that record them: `flow-control-step.ts`, `group-draw.ts`,
 *   inside the claim transaction under the name's flow lock) only when its
 *   store's committed claims have not written that limit in the last
 *   `RATE_LIMIT_REFRESH_MS` (60 s; `rateLimitRowDue`, `rate-limit-records.ts`), not on every
 *   claim: so with two limits in use at once the row may show either, and a
 *   changed limit shows from the first claim under it of each store. All
 *   workers of a name must declare the same limits (as `explain` assumes).
 *
 * A read is the name's rows (both scopes, one statement), then each window
 * asked for: its count, its `max`-th newest claim and the store's clock in one
 * statement over the claims index (`(name[, group_key], claimed_at_ms)`). Reads
 * create nothing: without the table (no claim with a rate limit since the store
 * that writes it) they answer `null` windows, as for a name no claim limited,
 * after a catalog read that stops once it found it.
 */
import type { RateLimit, RateWindow, RateWindows } from "@cairnq/protocol";
import { RATE_LIMIT_SCOPES } from "@cairnq/protocol";
import type { ParamExpr } from "@cairnq/protocol/adapter";
import { FLOW_NAME, rateWindowOf, requireLimitedText, requireName, x } from "@cairnq/protocol/adapter";
import type { ExprCompiler, StatementTemplate } from "./compiler.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUP_RATE_CLAIMS_TABLE, RATE_CLAIMS_TABLE, RATE_LIMITS_TABLE } from "./extension-tables.js";

const SCOPE = x.param("scope", "text");
const MAX = x.param("max", "int");
const PER_MS = x.param("perMs", "int");
const GROUP = x.param("group", "text");
const SKIP = x.param("skip", "int");

/** Records `:max` claims per `:perMs` as the limit of `:name` in `:scope` (see the module comment). */
export const RECORD_RATE_LIMIT: StatementTemplate = {
  params: [FLOW_NAME, SCOPE, MAX, PER_MS],
  clock: null,
  build: (c) =>
    `INSERT INTO ${RATE_LIMITS_TABLE} (name, scope, max_claims, per_ms) VALUES (${c.slot(FLOW_NAME)}, ${c.slot(SCOPE)}, ${c.slot(MAX)}, ${c.slot(PER_MS)}) ` +
    `ON CONFLICT (name, scope) DO UPDATE SET max_claims = excluded.max_claims, per_ms = excluded.per_ms`,
};

/**
 * A recorded claim is in its rate window, as SQL on the statement's clock: `claimed_at_ms > now − :perMs`
 * (protocol `inRateWindow`). Every statement that counts a window (the claim's checks, the group page, the
 * reads for `explain`) writes it with this; `outside` gives the complement, what a prune deletes.
 * @param column - The `claimed_at_ms` column, qualified where the statement needs it.
 */
export function rateWindowSql(c: ExprCompiler, perMs: ParamExpr, { column = "claimed_at_ms", outside = false } = {}): string {
  return `${column} ${outside ? "<=" : ">"} ${c.now()} - ${c.slot(perMs)}`;
}

const LIMITS_OF: StatementTemplate = {
  params: [FLOW_NAME],
  clock: null,
  build: (c) => `SELECT scope, max_claims, per_ms FROM ${RATE_LIMITS_TABLE} WHERE name = ${c.slot(FLOW_NAME)}`,
};

/**
 * The claims of `:name` (of `:group` in the group table) in the window `(now − :perMs, now]`: their count, the one
 * `:skip` places below the newest, and `now` itself (the store's clock the window was counted at).
 */
function windowRead(table: string, grouped: boolean): StatementTemplate {
  return {
    params: grouped ? [FLOW_NAME, GROUP, PER_MS, SKIP] : [FLOW_NAME, PER_MS, SKIP],
    clock: "statement",
    build: (c) => {
      const where = `name = ${c.slot(FLOW_NAME)}${grouped ? ` AND group_key = ${c.slot(GROUP)}` : ""} AND ${rateWindowSql(c, PER_MS)}`;
      return (
        `SELECT (SELECT count(*) FROM ${table} WHERE ${where}) AS n, ` +
        `(SELECT claimed_at_ms FROM ${table} WHERE ${where} ORDER BY claimed_at_ms DESC LIMIT 1 OFFSET ${c.slot(SKIP)}) AS nth, ` +
        `${c.now()} AS now_ms`
      );
    },
  };
}

const NAME_WINDOW = windowRead(RATE_CLAIMS_TABLE, false);
const GROUP_WINDOW = windowRead(GROUP_RATE_CLAIMS_TABLE, true);

const NO_WINDOWS: RateWindows = Object.freeze({ name: null, group: null });

/** The rate-window read of one store. */
export class RateWindowReads {
  readonly #ext: StoreExtensions;

  constructor(ext: StoreExtensions) {
    this.#ext = ext;
  }

  /** See `FlowReadStore.rateWindows`. */
  rateWindows(name: string, group: string | null): Promise<RateWindows> {
    const checked = requireLimitedText(name, "name");
    const groupKey = group === null ? null : requireName(group, "group");
    return this.#ext.whenTables(RATE_LIMITS_TABLE, [RATE_LIMITS_TABLE], NO_WINDOWS, () => this.#read(checked, groupKey));
  }

  async #read(name: string, group: string | null): Promise<RateWindows> {
    const limits = new Map<string, RateLimit>();
    for (const row of (await this.#ext.statements.read(LIMITS_OF, { name })).rows) {
      limits.set(String(row.scope), { max: Number(row.max_claims), perMs: Number(row.per_ms) });
    }
    const nameLimit = limits.get(RATE_LIMIT_SCOPES.name);
    const groupLimit = group === null ? undefined : limits.get(RATE_LIMIT_SCOPES.group);
    return {
      name: nameLimit === undefined ? null : await this.#window(NAME_WINDOW, nameLimit, { name }),
      group: groupLimit === undefined ? null : await this.#window(GROUP_WINDOW, groupLimit, { name, group }),
    };
  }

  async #window(template: StatementTemplate, limit: RateLimit, params: Record<string, unknown>): Promise<RateWindow> {
    const row = (await this.#ext.statements.read(template, { ...params, perMs: limit.perMs, skip: limit.max - 1 })).rows[0];
    const nth = row?.nth;
    return rateWindowOf(limit, Number(row?.n ?? 0), nth === null || nth === undefined ? null : Number(nth), Number(row?.now_ms));
  }
}
