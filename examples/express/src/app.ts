/**
 * The HTTP API. It only talks to the database through the CairnQ client:
 * submitting a task writes a row, reading status reads it back. The work
 * itself happens in the worker process (`worker.ts`).
 */
import type { DashboardHandler } from "@cairnq/dashboard";
import type { CairnQ, Task } from "cairnq";
import { InvalidArgument, SerializationError } from "cairnq";
import type { ErrorRequestHandler, Request, Response } from "express";
import express from "express";
import type { IncomingMessage } from "node:http";
import { thumbnail } from "./tasks.js";

/** The JSON shape of a task in responses: what a client polling for status needs. */
export function taskView(task: Task) {
  return {
    id: task.id,
    name: task.name,
    status: task.status,
    progress: task.progress,
    message: task.message,
    attempt: task.attempt,
    maxAttempts: task.max_attempts,
    cancelRequested: task.cancel_requested_at_ms !== null,
    result: task.result,
    error: task.error,
    createdAtMs: task.created_at_ms,
    updatedAtMs: task.updated_at_ms,
    completedAtMs: task.completed_at_ms,
  };
}

/** A 4xx answer with a message meant for the API's caller. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function parseThumbnailRequest(body: unknown): { url: string; width: number } {
  const { url, width = 256 } = (body ?? {}) as { url?: unknown; width?: unknown };
  if (typeof url !== "string" || !/^https?:\/\//.test(url) || !URL.canParse(url)) {
    throw new HttpError(400, 'body.url must be an http(s) URL of the source image, e.g. {"url": "https://example.com/cat.png"}');
  }
  if (typeof width !== "number" || !Number.isInteger(width) || width < 16 || width > 2048) {
    throw new HttpError(400, `body.width must be an integer from 16 to 2048 (pixels), got ${JSON.stringify(width)}`);
  }
  return { url, width };
}

/**
 * The idempotency key of a submit: the `Idempotency-Key` header, or
 * `idempotencyKey` in the body. Namespaced by route, so that the same key
 * sent to another endpoint can never return a thumbnail task.
 */
function idempotencyKey(req: Request): string | undefined {
  const raw = req.get("Idempotency-Key") ?? (req.body as { idempotencyKey?: unknown } | undefined)?.idempotencyKey;
  if (raw === undefined) return undefined;
  if (typeof raw !== "string" || raw.length === 0 || raw.length > 200) {
    throw new HttpError(400, "the idempotency key (Idempotency-Key header or body.idempotencyKey) must be a string of 1 to 200 characters");
  }
  return `thumbnails:${raw}`;
}

async function existingTask(cairnq: CairnQ, id: string): Promise<Task> {
  const task = await cairnq.get(id);
  if (!task) throw new HttpError(404, `no task ${id}`);
  return task;
}

/** Whether a request comes from this machine: the example's stand-in for real admin authentication. */
export function fromLoopback(req: IncomingMessage): boolean {
  const address = req.socket.remoteAddress ?? "";
  return address === "127.0.0.1" || address === "::1" || address === "::ffff:127.0.0.1";
}

export function createApp(cairnq: CairnQ, options: { admin?: DashboardHandler } = {}): express.Express {
  const app = express();
  app.disable("x-powered-by");
  // The operators' dashboard (queues, tasks, retry/cancel) at /admin/. It
  // checks the origin of its own POSTs; who may see it is up to you: here,
  // only requests from this machine (see server.ts). Put your real
  // authentication in its `authorize` hook or in a middleware before it.
  if (options.admin) app.use("/admin", options.admin);
  app.use(express.json({ limit: "16kb" }));

  app.post("/thumbnails", async (req, res) => {
    const payload = parseThumbnailRequest(req.body);
    const key = idempotencyKey(req);
    // With a key, a repeated request returns the task the first one made,
    // while it is queued or running and once it succeeded ("reuse-succeeded"),
    // so a client may safely resend after a timeout. A failed or canceled
    // task is not reused: sending the key again submits a fresh task.
    const task = await cairnq.submit(thumbnail, payload, key ? { key, conflict: "reuse-succeeded" } : {});
    res.status(202).location(`/tasks/${task.id}`).json(taskView(task));
  });

  app.get("/tasks/:id", async (req, res) => {
    res.json(taskView(await existingTask(cairnq, req.params.id)));
  });

  // A queued task ends `canceled` at once; a running one is flagged, and ends
  // `canceled` when its handler notices (or finishes): poll GET /tasks/:id.
  app.post("/tasks/:id/cancel", async (req, res) => {
    const task = await cairnq.cancel(req.params.id);
    if (task) return void res.status(202).json(taskView(task));
    const current = await existingTask(cairnq, req.params.id);
    throw new HttpError(409, `task ${current.id} is already ${current.status}; only queued or running tasks can be canceled`);
  });

  // Requeues a failed or canceled task (keeping its id), with one more attempt.
  app.post("/tasks/:id/retry", async (req, res) => {
    const task = await cairnq.retry(req.params.id);
    if (task) return void res.status(202).json(taskView(task));
    const current = await existingTask(cairnq, req.params.id);
    throw new HttpError(409, `task ${current.id} is ${current.status}; only failed or canceled tasks can be retried`);
  });

  app.use((req: Request, res: Response) => {
    res.status(404).json({ error: `no route ${req.method} ${req.path}` });
  });

  const onError: ErrorRequestHandler = (err: unknown, _req, res, _next) => {
    if (err instanceof HttpError) return void res.status(err.status).json({ error: err.message });
    // express.json() rejects malformed bodies with a 4xx `status`.
    const status = (err as { status?: unknown }).status;
    if (typeof status === "number" && status >= 400 && status < 500) {
      return void res.status(status).json({ error: (err as Error).message });
    }
    if (err instanceof InvalidArgument || err instanceof SerializationError) {
      return void res.status(400).json({ error: err.message });
    }
    console.error(err);
    res.status(500).json({ error: "internal error" });
  };
  app.use(onError);

  return app;
}
