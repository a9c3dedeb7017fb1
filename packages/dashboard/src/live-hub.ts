/**
 * The live-update hub behind `/api/events`: one poll of the counts for every
 * open event stream, plus the store's push signals (Postgres LISTEN) where it
 * has them. Pages re-read what they show when a tick says something changed.
 */
import type { ServerResponse } from "node:http";
import type { CairnQ } from "@cairnq/client";
import type { StoreSignal } from "@cairnq/protocol";
import type { ErrorReporter } from "./error-report.js";

/** A burst of push signals within this window becomes one tick. */
const PUSH_COALESCE_MS = 50;
/** At most one pushed tick per this interval (polled ticks come every `pollIntervalMs` regardless). */
const PUSH_MIN_GAP_MS = 500;

/**
 * Broadcasts `tick` (and `problem`) server-sent events to every open stream.
 * It polls and subscribes only while a stream is open, so an idle dashboard
 * costs the database nothing.
 */
export class LiveHub {
  readonly #streams = new Set<ServerResponse>();
  readonly #client: CairnQ;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | null = null;
  #unsubscribe: (() => void) | null = null;
  #fingerprint = "";
  #pushTimer: NodeJS.Timeout | null = null;
  #lastPushAtMs = 0;
  readonly #report: ErrorReporter;
  /** The id of the failing read the pages were last told about; `null` while reads succeed. */
  #problemId: string | null = null;

  constructor(client: CairnQ, intervalMs: number, report: ErrorReporter) {
    this.#client = client;
    this.#intervalMs = intervalMs;
    this.#report = report;
  }

  /** Adds an event stream (its headers already sent); it leaves the hub when it closes. */
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
      this.#problemId = null;
      this.#broadcast("tick", { changed, reason: "poll" });
    } catch (err) {
      // Reported once per outage, not on every poll; the pages get its id, not its message (it may hold secrets).
      this.#problemId ??= this.#report(err, { method: "POLL", path: "/api/events" });
      this.#broadcast("problem", { message: `cannot read the database (error ${this.#problemId}; see the server's log)` });
    }
  }

  /** Ends every open stream and stops polling and the subscription. */
  close(): void {
    this.#stop();
    for (const res of this.#streams) res.end();
    this.#streams.clear();
  }
}
