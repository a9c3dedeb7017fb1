/**
 * The HTTP plumbing every dashboard route shares: the error that answers
 * with a status code, responses carrying the security headers, the JSON body
 * reader, and the same-origin check a POST must pass.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** Request bodies are small JSON documents (a filter, an empty object): anything larger is refused. */
const MAX_BODY_BYTES = 64 * 1024;

/** Thrown by a route to answer `status` with `{ error: message }`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A body's `limit`: absent is `fallback`; otherwise a JSON integer from 1 to
 * `max`, or 400 naming it. Never `Number()`: that read "0x10", `true`, `[3]`,
 * " 2 " and "1e1" as page sizes.
 */
export function bodyLimit(value: unknown, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > max) {
    throw new HttpError(400, `limit must be a JSON integer from 1 to ${max}, got ${JSON.stringify(value) ?? typeof value}`);
  }
  return value;
}

/** Answers with `body` and the headers every dashboard response carries (no caching, no sniffing, no framing, no referrer). */
export function send(res: ServerResponse, status: number, body: string, type: string, extra: Record<string, string> = {}): void {
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

/** Answers with `value` as JSON. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, JSON.stringify(value), "application/json; charset=utf-8");
}

/** The request's JSON body (`{}` when empty), at most 64 KiB. */
export async function readBody(req: IncomingMessage): Promise<unknown> {
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

/** A request target's path (still percent-encoded, as sent) and query (with its "?", or ""). */
export interface RequestTarget {
  readonly path: string;
  readonly query: string;
}

/**
 * Splits an origin-form request target (`/path?query`) by hand, or answers
 * `null` for anything else. `new URL(target, base)` must not be used: it
 * reads `//host/path` and `/\host/path` as a host and a path, resolves `..`,
 * and so serves `//x/admin/metrics` as `/admin/metrics` behind a proxy that
 * guards the prefix `/admin` — the path the dashboard routes on must be the
 * one the proxy saw.
 */
export function requestTarget(raw: string | undefined): RequestTarget | null {
  if (raw === undefined || !raw.startsWith("/") || raw[1] === "/" || raw.includes("\\") || raw.includes("#")) return null;
  const q = raw.indexOf("?");
  return q === -1 ? { path: raw, query: "" } : { path: raw.slice(0, q), query: raw.slice(q) };
}

/** One request header's value (the first, when repeated). */
export function header(req: IncomingMessage, name: string): string | undefined {
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
export function checkSameOrigin(req: IncomingMessage): void {
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
