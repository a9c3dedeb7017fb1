/**
 * `createDashboard`: a Node `(req, res)` handler serving the dashboard page,
 * its JSON API and a server-sent event stream, over any `TaskStore`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { CairnQ } from "@cairnq/client";
import type { ListInput, StoreSignal, Task, TaskStatus, TaskStore } from "@cairnq/protocol";
import { CANCELABLE_STATUSES, InvalidArgument, isTaskStatus, RETRYABLE_STATUSES, STATUSES } from "@cairnq/protocol";
import { isTaskId, taskIdTime } from "@cairnq/protocol/adapter";
import { readQueueActivity } from "./activity.js";
import { ASSETS, pageHtml } from "./assets.js";
import { explainTask } from "./explain.js";

/** What a request asks to do, as passed to {@link DashboardOptions.authorize}. */
export type DashboardAction = "read" | "retry" | "cancel" | "retry-many" | "cancel-many";

/** Options of {@link createDashboard}: give `store` or `client`. */
export interface DashboardOptions {
  /** The store to show. Give this or `client`. */
  store?: TaskStore;
  /** A client whose store to show (its `close()` stays yours). Give this or `store`. */
  client?: CairnQ;
  /** No retry or cancel: the buttons are hidden and every mutation is refused with 403. @default false */
  readOnly?: boolean;
  /**
   * Decides each request: return `false` (or a promise of it) to answer 403.
   * Called with the Node request (read your session cookie or header there)
   * and what it asks. Mutations also pass the same-origin check first.
   * @default every request is allowed
   */
  authorize?: (req: IncomingMessage, action: DashboardAction) => boolean | Promise<boolean>;
  /**
   * The path prefix in `req.url` in front of the dashboard's own paths, when
   * the framework does not strip it (a Next.js API route at `/api/admin`
   * passes `basePath: "/api/admin"`). Express's `app.use("/admin", …)` strips
   * its mount path itself: leave this unset there.
   * @default ""
   */
  basePath?: string;
  /**
   * `Host` header values to answer (e.g. `["127.0.0.1:4000", "localhost:4000"]`);
   * anything else gets 421. Guards a dashboard on a loopback address against
   * DNS rebinding. `cairnq dashboard` sets it for loopback hosts.
   * @default any host
   */
  allowedHosts?: readonly string[];
  /** How often live views re-read the counts (and push-less stores are polled). @default 2000 */
  pollIntervalMs?: number;
}

/** The handler {@link createDashboard} returns: mount it, and `close()` it on shutdown. */
export interface DashboardHandler {
  (req: IncomingMessage, res: ServerResponse, next?: unknown): void;
  /** Ends open event streams and the store subscription. The store stays open. */
  close(): Promise<void>;
}

const OPTION_KEYS = ["store", "client", "readOnly", "authorize", "basePath", "allowedHosts", "pollIntervalMs"] as const;
const MAX_BODY_BYTES = 64 * 1024;
const PAGE_LIMIT_DEFAULT = 50;
const PAGE_LIMIT_MAX = 200;
const HOUR_MS = 3_600_000;
const BUCKET_MS = 60_000;
const THROUGHPUT_CAP = 5000;
const THROUGHPUT_TTL_MS = 10_000;
/** A burst of push signals within this window becomes one tick. */
const PUSH_COALESCE_MS = 50;
/** At most one pushed tick per this interval (polled ticks come every `pollIntervalMs` regardless). */
const PUSH_MIN_GAP_MS = 500;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A task as the list shows it: no payload, result or error (those load with the task). */
export interface TaskSummary {
  id: string;
  name: string;
  queue: string;
  status: TaskStatus;
  attempt: number;
  max_attempts: number;
  priority: number;
  progress: number | null;
  message: string | null;
  worker_id: string | null;
  cancel_requested: boolean;
  run_at_ms: number;
  created_at_ms: number;
  updated_at_ms: number;
  completed_at_ms: number | null;
}

