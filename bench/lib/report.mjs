// Turns the measurements into the table: each of our figures next to its
// matching raw floor, the ratio, and the issue's target for it.
import { summarize } from "./stats.mjs";

const int = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const fixed = (digits) => new Intl.NumberFormat("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

const UNITS = {
  rate: { fmt: (v) => `${int.format(v)}/s` },
  ms: { fmt: (v) => `${fixed(v < 10 ? 2 : 1).format(v)} ms` },
  mb: { fmt: (v) => `${fixed(1).format(v)} MB` },
};

/**
 * The figures, in table order. `floor` names the matching raw floor of the
 * backend (or, for the claim row, the 1k-backlog figure it is compared with);
 * `target[backend]` is the issue's target: `{ kind: "ratio≥", value }` for
 * ratios to the floor, `{ kind: "≤", value }` for absolute limits,
 * `{ kind: "ratio≤", value }` for the backlog ratio.
 */
export const FIGURES = [
  {
    id: "submit.c1",
    label: "submit c1",
    unit: "rate",
    floor: { sqlite: "insert.tx1", postgres: "insert.stmt1.c1" },
    target: { sqlite: { kind: "ratio≥", value: 0.5 } },
  },
  {
    id: "submit.c64",
    label: "submit c64",
    unit: "rate",
    floor: { sqlite: "insert.tx64", postgres: "insert.stmt64" },
    target: { sqlite: { kind: "ratio≥", value: 0.25 }, postgres: { kind: "ratio≥", value: 0.3 } },
  },
  { id: "drain.c1", label: "drain c1", unit: "rate", floor: { sqlite: "drain.tx1", postgres: "drain.stmt1.c1" }, target: {} },
  {
    id: "drain.c64",
    label: "drain c64",
    unit: "rate",
    floor: { sqlite: "drain.tx64", postgres: "drain.stmt64" },
    target: { sqlite: { kind: "ratio≥", value: 0.4 }, postgres: { kind: "ratio≥", value: 0.6 } },
  },
  { id: "latency.p50", label: "call() latency p50, idle worker process", unit: "ms", target: both({ kind: "≤", value: 2 }) },
  { id: "latency.p95", label: "call() latency p95", unit: "ms", target: {} },
  { id: "latency.p99", label: "call() latency p99", unit: "ms", target: both({ kind: "≤", value: 8 }) },
  { id: "latencyTuned.p50", label: "↳ informational: p50 with pollIntervalMs 5 / pollMs 1", unit: "ms", target: {} },
  { id: "latencyTuned.p99", label: "↳ informational: p99 with pollIntervalMs 5 / pollMs 1", unit: "ms", target: {} },
  {
    id: "claim.100k",
    label: "claim, 100k queued (floor column: 1k queued)",
    unit: "ms",
    floor: { sqlite: "@claim.1k", postgres: "@claim.1k" },
    target: both({ kind: "ratio≤", value: 1.5 }),
  },
  { id: "rss.c64", label: "worker peak RSS, c64 drain", unit: "mb", target: both({ kind: "≤", value: 120 }) },
  { id: "rssIdle.c64", label: "↳ informational: worker RSS connected and idle, just before the drain", unit: "mb", target: {} },
  { id: "heapUsed.c64", label: "↳ informational: worker peak V8 heap used, c64 drain", unit: "mb", target: {} },
];

function both(target) {
  return { sqlite: target, postgres: target };
}

/** The floors of each backend, for the second table. */
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

function judge(target, ours, ratio) {
  if (target === undefined) return { text: "—", met: null };
  switch (target.kind) {
    case "ratio≥":
      return { text: `≥ ${target.value}× floor`, met: ratio >= target.value };
    case "ratio≤":
      return { text: `≤ ${target.value}×`, met: ratio <= target.value };
    case "≤":
      return { text: `≤ ${target.value} ${target.value === 120 ? "MB" : "ms"}`, met: ours <= target.value };
    default:
      throw new Error(`unknown target kind ${target.kind}`);
  }
}

/**
 * One row per figure and backend: `{ backend, id, label, unit, ours, floor,
 * floorId, ratio, target, met }`; `ours` and `floor` are summaries (median,
 * min, max, samples).
 */
export function buildRows(results) {
  const rows = [];
  for (const [backend, result] of Object.entries(results)) {
    for (const figure of FIGURES) {
      const samples = result.ours[figure.id];
      if (samples === undefined || samples.length === 0) continue;
      const ours = summarize(samples);
      const floorId = figure.floor?.[backend] ?? null;
      let floor = null;
      if (floorId !== null) {
        const floorSamples = floorId.startsWith("@") ? result.ours[floorId.slice(1)] : result.floors[floorId];
        if (floorSamples !== undefined && floorSamples.length > 0) floor = summarize(floorSamples);
      }
      const ratio = floor === null ? null : ours.median / floor.median;
      const { text, met } = judge(figure.target[backend], ours.median, ratio);
      rows.push({ backend, id: figure.id, label: figure.label, unit: figure.unit, ours, floorId, floor, ratio, target: text, met });
    }
  }
  return rows;
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
    `Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.os}; Node ${machine.node}; ` +
      `SQLite ${machine.sqlite}; Postgres ${machine.postgres ?? "not measured"}; commit ${machine.commit}; ` +
      `load average ${machine.loadAverageAtStart.join(" / ")} at start, ${machine.loadAverageAtEnd?.join(" / ") ?? "?"} at end.`,
  );
  lines.push(
    `Settings: n = ${int.format(settings.n)}, ${settings.reps} repetition${settings.reps === 1 ? "" : "s"} (median, min–max), no-op handlers; ` +
      `latency ${settings.latencyCalls} sequential calls after ${settings.latencyWarmup} warm-up; claim cost = median of ${settings.claimSamples} single claims.`,
  );
  if (machine.uncommittedSources.length > 0) {
    lines.push(
      `Measured the working tree's build, which had uncommitted source changes in: ${machine.uncommittedSources.map((p) => `packages/${p}`).join(", ")}.`,
    );
  }
  for (const [backend, reason] of Object.entries(skipped)) lines.push(`Skipped ${backend}: ${reason}.`);
  lines.push("");
  lines.push("| backend | figure | ours | floor | ratio | target | met? |");
  lines.push("| --- | --- | --- | --- | --- | --- | --- |");
  for (const row of rows) {
    const ratio = row.ratio === null ? "—" : `${fixed(2).format(row.ratio)}×`;
    const floor = row.floor === null ? "—" : UNITS[row.unit].fmt(row.floor.median);
    const met = row.met === null ? "" : row.met ? "yes" : "**no**";
    lines.push(`| ${row.backend} | ${row.label} | ${spread(row.ours, row.unit)} | ${floor} | ${ratio} | ${row.target} | ${met} |`);
  }
  lines.push("");
  lines.push("Raw driver floors (the same work with only the minimal statements; better-sqlite3 in WAL with synchronous = NORMAL, pg with prepared statements):");
  lines.push("");
  lines.push("| backend | floor | tasks/s |");
  lines.push("| --- | --- | --- |");
  for (const [backend, result] of Object.entries(results)) {
    for (const [id, samples] of Object.entries(result.floors)) {
      lines.push(`| ${backend} | ${FLOOR_LABELS[id] ?? id} | ${spread(summarize(samples), "rate")} |`);
    }
  }
  return lines.join("\n");
}
