// The dashboard's charts: the overview's last hour, and the activity panel's
// throughput and wait-and-run percentiles. Each renderer draws the data the
// JSON API returned into its element; SVG built with setAttribute only.

import { $, el, svg } from "./dom.js";

export function renderChart(data) {
  const width = 720;
  const height = 110;
  const top = 6;
  const bottom = 2;
  const n = data.buckets.length;
  const max = Math.max(1, ...data.buckets.map((b) => b.succeeded + b.failed));
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", role: "img", "aria-label": "tasks finished per minute over the last hour" });
  const plot = height - top - bottom;
  for (const f of [0, 0.5, 1]) {
    const y = top + plot * (1 - f);
    chart.append(svg("line", { class: "grid", x1: 0, x2: width, y1: y, y2: y }));
  }
  const slot = width / n;
  data.buckets.forEach((b, i) => {
    const x = i * slot + 1;
    const w = Math.max(1, slot - 2);
    const okH = (b.succeeded / max) * plot;
    const badH = (b.failed / max) * plot;
    const base = top + plot;
    if (b.succeeded > 0) chart.append(svg("rect", { class: "ok", x, y: base - okH, width: w, height: okH, rx: 1 }));
    if (b.failed > 0) chart.append(svg("rect", { class: "bad", x, y: base - okH - badH, width: w, height: badH, rx: 1 }));
    const tip = svg("title", {});
    tip.textContent = `${new Date(b.atMs).toISOString().slice(11, 16)} UTC: ${b.succeeded} succeeded, ${b.failed} failed`;
    const hit = svg("rect", { x: i * slot, y: top, width: slot, height: plot, fill: "transparent" });
    hit.append(tip);
    chart.append(hit);
  });
  $("chart").replaceChildren(
    el("div", { class: "chart-wrap" }, chart, el("span", { class: "chart-max" }, `${max} per min`)),
    el("div", { class: "axis-row" }, el("span", {}, "60 min ago"), el("span", {}, "30 min ago"), el("span", {}, "now")),
  );
  const ok = data.buckets.reduce((s, b) => s + b.succeeded, 0);
  const bad = data.buckets.reduce((s, b) => s + b.failed, 0);
  $("chart-legend").replaceChildren(
    el("span", { class: "ok" }, `${ok} succeeded`),
    " · ",
    el("span", { class: "bad" }, `${bad} failed`),
    ...(data.sampled ? [el("span", { class: "dim" }, " (sampled: newest tasks only)")] : []),
  );
}

