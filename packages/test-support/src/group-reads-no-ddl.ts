/**
 * The group reads (`taskGroup`, what `explain` shows; `groupStats`, what
 * `stats --by-group` shows) and the flow read (`rateWindows`, what `explain`
 * shows of rate windows) on a database without the group tables or
 * `cairnq_ext_rate_limits`: they answer as for empty tables and create
 * nothing — only a grouped submit or a grouped claim creates the group
 * tables, only a rate-limited claim the rate-limits table (docs/protocol.md,
 * extension tables). Once
 * another store created them, the same reading store sees the rows. Shared by
 * the integration tests of store-sqlite, store-postgres and store-mysql.
 */
import type { FlowReadStore, GroupReadStore, RateWindows, TaskStore } from "@cairnq/protocol";

/** The three group tables, which the reads must not create. */
export const GROUP_TABLE_NAMES = ["cairnq_ext_groups", "cairnq_ext_task_groups", "cairnq_ext_group_rate_claims"] as const;

/** The table of recorded rate limits, which the flow read must not create. */
export const RATE_LIMITS_TABLE_NAME = "cairnq_ext_rate_limits";

/** The tables a test's `tables()` lists: the group tables and the rate-limits table (none of which the reads create). */
export const READ_TABLE_NAMES = [...GROUP_TABLE_NAMES, RATE_LIMITS_TABLE_NAME] as const;

/** What the reads answered, and which of {@link READ_TABLE_NAMES} existed after each step. */
export interface GroupReadsReport {
  /** `taskGroup` and `groupStats` of an ungrouped task, before any group table exists. */
  readonly before: { readonly taskGroup: unknown; readonly groupStats: unknown; readonly rateWindows: RateWindows; readonly tables: string[] };
  /** The same reading store after `writer` submitted a grouped task. */
  readonly after: { readonly taskGroup: unknown; readonly groupStats: unknown; readonly rateWindows: RateWindows; readonly tables: string[] };
}

/**
 * Runs the reads on `reader` (connected to a database without group tables),
 * then a grouped submit on `writer` (another store on the same database),
 * then the reads again on `reader`; `tables()` lists which of
 * {@link READ_TABLE_NAMES} exist.
 *
 * @example
 * const report = await runGroupReadsWithoutTables(reader, writer, () => groupTablesIn(db));
 * expect(report.before.tables).toEqual([]);
 */
export async function runGroupReadsWithoutTables(
  reader: TaskStore & GroupReadStore & FlowReadStore,
  writer: TaskStore,
  tables: () => Promise<string[]>,
): Promise<GroupReadsReport> {
  const plain = await reader.submit({ name: "plain" });
  const before = {
    taskGroup: await reader.taskGroup(plain.id),
    groupStats: await reader.groupStats("plain"),
    rateWindows: await reader.rateWindows("plain", null),
    tables: (await tables()).sort(),
  };
  const grouped = await writer.submit({ name: "plain", group: "g1" });
  const after = {
    taskGroup: await reader.taskGroup(grouped.id),
    groupStats: await reader.groupStats("plain"),
    rateWindows: await reader.rateWindows("plain", "g1"),
    tables: (await tables()).sort(),
  };
  return { before, after };
}