function summary(t: Task): TaskSummary {
  return {
    id: t.id,
    name: t.name,
    queue: t.queue,
    status: t.status,
    attempt: t.attempt,
    max_attempts: t.max_attempts,
    priority: t.priority,
    progress: t.progress,
    message: t.message,
    worker_id: t.worker_id,
    cancel_requested: t.cancel_requested_at_ms !== null,
    run_at_ms: t.run_at_ms,
    created_at_ms: t.created_at_ms,
    updated_at_ms: t.updated_at_ms,
    completed_at_ms: t.completed_at_ms,
  };
}

interface Filter {
  status?: TaskStatus;
  queue?: string;
  name?: string;
  key?: string;
  correlationId?: string;
}

function text(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string" || value.length > 1000) throw new HttpError(400, `filter.${field} must be a string of at most 1000 characters`);
  return value;
}

function parseFilter(raw: unknown): Filter {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== "object" || Array.isArray(raw)) throw new HttpError(400, "filter must be an object");
  const f = raw as Record<string, unknown>;
  for (const key of Object.keys(f)) {
    if (!["status", "queue", "name", "key", "correlationId"].includes(key)) {
      throw new HttpError(400, `unknown filter ${JSON.stringify(key)}; filters are status, queue, name, key, correlationId`);
    }
  }
  const out: Filter = {};
  const status = text(f.status, "status");
  if (status !== undefined) {
    if (!isTaskStatus(status)) throw new HttpError(400, `filter.status must be one of ${STATUSES.join(", ")}`);
    out.status = status;
  }
  const queue = text(f.queue, "queue");
  if (queue !== undefined) out.queue = queue;
  const name = text(f.name, "name");
  if (name !== undefined) out.name = name;
  const key = text(f.key, "key");
  if (key !== undefined) out.key = key;
  const correlationId = text(f.correlationId, "correlationId");
  if (correlationId !== undefined) out.correlationId = correlationId;
  return out;
}

function matches(task: Task, f: Filter): boolean {
  return (
    (f.status === undefined || task.status === f.status) &&
    (f.queue === undefined || task.queue === f.queue) &&
    (f.name === undefined || task.name === f.name) &&
    (f.correlationId === undefined || task.correlation_id === f.correlationId)
  );
}

function send(res: ServerResponse, status: number, body: string, type: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, {
    "content-type": type,
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    ...extra,
  });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, JSON.stringify(value), "application/json; charset=utf-8");
}

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

