/**
 * The page and the files it loads, all served by the handler itself: the
 * dashboard works offline and loads nothing from another origin.
 */
import { readFileSync } from "node:fs";

/** One static file the handler serves. */
export interface Asset {
  readonly type: string;
  readonly body: string;
}

function load(file: string, type: string): Asset {
  return { type, body: readFileSync(new URL(`./assets/${file}`, import.meta.url), "utf8") };
}

/** Dashboard-relative path → file. */
export const ASSETS: ReadonlyMap<string, Asset> = new Map([
  ["/assets/dashboard.js", load("dashboard.mjs", "text/javascript; charset=utf-8")],
  // The modules dashboard.js imports (relative specifiers, so they resolve under any mount path).
  ["/assets/charts.js", load("charts.mjs", "text/javascript; charset=utf-8")],
  ["/assets/dom.js", load("dom.mjs", "text/javascript; charset=utf-8")],
  ["/assets/dashboard.css", load("dashboard.css", "text/css; charset=utf-8")],
  ["/assets/favicon.svg", load("favicon.svg", "image/svg+xml")],
]);

/** The page shell; the script fills it from the JSON API. Holds no database value. */
export function pageHtml(options: { readOnly: boolean }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>CairnQ dashboard</title>
<link rel="icon" href="assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="assets/dashboard.css">
<script type="module" src="assets/dashboard.js"></script>
</head>
<body data-read-only="${options.readOnly ? "true" : "false"}">
<header class="top">
  <a class="brand" href="./"><img src="assets/favicon.svg" alt="" width="22" height="22"><span>CairnQ</span></a>
  <span class="live" id="live" data-state="connecting"><span class="dot"></span><span id="live-text">connecting…</span></span>
  ${options.readOnly ? '<span class="badge" id="read-only-badge">read-only</span>' : ""}
  <span class="spacer"></span>
  <span class="clock" id="clock"></span>
</header>
<main id="main">
  <div class="column">
    <section class="panel">
      <h2>Queues</h2>
      <div id="queues" class="queues"><p class="empty">Loading…</p></div>
    </section>
    <section class="panel">
      <h2>Last hour <span class="legend" id="chart-legend"></span></h2>
      <div id="chart" class="chart"></div>
    </section>
    <section class="panel" id="activity">
      <h2>Activity
        <span class="activity-controls">
          <select id="activity-range" aria-label="window"><option value="hour">last hour</option><option value="day">last day</option></select>
          <select id="activity-queue" aria-label="queue"><option value="">all queues</option></select>
        </span>
      </h2>
      <h3>Throughput per <span id="activity-unit">minute</span> <span class="legend" id="activity-legend"></span></h3>
      <div id="activity-throughput" class="chart"></div>
      <h3>Due → finished <span class="legend" id="latency-legend"></span></h3>
      <div id="activity-latency" class="chart"></div>
    </section>
    <section class="panel">
      <h2>Tasks</h2>
      <form id="filters" class="filters" autocomplete="off">
        <label>Status
          <select name="status" id="filter-status">
            <option value="">any</option>
            <option value="queued">queued</option>
            <option value="running">running</option>
            <option value="succeeded">succeeded</option>
            <option value="failed">failed</option>
            <option value="canceled">canceled</option>
          </select>
        </label>
        <label>Queue <input name="queue" id="filter-queue" list="queue-names" spellcheck="false"></label>
        <label>Name <input name="name" id="filter-name" spellcheck="false"></label>
        <label>Key <input name="key" id="filter-key" spellcheck="false"></label>
        <label>Correlation id <input name="correlationId" id="filter-correlation" spellcheck="false"></label>
        <span class="filter-buttons">
          <button type="submit" class="primary">Filter</button>
          <button type="button" id="clear-filters">Clear</button>
        </span>
        <datalist id="queue-names"></datalist>
      </form>
      <div class="bulk" id="bulk" hidden>
        <span id="bulk-text"></span>
        <button type="button" id="bulk-action" class="danger"></button>
        <span id="bulk-confirm" hidden>
          <span id="bulk-confirm-text"></span>
          <button type="button" id="bulk-yes" class="danger">Confirm</button>
          <button type="button" id="bulk-no">Keep</button>
        </span>
      </div>
      <div class="groups" id="groups" hidden>
        <h3>Groups of <bdi id="groups-name"></bdi> <span class="legend" id="groups-legend"></span></h3>
        <table class="group-counts">
          <thead><tr><th>Group</th><th class="num">Queued</th><th class="num">Running</th></tr></thead>
          <tbody id="group-rows"></tbody>
        </table>
      </div>
      <table class="tasks" id="task-table">
        <thead><tr><th>Status</th><th>Task</th><th>Name</th><th>Queue</th><th class="num">Attempt</th><th>Progress</th><th>Created</th><th>Updated</th></tr></thead>
        <tbody id="task-rows"></tbody>
      </table>
      <p class="empty" id="no-tasks" hidden>No tasks match.</p>
      <div class="more"><button type="button" id="load-more" hidden>Load more</button></div>
    </section>
  </div>
  <aside class="panel detail" id="detail" hidden aria-live="polite"></aside>
</main>
<div class="toast" id="toast" role="status" hidden></div>
</body>
</html>
`;
}