/** A duration for people: 850 ms, 3.4 s, 2.1 min, 1.5 h. */
function formatMs(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

function clockLabel(atMs) {
  return new Date(atMs).toISOString().slice(11, 16);
}

/** An empty plot with three grid lines; returns the svg and its geometry. */
function plotFrame(label) {
  const width = 720;
  const height = 120;
  const top = 8;
  const bottom = 2;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", role: "img", "aria-label": label });
  const plot = height - top - bottom;
  for (const f of [0, 0.5, 1]) chart.append(svg("line", { class: "grid", x1: 0, x2: width, y1: top + plot * (1 - f), y2: top + plot * (1 - f) }));
  return { chart, width, top, plot, base: top + plot };
}

function axisRow(data) {
  const first = data.buckets[0];
  const middle = data.buckets[Math.floor(data.buckets.length / 2)];
  return el("div", { class: "axis-row" }, el("span", {}, clockLabel(first.atMs)), el("span", {}, clockLabel(middle.atMs)), el("span", {}, "now"));
}

export function renderThroughput(data) {
  const { chart, width, top, plot, base } = plotFrame(`tasks submitted, succeeded and failed per ${data.range === "day" ? "half hour" : "minute"}`);
  const n = data.buckets.length;
  const max = Math.max(1, ...data.buckets.map((b) => Math.max(b.submitted, b.succeeded + b.failed)));
  const slot = width / n;
  const points = [];
  data.buckets.forEach((b, i) => {
    const x = i * slot + 1;
    const w = Math.max(1, slot - 2);
    const okH = (b.succeeded / max) * plot;
    const badH = (b.failed / max) * plot;
    if (b.succeeded > 0) chart.append(svg("rect", { class: "ok", x, y: base - okH, width: w, height: okH, rx: 1 }));
    if (b.failed > 0) chart.append(svg("rect", { class: "bad", x, y: base - okH - badH, width: w, height: badH, rx: 1 }));
    points.push(`${i * slot + slot / 2},${base - (b.submitted / max) * plot}`);
    const tip = svg("title", {});
    tip.textContent = `${clockLabel(b.atMs)} UTC: ${b.submitted} submitted, ${b.succeeded} succeeded, ${b.failed} failed`;
    const hit = svg("rect", { x: i * slot, y: top, width: slot, height: plot, fill: "transparent" });
    hit.append(tip);
    chart.append(hit);
  });
  chart.append(svg("polyline", { class: "submitted", points: points.join(" "), fill: "none" }));
  const unit = data.range === "day" ? "per 30 min" : "per min";
  $("activity-throughput").replaceChildren(el("div", { class: "chart-wrap" }, chart, el("span", { class: "chart-max" }, `${max} ${unit}`)), axisRow(data));
  const sum = (key) => data.buckets.reduce((total, b) => total + b[key], 0);
  $("activity-legend").replaceChildren(
    el("span", { class: "submitted" }, `${sum("submitted")} submitted`),
    " · ",
    el("span", { class: "ok" }, `${sum("succeeded")} succeeded`),
    " · ",
    el("span", { class: "bad" }, `${sum("failed")} failed`),
    ...(data.sampled ? [el("span", { class: "dim" }, " (sampled: newest tasks only)")] : []),
  );
  $("activity-unit").textContent = data.range === "day" ? "half hour" : "minute";
}

export function renderLatency(data) {
  const { chart, width, plot, base } = plotFrame("percentiles of the time from due to finished");
  const n = data.buckets.length;
  const max = Math.max(1, ...data.buckets.map((b) => b.p99 ?? 0));
  const slot = width / n;
  for (const [key, cls] of [["p99", "p99"], ["p95", "p95"], ["p50", "p50"]]) {
    let run = [];
    const flush = () => {
      if (run.length === 1) chart.append(svg("circle", { class: cls, cx: run[0].split(",")[0], cy: run[0].split(",")[1], r: 2 }));
      else if (run.length > 1) chart.append(svg("polyline", { class: cls, points: run.join(" "), fill: "none" }));
      run = [];
    };
    data.buckets.forEach((b, i) => {
      if (b[key] === null) return flush();
      run.push(`${i * slot + slot / 2},${base - (b[key] / max) * plot}`);
    });
    flush();
  }
  data.buckets.forEach((b, i) => {
    if (b.p50 === null) return;
    const tip = svg("title", {});
    tip.textContent = `${clockLabel(b.atMs)} UTC: p50 ${formatMs(b.p50)}, p95 ${formatMs(b.p95)}, p99 ${formatMs(b.p99)}`;
    const hit = svg("rect", { x: i * slot, y: 0, width: slot, height: base, fill: "transparent" });
    hit.append(tip);
    chart.append(hit);
  });
  $("activity-latency").replaceChildren(el("div", { class: "chart-wrap" }, chart, el("span", { class: "chart-max" }, formatMs(max))), axisRow(data));
  const o = data.overall;
  $("latency-legend").replaceChildren(
    ...(o.finished === 0
      ? [el("span", { class: "dim" }, "nothing finished in this window")]
      : [
          el("span", { class: "p50" }, `p50 ${formatMs(o.p50)}`),
          " · ",
          el("span", { class: "p95" }, `p95 ${formatMs(o.p95)}`),
          " · ",
          el("span", { class: "p99" }, `p99 ${formatMs(o.p99)}`),
          el("span", { class: "dim" }, ` over ${o.finished} finished (wait and run together)`),
        ]),
  );
}