async function readBody(req: IncomingMessage): Promise<unknown> {
  // A framework's body parser (express.json()) may have read the stream already.
  const parsed = (req as { body?: unknown }).body;
  if (parsed !== undefined && typeof parsed === "object" && parsed !== null && !Buffer.isBuffer(parsed)) return parsed;
  if (req.readableEnded) return {};
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  const raw = Buffer.concat(chunks).toString("utf8");
  if (raw.trim() === "") return {};
  try {
    return JSON.parse(raw);
  } catch {
    throw new HttpError(400, "request body is not JSON");
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Mutations (and the POSTed list query) must come from the dashboard's own
 * page: a browser always sends `Origin` on a cross-origin POST, so an
 * `Origin` whose host differs from `Host` is refused; a request with no
 * `Origin` must say `Sec-Fetch-Site: same-origin`. JSON content type is
 * required too, which a cross-site HTML form cannot send.
 */
function checkSameOrigin(req: IncomingMessage): void {
  const host = header(req, "x-forwarded-host") ?? header(req, "host");
  const origin = header(req, "origin");
  if (origin !== undefined && origin !== "null") {
    let originHost: string;
    try {
      originHost = new URL(origin).host;
    } catch {
      throw new HttpError(403, "cross-origin request refused: malformed Origin header");
    }
    if (host === undefined || originHost !== host) throw new HttpError(403, `cross-origin request refused: Origin ${origin} is not this dashboard's origin`);
  } else if (header(req, "sec-fetch-site") !== "same-origin") {
    throw new HttpError(403, "cross-origin request refused: POSTs to the dashboard must come from its page (no Origin or Sec-Fetch-Site: same-origin header)");
  }
  const type = header(req, "content-type") ?? "";
  if (!/^application\/json\b/i.test(type)) throw new HttpError(415, "POST bodies must be application/json");
}

function checkOptions(options: DashboardOptions): void {
  if (typeof options !== "object" || options === null) throw new InvalidArgument("options", "createDashboard needs an options object: createDashboard({ store })");
  for (const key of Object.keys(options)) {
    if (!(OPTION_KEYS as readonly string[]).includes(key)) {
      throw new InvalidArgument(key, `unknown dashboard option ${JSON.stringify(key)}; valid options are ${OPTION_KEYS.join(", ")}`);
    }
  }
  if ((options.store === undefined) === (options.client === undefined)) {
    throw new InvalidArgument("store", "createDashboard needs exactly one of store or client: createDashboard({ store }) or createDashboard({ client })");
  }
  if (options.pollIntervalMs !== undefined && (!Number.isInteger(options.pollIntervalMs) || options.pollIntervalMs < 100 || options.pollIntervalMs > 600_000)) {
    throw new InvalidArgument("pollIntervalMs", `pollIntervalMs must be an integer from 100 to 600000 (ms), got ${String(options.pollIntervalMs)}`);
  }
  if (options.basePath !== undefined && (typeof options.basePath !== "string" || (options.basePath !== "" && !/^\/.*[^/]$/.test(options.basePath)))) {
    throw new InvalidArgument("basePath", `basePath must start with "/" and not end with one, e.g. "/api/admin", got ${JSON.stringify(options.basePath)}`);
  }
  if (options.authorize !== undefined && typeof options.authorize !== "function") {
    throw new InvalidArgument("authorize", "authorize must be a function (req, action) => boolean | Promise<boolean>");
  }
}

/**
 * The live-update hub: one poll of the counts for every open event stream,
 * plus the store's push signals (Postgres LISTEN) where it has them.
 */
class LiveHub {
  readonly #streams = new Set<ServerResponse>();
  readonly #client: CairnQ;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | null = null;
  #unsubscribe: (() => void) | null = null;
  #fingerprint = "";
  #pushTimer: NodeJS.Timeout | null = null;
  #lastPushAtMs = 0;

  constructor(client: CairnQ, intervalMs: number) {
    this.#client = client;
    this.#intervalMs = intervalMs;
  }

  add(res: ServerResponse): void {
    this.#streams.add(res);
    if (this.#timer === null) {
      this.#timer = setInterval(() => void this.#poll(), this.#intervalMs);
      this.#timer.unref();
      this.#unsubscribe = this.#client.store.subscribe((signal) => this.#onSignal(signal));
    }
    res.on("close", () => this.#remove(res));
  }

  #remove(res: ServerResponse): void {
    this.#streams.delete(res);
    if (this.#streams.size === 0) this.#stop();
  }

  #stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    if (this.#pushTimer !== null) clearTimeout(this.#pushTimer);
    this.#timer = null;
    this.#pushTimer = null;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
  }

  #broadcast(event: string, data: unknown): void {
    const frame = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    for (const res of this.#streams) res.write(frame);
  }

  #onSignal(signal: StoreSignal): void {
    // Coalesce a burst of NOTIFYs into one event, and send at most one every
    // PUSH_MIN_GAP_MS: each tick makes every open page re-read the counts and
    // the list, and a busy database (the channels are shared by every schema
    // of the database) can notify thousands of times a second.
    if (this.#pushTimer !== null) return;
    const delay = Math.max(PUSH_COALESCE_MS, this.#lastPushAtMs + PUSH_MIN_GAP_MS - Date.now());
    this.#pushTimer = setTimeout(() => {
      this.#pushTimer = null;
      this.#lastPushAtMs = Date.now();
      this.#broadcast("tick", { changed: true, reason: signal.reason });
    }, delay);
    this.#pushTimer.unref();
  }

  async #poll(): Promise<void> {
    try {
      const fingerprint = JSON.stringify(await this.#client.stats());
      const changed = fingerprint !== this.#fingerprint;
      this.#fingerprint = fingerprint;
      this.#broadcast("tick", { changed, reason: "poll" });
    } catch (err) {
      this.#broadcast("problem", { message: err instanceof Error ? err.message : String(err) });
    }
  }

  close(): void {
    this.#stop();
    for (const res of this.#streams) res.end();
    this.#streams.clear();
  }
}

interface Throughput {
  bucketMs: number;
  fromMs: number;
  buckets: { atMs: number; succeeded: number; failed: number }[];
  sampled: boolean;
}

/**
 * Completions per minute over the last hour, read through `list` (id order,
 * so the primary key serves it): tasks submitted within the last hour that
 * finished within it, at most {@link THROUGHPUT_CAP} per status.
 */
async function readThroughput(store: TaskStore, nowMs: number): Promise<Throughput> {
  const fromMs = Math.floor((nowMs - HOUR_MS) / BUCKET_MS) * BUCKET_MS + BUCKET_MS;
  const buckets = Array.from({ length: HOUR_MS / BUCKET_MS }, (_, i) => ({ atMs: fromMs + i * BUCKET_MS, succeeded: 0, failed: 0 }));
  let sampled = false;
  for (const status of ["succeeded", "failed"] as const) {
    let beforeId: string | undefined;
    let seen = 0;
    for (;;) {
      const input: ListInput = { status, order: "id", limit: 500 };
      if (beforeId !== undefined) input.beforeId = beforeId;
      const page = await store.list(input);
      for (const t of page) {
        if (t.completed_at_ms === null || t.completed_at_ms < fromMs) continue;
        const bucket = buckets[Math.floor((t.completed_at_ms - fromMs) / BUCKET_MS)];
        if (bucket !== undefined) bucket[status] += 1;
      }
      seen += page.length;
      const last = page[page.length - 1];
      if (last === undefined || page.length < 500 || taskIdTime(last.id) < fromMs) break;
      if (seen >= THROUGHPUT_CAP) {
        sampled = true;
        break;
      }
      beforeId = last.id;
    }
  }
  return { bucketMs: BUCKET_MS, fromMs, buckets, sampled };
}

/**
 * A Node `(req, res)` handler for the CairnQ dashboard: queues with live
 * counts, a filterable task list with keyset pagination, each task's detail
 * and `explain`, retry and cancel (single and bulk) unless `readOnly`.
 *
 * Mount it in Express (`app.use("/admin", dashboard)`), a Next.js API route
 * (with `basePath`), or `http.createServer(dashboard)`. The page loads only
 * its own assets (no CDN), renders every database value as text, and sends
 * mutations as same-origin JSON POSTs. Put authentication in front of it, or
 * decide per request in `authorize`.
 *
 * @example
 * ```ts
 * import express from "express";
 * import { CairnQ } from "cairnq";
 * import { createDashboard } from "@cairnq/dashboard";
 *
 * const cairnq = CairnQ.sqlite("./cairnq.db");
 * const app = express();
 * app.use("/admin", createDashboard({ client: cairnq, authorize: (req) => req.headers["x-admin"] === "yes" }));
 * ```
 */
export function createDashboard(options: DashboardOptions): DashboardHandler {
  checkOptions(options);
  const client = options.client ?? new CairnQ(options.store as TaskStore);
  const store = client.store;
  const readOnly = options.readOnly === true;
  const basePath = options.basePath ?? "";
  const allowedHosts = options.allowedHosts === undefined ? null : new Set(options.allowedHosts.map((h) => h.toLowerCase()));
  const hub = new LiveHub(client, options.pollIntervalMs ?? 2000);
  let throughputCache: { atMs: number; value: Promise<Throughput> } | null = null;

  const authorize = async (req: IncomingMessage, action: DashboardAction): Promise<void> => {
    if (options.authorize !== undefined && (await options.authorize(req, action)) !== true) {
      throw new HttpError(403, `not authorized to ${action === "read" ? "view the dashboard" : action.replace("-many", " in bulk")}`);
    }
  };

  const mutation = async (req: IncomingMessage, action: DashboardAction): Promise<void> => {
    if (readOnly) throw new HttpError(403, "this dashboard is read-only");
    checkSameOrigin(req);
    await authorize(req, action);
  };

  const getTask = async (id: string): Promise<Task> => {
    if (!isTaskId(id)) throw new HttpError(404, "not a task id");
    const task = await client.get(id);
    if (task === null) throw new HttpError(404, `no task ${id} (it may have been purged)`);
    return task;
  };

  const listTasks = async (body: unknown): Promise<unknown> => {
    const b = (body ?? {}) as Record<string, unknown>;
    const filter = parseFilter(b.filter);
    const limit = b.limit === undefined ? PAGE_LIMIT_DEFAULT : Number(b.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_LIMIT_MAX) throw new HttpError(400, `limit must be an integer from 1 to ${PAGE_LIMIT_MAX}`);
    if (filter.key !== undefined) {
      // A key points at one task (§3.2): show it if it passes the other filters.
      const task = await client.getByKey(filter.key);
      return { tasks: task !== null && matches(task, filter) && b.beforeId === undefined ? [summary(task)] : [], nextBeforeId: null };
    }
    const input: ListInput = { order: "id", limit };
    if (filter.status !== undefined) input.status = filter.status;
    if (filter.queue !== undefined) input.queue = filter.queue;
    if (filter.name !== undefined) input.name = filter.name;
    if (filter.correlationId !== undefined) input.correlationId = filter.correlationId;
    if (b.beforeId !== undefined && b.beforeId !== null) {
      if (typeof b.beforeId !== "string" || !isTaskId(b.beforeId)) throw new HttpError(400, "beforeId must be a task id");
      input.beforeId = b.beforeId;
    }
    const tasks = await client.list(input);
    return { tasks: tasks.map(summary), nextBeforeId: tasks.length === limit ? (tasks[tasks.length - 1]?.id ?? null) : null };
  };

  const bulkFilter = (body: unknown, action: "retry" | "cancel"): { status?: TaskStatus; queue?: string; name?: string; correlationId?: string } => {
    const filter = parseFilter((body as { filter?: unknown } | null)?.filter);
    if (filter.key !== undefined) throw new HttpError(400, "bulk actions do not take a key filter: open the task and act on it");
    const allowed: readonly TaskStatus[] = action === "retry" ? RETRYABLE_STATUSES : CANCELABLE_STATUSES;
    if (filter.status === undefined || !allowed.includes(filter.status)) {
      throw new HttpError(400, `bulk ${action} needs filter.status ${allowed.join(" or ")}`);
    }
    const { key: _key, ...rest } = filter;
    return rest;
  };

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (allowedHosts !== null && !allowedHosts.has((header(req, "host") ?? "").toLowerCase())) {
      throw new HttpError(421, "this dashboard does not answer for that host name");
    }
    const url = new URL(req.url ?? "/", "http://dashboard.invalid");
    let path = url.pathname;
    if (basePath !== "") {
      if (path !== basePath && !path.startsWith(`${basePath}/`)) throw new HttpError(404, "not a dashboard path");
      path = path.slice(basePath.length) || "/";
    }
    const method = req.method ?? "GET";
    const get = method === "GET" || method === "HEAD";

    if (path === "/" && get) {
      await authorize(req, "read");
      // Relative asset and API URLs need the page's URL to end with "/".
      const seen = new URL((req as { originalUrl?: string }).originalUrl ?? req.url ?? "/", "http://dashboard.invalid");
      if (!seen.pathname.endsWith("/")) {
        res.writeHead(308, { location: `${seen.pathname}/${seen.search}` });
        res.end();
        return;
      }
      send(res, 200, pageHtml({ readOnly }), "text/html; charset=utf-8", { "content-security-policy": CSP });
      return;
    }
    const asset = ASSETS.get(path);
    if (asset !== undefined && get) {
      send(res, 200, asset.body, asset.type, { "cache-control": "no-cache" });
      return;
    }
    if (path === "/api/overview" && get) {
      await authorize(req, "read");
      const stats = await client.stats();
      sendJson(res, 200, { nowMs: Date.now(), readOnly, pushWakeups: store.capabilities.pushWakeups, queues: stats });
      return;
    }
    if (path === "/api/throughput" && get) {
      await authorize(req, "read");
      const now = Date.now();
      if (throughputCache === null || now - throughputCache.atMs > THROUGHPUT_TTL_MS) {
        throughputCache = { atMs: now, value: readThroughput(store, now) };
        throughputCache.value.catch(() => (throughputCache = null));
      }
      sendJson(res, 200, await throughputCache.value);
      return;
    }
    if (path === "/api/events" && get) {
      await authorize(req, "read");
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff", connection: "keep-alive" });
      res.write(`retry: 3000\nevent: hello\ndata: ${JSON.stringify({ pushWakeups: store.capabilities.pushWakeups })}\n\n`);
      hub.add(res);
      return;
    }
    if (path === "/api/tasks" && method === "POST") {
      // A read, but POSTed so that filter values (keys, correlation ids) never appear in URLs.
      checkSameOrigin(req);
      await authorize(req, "read");
      sendJson(res, 200, await listTasks(await readBody(req)));
      return;
    }
    const one = /^\/api\/tasks\/([^/]+)(?:\/(retry|cancel))?$/.exec(path);
    if (one !== null) {
      const id = decodeURIComponent(one[1] as string);
      const action = one[2] as "retry" | "cancel" | undefined;
      if (action === undefined && get) {
        await authorize(req, "read");
        const task = await getTask(id);
        const now = Date.now();
        const [activity, children, parent] = await Promise.all([
          task.status === "queued" ? readQueueActivity(store, task, now) : Promise.resolve(null),
          client.list({ rootId: task.root_id ?? task.id, order: "id", limit: PAGE_LIMIT_MAX }),
          task.parent_id === null ? Promise.resolve(null) : client.get(task.parent_id),
        ]);
        sendJson(res, 200, {
          nowMs: now,
          task,
          explanation: explainTask(task, { nowMs: now, activity }),
          parent: parent === null ? null : summary(parent),
          children: children.filter((c) => c.parent_id === task.id).map(summary),
        });
        return;
      }
      if (action !== undefined && method === "POST") {
        await mutation(req, action);
        await readBody(req);
        const before = await getTask(id);
        const after = action === "retry" ? await client.retry(id) : await client.cancel(id);
        if (after === null) {
          const verb = action === "retry" ? "retried (only failed or canceled tasks can be)" : "canceled (only queued or running tasks can be)";
          throw new HttpError(409, `task ${id} is ${before.status} and cannot be ${verb}`);
        }
        sendJson(res, 200, { changed: 1, task: summary(after) });
        return;
      }
    }
    const bulk = /^\/api\/bulk\/(retry|cancel)$/.exec(path);
    if (bulk !== null && method === "POST") {
      const action = bulk[1] as "retry" | "cancel";
      await mutation(req, action === "retry" ? "retry-many" : "cancel-many");
      const filter = bulkFilter(await readBody(req), action);
      const changed = action === "retry" ? await client.retryMany(filter) : await client.cancelMany(filter);
      sendJson(res, 200, { changed });
      return;
    }
    const known = path === "/" || asset !== undefined || path.startsWith("/api/");
    throw new HttpError(known ? 405 : 404, known ? `${method} is not allowed here` : "no such dashboard page");
  };

  const handler = ((req: IncomingMessage, res: ServerResponse): void => {
    route(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.end();
        return;
      }
      if (err instanceof HttpError) return sendJson(res, err.status, { error: err.message });
      if (err instanceof InvalidArgument) return sendJson(res, 400, { error: err.message });
      sendJson(res, 500, { error: err instanceof Error ? err.message : "internal error" });
    });
  }) as DashboardHandler;
  handler.close = () => {
    hub.close();
    return Promise.resolve();
  };
  return handler;
}
