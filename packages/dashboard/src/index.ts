/**
 * `@cairnq/dashboard` — a web dashboard for a CairnQ database, as a Node
 * `(req, res)` handler: queues with live counts, a filterable task list,
 * each task's detail and `explain`, retry and cancel.
 *
 * @packageDocumentation
 */
export type { DashboardHandler } from "./dashboard.js";
export { createDashboard } from "./dashboard.js";
export type { DashboardAction, DashboardOptions, DashboardSettings } from "./dashboard-options.js";
export type { DashboardErrorInfo } from "./error-report.js";
export type { TaskSummary } from "./task-summary.js";
export { cachedPrometheusText, DEFAULT_METRICS_CACHE_MS, prometheusText } from "./prometheus.js";
export type { PrometheusScrape } from "./prometheus.js";
