// Turns the measurements into the table: each of our figures next to its
// matching raw floor, the ratio, and the target it is judged against.
import { DRAIN_PREFETCH, DRAIN_PREFETCH_C64 } from "./ours.mjs";
import { POOLER_POOL_SIZE } from "./pooler.mjs";
import { summarize } from "./stats.mjs";

const int = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const fixed = (digits) => new Intl.NumberFormat("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

const UNITS = {
  rate: { fmt: (v) => `${int.format(v)}/s` },
  ms: { fmt: (v) => `${fixed(v < 10 ? 2 : 1).format(v)} ms` },
  mb: { fmt: (v) => `${fixed(1).format(v)} MB` },
  us: { fmt: (v) => `${fixed(1).format(v)} µs` },
  count: { fmt: (v) => int.format(v) },
};

/**
 * The figures, in table order. `floor` names the matching raw floor of the
 * backend on the protocol v1 schema — the floor the targets are ratios to —
 * (or, for the claim rows, the 1k-backlog figure they are compared with);
 * `minimal` the same work's floor on the minimal floor table (the suite's
 * first floors, kept so the schema's own cost stays visible); `target[backend]`
 * is the figure's target: `{ kind: "ratio≥", value }` for ratios to the floor,
 * `{ kind: "≤", value, unit }` for absolute limits, `{ kind: "ratio≤", value }`
 * for the backlog ratio. `label` may be a function of the run's settings.
 * `pairedRatio` names samples of per-pair ratios (each measured against its
 * own floor, back to back): the row's ratio is then their median, not the
 * ratio of the two medians.
 */
export const FIGURES = [
  {
    id: "submit.c1",
    label: "submit c1",
    unit: "rate",
    floor: { sqlite: "proto.insert.tx1", postgres: "proto.insert.stmt1.c1" },
    minimal: { sqlite: "insert.tx1", postgres: "insert.stmt1.c1" },
    target: { sqlite: { kind: "ratio≥", value: 0.7 }, postgres: { kind: "ratio≥", value: 0.8 } },
  },
  {
    id: "submit.c64",
    label: "submit c64",
    unit: "rate",
    floor: { sqlite: "proto.insert.tx64", postgres: "proto.insert.stmt64" },
    minimal: { sqlite: "insert.tx64", postgres: "insert.stmt64" },
    target: { sqlite: { kind: "ratio≥", value: 0.5 }, postgres: { kind: "ratio≥", value: 0.3 } },
  },
  {
    id: "drain.c1",
    label: "drain c1",
    unit: "rate",
    floor: { sqlite: "proto.drain.tx1", postgres: "proto.drain.stmt1.c1" },
    minimal: { sqlite: "drain.tx1", postgres: "drain.stmt1.c1" },
    // Postgres's drain-c1 target is judged on the prefetch row below; this row (default options) is shown beside it.
    target: { sqlite: { kind: "ratio≥", value: 0.6 } },
  },
  {
    id: "drainPrefetch.c1",
    label: `drain c1, prefetch ${DRAIN_PREFETCH}`,
    unit: "rate",
    floor: { sqlite: "proto.drain.tx1", postgres: "proto.drain.stmt1.c1" },
    minimal: { sqlite: "drain.tx1", postgres: "drain.stmt1.c1" },
    // Postgres's drain-c1 target is judged on this row (the target table says so); SQLite's on the default row above.
    target: { postgres: { kind: "ratio≥", value: 3 } },
  },
  {
    id: "drainPrefetch1.c1",
    label: "drain c1, prefetch 1 (a local queue of one task beside the one running)",
    unit: "rate",
    floor: { sqlite: "proto.drain.tx1", postgres: "proto.drain.stmt1.c1" },
    minimal: { sqlite: "drain.tx1", postgres: "drain.stmt1.c1" },
    target: { postgres: { kind: "ratio≥", value: 2 } },
  },
  {
    id: "drain.c64",
    label: "drain c64",
    unit: "rate",
    floor: { sqlite: "proto.drain.tx64", postgres: "proto.drain.stmt64" },
    minimal: { sqlite: "drain.tx64", postgres: "drain.stmt64" },
    // The drain-c64 targets are judged on the prefetch row below; this row (no prefetch) is shown beside it.
    target: {},
  },
  {
    id: "drainPrefetch.c64",
    label: `drain c64, prefetch ${DRAIN_PREFETCH_C64}`,
    unit: "rate",
    floor: { sqlite: "proto.drain.tx64", postgres: "proto.drain.stmt64" },
    minimal: { sqlite: "drain.tx64", postgres: "drain.stmt64" },
    target: { sqlite: { kind: "ratio≥", value: 0.5 }, postgres: { kind: "ratio≥", value: 0.8 } },
  },
  {
    id: "telemetryOn.c64",
    label: (settings) =>
      `drain c64 with tracing + metrics on (SDK, batched spans, no-op exporters; n = ${count(settings?.telemetryN)}, ${settings?.telemetryPairs ?? "?"} off/on pairs per repetition; floor column: the same drain with telemetry off; ratio: median of the pairs' ratios)`,
    unit: "rate",
    floor: both("@telemetryOff.c64"),
    pairedRatio: "telemetryRatio.c64",
    target: both({ kind: "ratio≥", value: 0.85 }),
  },
  { id: "telemetryOff.c64", label: "↳ drain c64, telemetry off (no @opentelemetry module loaded: checked)", unit: "rate", target: {} },
  {
    id: "telemetryCpuOn.c64",
    label: "↳ informational: the worker process's CPU time per task, telemetry on (floor column: off; ratio: median of the pairs' on ÷ off)",
    unit: "us",
    floor: both("@telemetryCpuOff.c64"),
    pairedRatio: "telemetryCpuRatio.c64",
    target: {},
  },
  {
    id: "latency.p50",
    label: "call() latency p50, idle worker process",
    unit: "ms",
    floor: both("proto.call.p50"),
    target: { sqlite: { kind: "≤", value: 1.5, unit: "ms" }, postgres: { kind: "ratio≤", value: 2 } },
  },
  { id: "latency.p95", label: "call() latency p95", unit: "ms", target: {} },
  {
    id: "latency.p99",
    label: "call() latency p99",
    unit: "ms",
    floor: both("proto.call.p99"),
    target: { sqlite: { kind: "≤", value: 5, unit: "ms" }, postgres: { kind: "ratio≤", value: 2.5 } },
  },
  {
    id: "latency.clientBusy",
    label: (settings) => `↳ the client's writes that hit SQLITE_BUSY and slept the backoff, in ${int.format(settings?.latencyCalls ?? 0)} calls`,
    unit: "count",
    target: {},
  },
  { id: "latency.workerBusy", label: "↳ the worker's writes that hit SQLITE_BUSY, over its run (warm-up included)", unit: "count", target: {} },
  {
    id: "latencyX.p50",
    label: "↳ informational: p50 against the call floor across two processes (floor column; raw driver, each side waiting on the other's commits)",
    unit: "ms",
    floor: { sqlite: "proto.callx.p50" },
    target: {},
  },
  { id: "latencyTuned.p50", label: "↳ informational: p50 with pollIntervalMs 5 / pollMs 1", unit: "ms", target: {} },
  { id: "latencyTuned.p99", label: "↳ informational: p99 with pollIntervalMs 5 / pollMs 1", unit: "ms", target: {} },
  {
    id: "steps.c1",
    label: (settings) => `durable steps c1: 1 task × ${count(settings?.steps?.perTask)} no-op ctx.step (steps/s; floor: single-row commits)`,
    unit: "rate",
    floor: { sqlite: "proto.insert.tx1", postgres: "proto.insert.stmt1.c1" },
    target: both({ kind: "ratio≥", value: 0.5 }),
  },
  {
    id: "steps.c64",
    label: (settings) => `durable steps c64: 64 tasks × ${count(settings?.steps?.perTask)} no-op ctx.step at once (floor: 64-row statements)`,
    unit: "rate",
    floor: { sqlite: "proto.insert.tx64", postgres: "proto.insert.stmt64" },
    target: both({ kind: "ratio≥", value: 0.3 }),
  },
  {
    id: "parkWake.p50",
    label: "park/wake p50: call() of a handler that sleeps 0 ms (floor column: call() p50 of a no-op, same worker)",
    unit: "ms",
    floor: { sqlite: "@parkWakeCall.p50", postgres: "@parkWakeCall.p50" },
    target: both({ kind: "ratio≤", value: 2 }),
  },
  {
    id: "claim.100k",
    label: "claim, 100k queued (floor column: 1k queued)",
    unit: "ms",
    floor: { sqlite: "@claim.1k", postgres: "@claim.1k" },
    target: {},
  },
  {
    id: "claim.growth",
    label: (settings) =>
      `claim, ${count(settings?.growth?.terminal)} terminal + ${count(settings?.growth?.queued)} queued (floor column: 1k queued)`,
    unit: "ms",
    floor: { sqlite: "@claim.1k", postgres: "@claim.1k" },
    target: both({ kind: "ratio≤", value: 1.5 }),
  },
  {
    id: "groups.drain.10",
    label: "drain c64, groupConcurrency 8 over 10 groups (floor column: the same drain without limits, this run)",
    unit: "rate",
    floor: { sqlite: "@groups.drain.plain", postgres: "@groups.drain.plain" },
    target: both({ kind: "ratio≥", value: 0.9 }),
  },
  {
    id: "groups.drain.10k",
    label: "drain c64, groupConcurrency 2 over 10,000 groups (floor column: the same drain without limits, this run)",
    unit: "rate",
    floor: { sqlite: "@groups.drain.plain", postgres: "@groups.drain.plain" },
    target: both({ kind: "ratio≥", value: 0.9 }),
  },
  { id: "groups.drain.plain", label: "↳ drain c64 of tasks in 10 groups, no limit", unit: "rate", target: {} },
  {
    id: "groups.claim",
    label: (settings) =>
      `claim with groupConcurrency, ${count(settings?.groupsClaim?.backlog)} queued over ${count(settings?.groupsClaim?.groups)} groups (floor column: the plain claim, same database)`,
    unit: "ms",
    floor: { sqlite: "@groups.claimPlain", postgres: "@groups.claimPlain" },
    target: {},
  },
  { id: "groups.claimPlain", label: "↳ the plain claim (no limits) on that database", unit: "ms", target: {} },
  {
    id: "pooler.drain.c64",
    label: `drain c64 through PgBouncer (transaction mode, pool ${POOLER_POOL_SIZE}; preparedStatements: false, LISTEN direct; floor column: the same drain direct, this run)`,
    unit: "rate",
    floor: { postgres: "@pooler.direct.c64" },
    target: { postgres: { kind: "ratio≥", value: 0.7 } },
  },
  { id: "pooler.direct.c64", label: "↳ drain c64 direct (a fresh database, the same settings)", unit: "rate", target: {} },
  { id: "pooler.pickupListen.p50", label: "idle worker pickup through PgBouncer p50, LISTEN direct", unit: "ms", target: {} },
  { id: "pooler.pickupListen.p99", label: "idle worker pickup through PgBouncer p99, LISTEN direct", unit: "ms", target: {} },
  { id: "pooler.pickupPoll.p50", label: "idle worker pickup through PgBouncer p50, listen: false (poll 500 ms)", unit: "ms", target: {} },
  { id: "pooler.pickupPoll.p99", label: "idle worker pickup through PgBouncer p99, listen: false (poll 500 ms)", unit: "ms", target: {} },
  {
    id: "churn.last",
    label: (settings) =>
      `churn: 2 workers × 16 (handler awaits 4 ms) draining ${count(settings?.churn?.total)} queued, the last ${count(settings?.churn?.window)}, no vacuum (floor column: the first ${count(settings?.churn?.window)}, same drain)`,
    unit: "rate",
    floor: both("@churn.first"),
    target: both({ kind: "ratio≥", value: 0.9 }),
  },
  { id: "churn.first", label: "↳ the same drain's first window (after the warm-up)", unit: "rate", target: {} },
  {
    id: "churn.submits",
    label: "churn: the same workers while producers submit at 1.5× their capacity (floor column: the same workers on a backlog)",
    unit: "rate",
    floor: both("@churn.backlog"),
    target: both({ kind: "ratio≥", value: 0.8 }),
  },
  { id: "churn.backlog", label: "↳ the same workers draining a backlog (their capacity)", unit: "rate", target: {} },
  { id: "churn.offered", label: "↳ the submit rate the producers reached", unit: "rate", target: {} },
  { id: "rss.c64", label: "worker peak RSS, c64 drain", unit: "mb", target: both({ kind: "≤", value: 120, unit: "MB" }) },
  { id: "rssIdle.c64", label: "↳ informational: worker RSS connected and idle, just before the drain", unit: "mb", target: {} },
  { id: "heapUsed.c64", label: "↳ informational: worker peak V8 heap used, c64 drain", unit: "mb", target: {} },
];

/** 1000000 → "1M", 100000 → "100k" (for labels). */
function count(n) {
  if (n === undefined) return "?";
  if (n >= 1_000_000 && n % 1_000_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1_000 && n % 1_000 === 0) return `${n / 1_000}k`;
  return int.format(n);
}

function both(target) {
  return { sqlite: target, postgres: target };
}

/**
 * The target lines of a server backend: Postgres's targets, and MySQL's, which are the same ratios
 * to its own raw floors (issue 24).
 */
function serverTargets(name, backend) {
  return [
    {
      label: `${name} drain c64 (the "drain c64, prefetch ${DRAIN_PREFETCH_C64}" row)`,
      target: "≥ 0.8 × raw claim-64 + complete-64 floor",
      parts: [[backend, "drainPrefetch.c64"]],
    },
    { label: `${name} submit c64`, target: "≥ 0.3 × raw 64-row INSERT floor", parts: [[backend, "submit.c64"]] },
    {
      label: `${name} drain c1 (the "drain c1, prefetch ${DRAIN_PREFETCH}" row)`,
      target: "≥ 3 × raw claim-1 + complete-1 (1 connection) floor",
      parts: [[backend, "drainPrefetch.c1"]],
    },
    { label: `${name} drain c1, prefetch 1`, target: "≥ 2 × raw claim-1 + complete-1 (1 connection) floor", parts: [[backend, "drainPrefetch1.c1"]] },
    { label: `${name} submit c1`, target: "≥ 0.8 × raw one-INSERT-per-statement floor", parts: [[backend, "submit.c1"]] },
    {
      label: `${name} call() p50 / p99, idle worker in another process`,
      target: "≤ 2× / ≤ 2.5× the raw call floor (p50 / p99)",
      parts: [[backend, "latency.p50", "p50"], [backend, "latency.p99", "p99"]],
    },
  ];
}

/**
 * The target table, Postgres first: each line names the figures
 * (backend, figure id, and a short name where one line has several figures
 * of one backend) it is judged on; a line is met when all of them are.
 */
export const TARGETS = [
  ...serverTargets("Postgres", "postgres"),
  ...serverTargets("MySQL", "mysql"),
  { label: "SQLite submit c1", target: "≥ 0.7 × raw INSERT, one per transaction", parts: [["sqlite", "submit.c1"]] },
  { label: "SQLite drain c1", target: "≥ 0.6 × raw claim + complete, one per transaction", parts: [["sqlite", "drain.c1"]] },
  {
    label: `SQLite submit c64 / drain c64 (drain: the "drain c64, prefetch ${DRAIN_PREFETCH_C64}" row)`,
    target: "≥ 0.5 × raw 64-per-transaction",
    parts: [["sqlite", "submit.c64", "submit"], ["sqlite", "drainPrefetch.c64", "drain"]],
  },
  { label: "SQLite call() p50 / p99", target: "≤ 1.5 ms / ≤ 5 ms", parts: [["sqlite", "latency.p50", "p50"], ["sqlite", "latency.p99", "p99"]] },
  {
    label: "claim with 1M terminal + 100k queued vs 1k queued",
    target: "≤ 1.5× (both backends)",
    parts: [["sqlite", "claim.growth"], ["postgres", "claim.growth"]],
  },
  {
    label: "drain rate of the last vs the first window of a long drain, no vacuum between",
    target: "≥ 0.9× (both backends)",
    parts: [["sqlite", "churn.last"], ["postgres", "churn.last"]],
  },
  {
    label: "drain under concurrent submits at 1.5× capacity vs a drain of a backlog",
    target: "≥ 0.8× (both backends)",
    parts: [["sqlite", "churn.submits"], ["postgres", "churn.submits"]],
  },
  {
    label: "drain c64 with groupConcurrency over 10 / 10,000 groups vs the same drain without limits",
    target: "≥ 0.9× (both backends)",
    parts: [
      ["sqlite", "groups.drain.10", "sqlite 10"],
      ["sqlite", "groups.drain.10k", "sqlite 10k"],
      ["postgres", "groups.drain.10", "postgres 10"],
      ["postgres", "groups.drain.10k", "postgres 10k"],
    ],
  },
  {
    label: "drain c64 with tracing + metrics on ÷ off (median of the off/on pairs of this run)",
    target: "≥ 0.85× (both backends)",
    parts: [["sqlite", "telemetryOn.c64"], ["postgres", "telemetryOn.c64"]],
  },
  { label: "worker peak RSS, c64 drain", target: "≤ 120 MB (both backends)", parts: [["sqlite", "rss.c64"], ["postgres", "rss.c64"]] },
  { label: "Postgres drain c64 through PgBouncer (transaction mode) ÷ direct, same run", target: "≥ 0.7×", parts: [["postgres", "pooler.drain.c64"]] },
];

/** The floors of each backend, for the floors table. */
export const FLOOR_LABELS = {
  "insert.tx1": "INSERT, one per transaction (autocommit)",
  "insert.tx64": "INSERT, 64 per transaction",
  "drain.tx1": "claim UPDATE…RETURNING + complete UPDATE, one statement per transaction",
  "drain.tx64": "claim 64 per transaction + 64 completes per transaction",
  "insert.stmt1.c1": "INSERT, one per statement, 1 connection",
  "insert.stmt1.c64": "INSERT, one per statement, 64 connections",
  "insert.stmt64": "INSERT of 64 rows per statement",
  "drain.stmt1.c1": "claim 1 + complete 1 per statement, 1 connection",
  "drain.stmt1.c64": "claim 1 + complete 1 per statement, 64 connections",
  "drain.stmt64": "claim 64 + complete 64 per statement",
};
for (const [id, label] of Object.entries(FLOOR_LABELS)) FLOOR_LABELS[`proto.${id}`] = `${label} — protocol v1 schema`;
// The call() floor (protocol schema only): one connection, sequential INSERT → claim → complete → SELECT of the row.
FLOOR_LABELS["proto.call.p50"] = "call() floor p50: INSERT, claim, complete (each its own commit), SELECT the row, 1 connection — protocol v1 schema";
FLOOR_LABELS["proto.call.p99"] = "call() floor p99 — protocol v1 schema";
// The same round trip split across two processes the way a call() is (SQLite: `crossProcessCallFloor`).
FLOOR_LABELS["proto.callx.p50"] =
  "call() floor across two processes p50: INSERT here; another process wakes on the commit (the wake file + data_version), claims, completes; SELECT here after waking on that commit — protocol v1 schema";
FLOOR_LABELS["proto.callx.p99"] = "call() floor across two processes p99 — protocol v1 schema";

/**
 * MySQL's floors share the Postgres ids (report rows match them by id) but claim differently: MariaDB has
 * no UPDATE … RETURNING, so a raw claim is a transaction (SELECT … FOR UPDATE SKIP LOCKED, UPDATE of the
 * picked ids, COMMIT) and the complete one autocommit UPDATE (lib/mysql-backend.mjs).
 */
const MYSQL_FLOOR_LABELS = {
  "proto.drain.stmt1.c1": "claim 1 (SELECT … FOR UPDATE SKIP LOCKED + UPDATE, one transaction) + complete 1 (autocommit), 1 connection — protocol v1 schema",
  "proto.drain.stmt64": "claim 64 (SELECT … FOR UPDATE SKIP LOCKED + UPDATE, one transaction) + complete 64 (one UPDATE), 8 connections — protocol v1 schema",
  "proto.call.p50": "call() floor p50: INSERT, the claim transaction, complete (each its own commit), SELECT the row, 1 connection — protocol v1 schema",
};

/** The label of `backend`'s floor `id`. */
function floorLabel(backend, id) {
  return (backend === "mysql" ? MYSQL_FLOOR_LABELS[id] : undefined) ?? FLOOR_LABELS[id] ?? id;
}

/** The unit of a floor that is not a rate (tasks/s). */
const FLOOR_UNITS = { "proto.call.p50": "ms", "proto.call.p99": "ms", "proto.callx.p50": "ms", "proto.callx.p99": "ms" };

/** The floor's median for `floorId` of one backend's result (`@figure` = one of our own figures), or null. */
function floorSummary(result, floorId) {
  if (floorId === null || floorId === undefined) return null;
  const samples = floorId.startsWith("@") ? result.ours[floorId.slice(1)] : result.floors[floorId];
  return samples === undefined || samples.length === 0 ? null : summarize(samples);
}

function judge(target, ours, ratio) {
  if (target === undefined) return { text: "—", met: null };
  switch (target.kind) {
    case "ratio≥":
      return { text: `≥ ${target.value}× floor`, met: ratio !== null && ratio >= target.value };
    case "ratio≤":
      return { text: `≤ ${target.value}×`, met: ratio !== null && ratio <= target.value };
    case "≤":
      return { text: `≤ ${target.value} ${target.unit}`, met: ours <= target.value };
    default:
      throw new Error(`unknown target kind ${target.kind}`);
  }
}

/**
 * One row per figure and backend: `{ backend, id, label, unit, ours, floor,
 * floorId, ratio, minimal, minimalId, minimalRatio, target, met }`; `ours`,
 * `floor` (protocol-schema floor) and `minimal` (minimal-table floor) are
 * summaries (median, min, max, samples).
 */
export function buildRows(results, settings) {
  const rows = [];
  for (const [backend, result] of Object.entries(results)) {
    for (const figure of FIGURES) {
      const samples = result.ours[figure.id];
      if (samples === undefined || samples.length === 0) continue;
      const ours = summarize(samples);
      // MySQL's floors are named as Postgres's, and its targets are Postgres's ratios (issue 24).
      const as = backend === "mysql" ? "postgres" : backend;
      const floorId = figure.floor?.[as] ?? null;
      const floor = floorSummary(result, floorId);
      const pairRatios = figure.pairedRatio === undefined ? undefined : result.ours[figure.pairedRatio];
      const paired = pairRatios === undefined || pairRatios.length === 0 ? null : summarize(pairRatios);
      const ratio = paired !== null ? paired.median : floor === null ? null : ours.median / floor.median;
      const minimalId = backend === "mysql" ? null : (figure.minimal?.[backend] ?? null);
      const minimal = floorSummary(result, minimalId);
      const minimalRatio = minimal === null ? null : ours.median / minimal.median;
      const { text, met } = judge(figure.target[as], ours.median, ratio);
      const label = typeof figure.label === "function" ? figure.label(settings) : figure.label;
      const targetKind = figure.target[as]?.kind ?? null;
      rows.push({ backend, id: figure.id, label, unit: figure.unit, ours, floorId, floor, ratio, paired, minimalId, minimal, minimalRatio, target: text, targetKind, met });
    }
  }
  return rows;
}

/**
 * The target table from the rows: `{ label, target, measured, met }`
 * per line; `met` is null when a figure of the line was not measured.
 */
export function buildTargets(rows) {
  return TARGETS.map(({ label, target, parts }) => {
    const backends = [...new Set(parts.map(([backend]) => backend))];
    const found = parts.map(([backend, id, name]) => ({ backend, name, row: rows.find((r) => r.backend === backend && r.id === id) }));
    const measured = found
      .map(({ backend, name, row }) => {
        const prefix = found.length === 1 ? "" : `${name ?? backend} `;
        if (row === undefined) return `${prefix}not measured`;
        // An absolute target (≤ ms, ≤ MB) shows the value, with its ratio to the floor when it has one (the call floor).
        const absolute = row.targetKind === "≤";
        const ratio = row.ratio === null ? null : `${fixed(2).format(row.ratio)}×`;
        const value = !absolute && ratio !== null ? ratio : `${UNITS[row.unit].fmt(row.ours.median)}${ratio === null ? "" : ` (${ratio} floor)`}`;
        return `${prefix}${value}${row.met === false ? " ✗" : ""}`;
      })
      .join(" / ");
    const met = found.some(({ row }) => row === undefined || row.met === null) ? null : found.every(({ row }) => row.met);
    return { label, target, measured, met, backends };
  });
}

function spread(summary, unit) {
  const f = UNITS[unit].fmt;
  if (summary.samples.length < 2) return f(summary.median);
  return `${f(summary.median)} (${f(summary.min)}–${f(summary.max)})`;
}

/** The markdown report: machine, settings, the figures table and the floors table. */
export function renderMarkdown({ machine, settings, rows, results, skipped, startedAt, durationS }) {
  const lines = [];
  lines.push(`CairnQ benchmark, ${startedAt} (${Math.round(durationS)} s).`);
  lines.push("");
  lines.push(
    `Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.os}; Node ${machine.node}${machine.workerNode ? ` (worker processes: Node ${machine.workerNode})` : ""}; ` +
      `SQLite ${machine.sqlite}; Postgres ${machine.postgres ?? "not measured"}; MySQL ${machine.mysql ?? "not measured"}; commit ${machine.commit}; ` +
      `load average ${machine.loadAverageAtStart.join(" / ")} at start, ${machine.loadAverageAtEnd?.join(" / ") ?? "?"} at end.`,
  );
  lines.push(
    `Settings: n = ${int.format(settings.n)}, ${settings.reps} repetition${settings.reps === 1 ? "" : "s"} (median, min–max), no-op handlers; ` +
      `drains timed after ${int.format(settings.drainWarmup ?? 0)} untimed tasks (ours and the floors); ` +
      `latency ${settings.latencyCalls} sequential calls after ${settings.latencyWarmup} warm-up; claim cost = median of ${settings.claimSamples} single claims.`,
  );
  if (machine.uncommittedSources.length > 0) {
    lines.push(
      `Measured the working tree's build, which had uncommitted source changes in: ${machine.uncommittedSources.map((p) => `packages/${p}`).join(", ")}.`,
    );
  }
  for (const [backend, reason] of Object.entries(skipped)) lines.push(`Skipped ${backend}: ${reason}.`);
  lines.push("");
  lines.push("Targets (ratios to the raw-driver floors on the protocol v1 schema, measured in this run):");
  lines.push("");
  lines.push("| figure | target | measured | met? |");
  lines.push("| --- | --- | --- | --- |");
  // Only the target lines of the backends this run measured.
  for (const t of buildTargets(rows).filter((line) => line.backends.some((backend) => backend in results))) {
    const met = t.met === null ? "not measured" : t.met ? "yes" : "**no**";
    lines.push(`| ${t.label} | ${t.target} | ${t.measured} | ${met} |`);
  }
  lines.push("");
  lines.push(
    "Every figure: *floor* = the raw driver doing the same work on the protocol v1 schema (every index, CHECK and trigger); " +
      "*minimal floor* = the same on a table with only a primary key and a claim index, so *floor ÷ minimal floor* is what the schema itself costs.",
  );
  lines.push("");
  lines.push("| backend | figure | ours | floor | ratio | minimal floor | ratio | target | met? |");
  lines.push("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  const fmtRatio = (r) => (r === null ? "—" : `${fixed(2).format(r)}×`);
  // A paired ratio shows the spread of the pairs' ratios too.
  const fmtPaired = (row) =>
    row.paired === null || row.paired.samples.length < 2 ? fmtRatio(row.ratio) : `${fmtRatio(row.ratio)} (${fixed(2).format(row.paired.min)}–${fixed(2).format(row.paired.max)})`;
  for (const row of rows) {
    const floor = row.floor === null ? "—" : UNITS[row.unit].fmt(row.floor.median);
    const minimal = row.minimal === null ? "—" : UNITS[row.unit].fmt(row.minimal.median);
    const met = row.met === null ? "" : row.met ? "yes" : "**no**";
    lines.push(
      `| ${row.backend} | ${row.label} | ${spread(row.ours, row.unit)} | ${floor} | ${fmtPaired(row)} | ${minimal} | ${fmtRatio(row.minimalRatio)} | ${row.target} | ${met} |`,
    );
  }
  lines.push("");
  lines.push(
    "Raw driver floors (the same work with only the minimal statements, on the minimal table and on the protocol v1 schema; " +
      "better-sqlite3 in WAL with synchronous = NORMAL, pg with prepared statements, mysql2 (text protocol) at READ COMMITTED):",
  );
  lines.push("");
  lines.push("| backend | floor | tasks/s (call floor: ms) |");
  lines.push("| --- | --- | --- |");
  for (const [backend, result] of Object.entries(results)) {
    for (const [id, samples] of Object.entries(result.floors)) {
      lines.push(`| ${backend} | ${floorLabel(backend, id)} | ${spread(summarize(samples), FLOOR_UNITS[id] ?? "rate")} |`);
    }
  }
  return lines.join("\n");
}
