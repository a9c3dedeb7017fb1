/**
 * The rate-window reads (`FlowReadStore.rateWindow` and
 * `TaskGroupInfo.groupRateWindow` in `@cairnq/protocol` `rate-windows.ts`) —
 * what `explain` shows of a full `rateLimit` or `groupRateLimit` window — and
 * the one write they depend on.
 *
 * Terminology:
 * - **scope**: which limit of a name a `cairnq_ext_rate_limits` row holds:
 *   `name` (its `rateLimit`) or `group` (its `groupRateLimit`, the same for
 *   every group of the name).
 * - **recorded limit**: the row's `max_claims` and `per_ms`, upserted by every
 *   claim that records claims under that limit ({@link RECORD_RATE_LIMIT}, in
 *   the statements that record them: `flow-control-step.ts`, `group-draw.ts`),
 *   inside the claim transaction under the name's flow lock, so it is the
 *   limit the window's last claim was counted against.
 *
 * A read is the row, then the window's count and its `max`-th newest claim in
 * one statement over the claims index (`(name[, group_key], claimed_at_ms)`),
 * on the store's clock. Reads create nothing: without the table (no claim with
 * a rate limit since the store that writes it) they answer `null`, as for a
 * name no claim limited, after a catalog read that stops once it found it.
 */
import type { RateWindow } from "@cairnq/protocol";
import { rateWindowOf, requireLimitedText, x } from "@cairnq/protocol/adapter";
import type { RateLimit } from "@cairnq/protocol";
import type { StatementTemplate } from "./compiler.js";
import type { StoreExtensions } from "./extension-tables.js";
import { GROUP_RATE_CLAIMS_TABLE, RATE_CLAIMS_TABLE, RATE_LIMITS_TABLE } from "./extension-tables.js";

/** The scopes of `cairnq_ext_rate_limits` rows (see the module comment). */
export const RATE_LIMIT_SCOPES = Object.freeze({ name: "name", group: "group" } as const);

/** One of {@link RATE_LIMIT_SCOPES}. */
export type RateLimitScope = (typeof RATE_LIMIT_SCOPES)[keyof typeof RATE_LIMIT_SCOPES];

const NAME = x.param("name", "text");
const SCOPE = x.param("scope", "text");
const MAX = x.param("max", "int");
const PER_MS = x.param("perMs", "int");
const GROUP = x.param("group", "text");
const SKIP = x.param("skip", "int");

/** Records `:max` claims per `:perMs` as the limit of `:name` in `:scope` (see the module comment). */
export const RECORD_RATE_LIMIT: StatementTemplate = {
  params: [NAME, SCOPE, MAX, PER_MS],
  clock: null,
  build: (c) =>
    `INSERT INTO ${RATE_LIMITS_TABLE} (name, scope, max_claims, per_ms) VALUES (${c.slot(NAME)}, ${c.slot(SCOPE)}, ${c.slot(MAX)}, ${c.slot(PER_MS)}) ` +
    `ON CONFLICT (name, scope) DO UPDATE SET max_claims = excluded.max_claims, per_ms = excluded.per_ms`,
};

/** The parameters of {@link RECORD_RATE_LIMIT} for `limit`. */
export function rateLimitParams(name: string, scope: RateLimitScope, limit: RateLimit): { name: string; scope: string; max: number; perMs: number } {
  return { name, scope, max: limit.max, perMs: limit.perMs };
}

const LIMIT_OF: StatementTemplate = {
  params: [NAME, SCOPE],
  clock: null,
  build: (c) => `SELECT max_claims, per_ms FROM ${RATE_LIMITS_TABLE} WHERE name = ${c.slot(NAME)} AND scope = ${c.slot(SCOPE)}`,
};

/** The claims of `:name` (of `:group` in the group table) in the window `(now − :perMs, now]`: their count and the one `:skip` places below the newest. */
function windowRead(table: string, grouped: boolean): StatementTemplate {
  return {
    params: grouped ? [NAME, GROUP, PER_MS, SKIP] : [NAME, PER_MS, SKIP],
    clock: "statement",
    build: (c) => {
      const where = `name = ${c.slot(NAME)}${grouped ? ` AND group_key = ${c.slot(GROUP)}` : ""} AND claimed_at_ms > ${c.now()} - ${c.slot(PER_MS)}`;
      return (
        `SELECT (SELECT count(*) FROM ${table} WHERE ${where}) AS n, ` +
        `(SELECT claimed_at_ms FROM ${table} WHERE ${where} ORDER BY claimed_at_ms DESC LIMIT 1 OFFSET ${c.slot(SKIP)}) AS nth`
      );
    },
  };
}

const NAME_WINDOW = windowRead(RATE_CLAIMS_TABLE, false);
const GROUP_WINDOW = windowRead(GROUP_RATE_CLAIMS_TABLE, true);

/** The rate-window reads of one store. */
export class RateWindowReads {
  readonly #ext: StoreExtensions;
  /** Whether `cairnq_ext_rate_limits` exists: once this store created or found it, without a read. */
  #tableFound = false;

  constructor(ext: StoreExtensions) {
    this.#ext = ext;
  }

  /** See `FlowReadStore.rateWindow`. */
  nameWindow(name: string): Promise<RateWindow | null> {
    return this.#window(RATE_LIMIT_SCOPES.name, requireLimitedText(name, "name"), null);
  }

  /** The window of group `group` of `name` under the name's recorded `groupRateLimit` (`TaskGroupInfo.groupRateWindow`). */
  groupWindow(name: string, group: string): Promise<RateWindow | null> {
    return this.#window(RATE_LIMIT_SCOPES.group, name, group);
  }

  /** Whether the table exists, from the catalog (as `GroupReads` checks its tables), cached once true; `null`: the catalog could not say. */
  async #tableExists(): Promise<boolean | null> {
    if (this.#tableFound || this.#ext.isReady(RATE_LIMITS_TABLE)) return (this.#tableFound = true);
    try {
      this.#tableFound = (await this.#ext.catalogNames([RATE_LIMITS_TABLE])).has(RATE_LIMITS_TABLE);
    } catch {
      return null;
    }
    return this.#tableFound;
  }

  async #window(scope: RateLimitScope, name: string, group: string | null): Promise<RateWindow | null> {
    const exists = await this.#tableExists();
    if (exists === false) return null;
    let row;
    try {
      row = (await this.#ext.statements.read(LIMIT_OF, { name, scope })).rows[0];
    } catch (err) {
      if (exists === null && this.#ext.dialect.missingTable?.(err) === true) return null;
      throw err;
    }
    if (row === undefined) return null;
    const limit = { max: Number(row.max_claims), perMs: Number(row.per_ms) };
    const params = { name, perMs: limit.perMs, skip: limit.max - 1 };
    const read = group === null ? this.#ext.statements.read(NAME_WINDOW, params) : this.#ext.statements.read(GROUP_WINDOW, { ...params, group });
    const counts = (await read).rows[0];
    const nth = counts?.nth;
    return rateWindowOf(limit, Number(counts?.n ?? 0), nth === null || nth === undefined ? null : Number(nth));
  }
}
