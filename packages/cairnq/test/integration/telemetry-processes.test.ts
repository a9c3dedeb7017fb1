/**
 * Traces across real processes, on a SQLite file and on Postgres: an API
 * process submits inside an active span; a worker process with its own SDK
 * and exporter runs the task; its `process <queue>` span carries the
 * submitter's trace — linked by default, parented with `relation: "child"`
 * — including on the attempt that runs after the first worker was
 * SIGKILLed mid-handler (the trace context survives lease recovery because
 * it is stored with the task).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { closeAdmin, dropSchema, fixtureArg, freshSchemaName } from "../support/postgres.ts";
import type { Child, FixtureMessage } from "../support/processes.ts";
import { Children } from "../support/processes.ts";

interface SpanData {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  parentTraceId: string | null;
  links: { traceId: string; spanId: string }[];
  attributes: Record<string, unknown>;
  status: SpanStatusCode;
}

const children = new Children();
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await children.reap();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});
afterAll(closeAdmin);

const BACKENDS: { label: string; fresh(): Promise<string> }[] = [
  {
    label: "SQLite",
    async fresh() {
      const dir = await mkdtemp(join(tmpdir(), "cairnq-traces-"));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      return `sqlite:${join(dir, "cairnq.db")}`;
    },
  },
  {
    label: "Postgres",
    async fresh() {
      const schema = await freshSchemaName("cq_traces");
      cleanups.push(() => dropSchema(schema));
      return fixtureArg(schema);
    },
  },
];

function spans(child: Child): SpanData[] {
  return child.of("span").map((message) => message.span as SpanData);
}

/** Runs the API process to its end: the task id, the request span, and the producer span it made. */
async function submitFromApi(backend: string): Promise<{ taskId: string; request: { traceId: string; spanId: string }; send: SpanData }> {
  const api = children.spawn("API process", "traced-producer.mjs", [backend, JSON.stringify({ name: "traced", payload: { n: 1 } })]);
  const submitted = await api.next("submitted");
  await api.next("done");
  expect(await api.exitWithin(20_000), api.tail()).toEqual({ code: 0, signal: null });
  const send = spans(api).find((span) => span.kind === SpanKind.PRODUCER);
  expect(send, api.tail()).toBeDefined();
  return { taskId: String(submitted.taskId), request: { traceId: String(submitted.requestTraceId), spanId: String(submitted.requestSpanId) }, send: send as SpanData };
}

function startWorker(backend: string, label: string, config: Record<string, unknown>): Child {
  return children.spawn(label, "traced-worker.mjs", [backend, JSON.stringify({ concurrency: 1, leaseMs: 1_000, pollIntervalMs: 50, ...config })]);
}

function started(child: Child, taskId: string): Promise<FixtureMessage> {
  return child.waitUntil(`the handler of ${taskId} to start`, (messages) => messages.find((m) => m.type === "started" && m.taskId === taskId));
}

describe.each(BACKENDS)("traces across processes on $label", (backend) => {
  for (const relation of ["link", "child"] as const) {
    it(`relation "${relation}": the worker's consumer span carries the API's trace, on the first attempt and after a SIGKILL`, async () => {
      const db = await backend.fresh();
      const doomed = startWorker(db, "worker A (hangs, then SIGKILL)", { relation, hold: "forever" });
      await doomed.next("ready");
      const { taskId, request, send } = await submitFromApi(db);

      // The API's producer span: a child of the request span, named for the queue, carrying the task id.
      expect(send).toMatchObject({ name: "send default", traceId: request.traceId, parentSpanId: request.spanId });
      expect(send.attributes).toMatchObject({ "messaging.system": "cairnq", "messaging.operation.type": "send", "messaging.message.id": taskId });

      const first = await started(doomed, taskId);
      expect(first.attempt).toBe(1);
      // The handler sees the metadata it was submitted with (none), not the stored trace context.
      expect(first.metadata).toEqual({});
      if (relation === "child") expect(first.traceId).toBe(send.traceId);
      else expect(first.traceId).not.toBe(send.traceId);

      doomed.proc.kill("SIGKILL");
      expect(await doomed.exitWithin(10_000)).toEqual({ code: null, signal: "SIGKILL" });

      const rescuer = startWorker(db, "worker B", { relation });
      await rescuer.next("ready");
      const second = await started(rescuer, taskId);
      expect(second.attempt).toBe(2);
      const consumer = await rescuer.waitUntil("the consumer span", () => spans(rescuer).find((span) => span.name === "process default"));
      const work = await rescuer.waitUntil("the handler's own span", () => spans(rescuer).find((span) => span.name === "handler work"));

      expect(consumer.kind).toBe(SpanKind.CONSUMER);
      expect(consumer.attributes).toMatchObject({
        "messaging.system": "cairnq",
        "messaging.operation.type": "process",
        "messaging.destination.name": "default",
        "messaging.message.id": taskId,
        "cairnq.task.name": "traced",
        "cairnq.task.attempt": 2,
      });
      expect(consumer.status).toBe(SpanStatusCode.UNSET);
      expect(consumer.spanId).toBe(second.spanId);
      if (relation === "child") {
        expect(consumer).toMatchObject({ traceId: send.traceId, parentSpanId: send.spanId, links: [] });
      } else {
        expect(consumer.parentSpanId).toBeNull();
        expect(consumer.traceId).not.toBe(send.traceId);
        expect(consumer.links).toEqual([{ traceId: send.traceId, spanId: send.spanId }]);
      }
      // The user's span inside the handler nests under the consumer span.
      expect(work).toMatchObject({ traceId: consumer.traceId, parentSpanId: consumer.spanId });
      // Nothing else: no spans for polls, claims, heartbeats or the lease recovery.
      expect(spans(rescuer).map((span) => span.name).sort()).toEqual(["handler work", "process default"]);

      const exit = await children.stop(rescuer);
      expect(exit, rescuer.tail()).toEqual({ code: 0, signal: null });
    }, 60_000);
  }
});
