/**
 * The durable-steps half of {@link MemoryStore} (`TaskStepStore`): the
 * journal and the messages of each task in maps, decided with the same
 * `PARK` rule and parameter checks the SQL stores compile. Everything runs
 * synchronously inside one call, which is the memory store's per-task lock.
 */
import type { ParkOutcome, ParkStepInput, RecordStepInput, SendInput, SendOutcome, SpawnStepInput, StepRecord, SubmitInput, Task } from "@cairnq/protocol";
import { LostLease } from "@cairnq/protocol";
import type { NormalizedSubmit, Params } from "@cairnq/protocol/adapter";
import { decideRow, hasMessageParams, holds, holdsJoin, OWNER, PARK, parkStepParams, recordStepParams, requireName, requireSendTarget, requireSpawnChild, sendParams, x } from "@cairnq/protocol/adapter";

interface Message {
  readonly name: string;
  readonly seq: number;
  readonly payload: string;
  /** When it was sent (the store's clock): a wait with a deadline takes only messages sent before it. */
  readonly atMs: number;
  consumedBy: string | null;
}

/** What the steps need of the memory store's task table. */
export interface MemoryTaskTable {
  get(id: string): Task | undefined;
  set(row: Task): void;
  now(): number;
  /** The submit input checked and encoded (`normalizeSubmit`), nothing written. */
  check(input: SubmitInput): NormalizedSubmit;
  /** Inserts a checked task with root `rootId` (no gate, no key), in its group when it has one; its row. */
  insert(submit: NormalizedSubmit, rootId: string): Task;
}

const OWNED = x.and(x.eq(x.col("id"), x.param("taskId", "text")), OWNER);

/** See the module comment. */
export class MemorySteps {
  readonly #journals = new Map<string, Map<string, StepRecord>>();
  readonly #messages = new Map<string, Message[]>();

  constructor(private readonly tasks: MemoryTaskTable) {}

  steps(taskId: string): StepRecord[] {
    const id = requireName(taskId, "taskId");
    if (this.tasks.get(id) === undefined) return [];
    const now = this.tasks.now();
    // A sleep whose wake time has come reads as done: nothing is written when it ends.
    const shown = (r: StepRecord): StepRecord => (r.kind === "sleep" && r.status === "waiting" && r.wakeAtMs !== null && r.wakeAtMs <= now ? { ...r, status: "done" } : r);
    return [...(this.#journals.get(id)?.values() ?? [])].sort((a, b) => a.seq - b.seq || (a.name < b.name ? -1 : 1)).map((r) => structuredClone(shown(r)));
  }

  recordStep(input: RecordStepInput): void {
    const params = recordStepParams(input);
    const task = this.#fence(params);
    this.#write(task, params, {
      kind: input.kind,
      status: input.status,
      result: params.result === null ? null : JSON.parse(params.result),
      error: params.error === null ? null : JSON.parse(params.error),
      wakeAtMs: null,
      waitingFor: null,
    });
  }

  parkStep(input: ParkStepInput): ParkOutcome {
    const params = parkStepParams(input);
    const task = this.#fence(params);
    if (params.kind === "wait") {
      const message = (this.#messages.get(task.id) ?? []).find((m) => m.consumedBy === null && m.name === params.message && m.atMs < params.messagesBeforeMs);
      if (message !== undefined) {
        message.consumedBy = String(params.stepName);
        const result = JSON.parse(message.payload) as unknown;
        this.#write(task, params, { kind: "wait", status: "done", result, error: null, wakeAtMs: null, waitingFor: null });
        return { kind: "ready", result };
      }
      if (params.expired) {
        this.#write(task, params, { kind: "wait", status: "done", result: null, error: null, wakeAtMs: null, waitingFor: null });
        return { kind: "ready", result: null };
      }
    } else if (params.kind === "join") {
      const rows = params.childIds.map((id) => this.tasks.get(id) ?? null);
      if (!rows.some(holdsJoin)) {
        const result = structuredClone(rows);
        this.#write(task, params, { kind: "join", status: "done", result, error: null, wakeAtMs: null, waitingFor: null });
        return { kind: "ready", result };
      }
    }
    const now = this.tasks.now();
    const wakeAtMs = params.untilMs === null ? now + params.delayMs : params.untilMs;
    this.#write(task, params, {
      kind: params.kind as StepRecord["kind"],
      status: "waiting",
      result: null,
      error: null,
      wakeAtMs,
      waitingFor: params.waitingFor === null ? null : (JSON.parse(params.waitingFor) as StepRecord["waitingFor"]),
    });
    const decision = decideRow(PARK, task, params, now);
    if (decision.kind !== "applied") throw new LostLease(task.id);
    this.tasks.set(decision.row);
    return { kind: "parked", status: decision.row.status === "canceled" ? "canceled" : "queued" };
  }

  spawnStep(input: SpawnStepInput): string {
    const params = recordStepParams({ ...input, kind: "spawn", status: "done", result: null });
    // Checked before anything is written, as the SQL stores do; the root is set from the parent row below.
    const child = { ...requireSpawnChild(input.child), parentId: String(params.taskId), rootId: null };
    const checked = this.tasks.check(child);
    const task = this.#fence(params);
    const existing = this.#journals.get(task.id)?.get(String(params.stepName));
    if (existing?.status === "done") return existing.result as string;
    const row = this.tasks.insert(checked, task.root_id ?? task.id);
    this.#write(task, params, { kind: "spawn", status: "done", result: row.id, error: null, wakeAtMs: null, waitingFor: null });
    return row.id;
  }

  send(input: SendInput): SendOutcome {
    const params = sendParams(input);
    const task = this.tasks.get(params.taskId);
    requireSendTarget(params.taskId, params.name, task);
    const list = this.#messages.get(task.id) ?? [];
    const seq = list.filter((m) => m.name === params.name).length + 1;
    list.push({ name: params.name, seq, payload: params.payload, atMs: this.tasks.now(), consumedBy: null });
    this.#messages.set(task.id, list);
    const woke = this.#wake(task, (entry) => entry.kind === "wait" && entry.waitingFor === params.name);
    return { taskId: task.id, name: params.name, woke };
  }

  hasMessage(taskId: string, name: string, sentBeforeMs?: number): boolean {
    const params = hasMessageParams(taskId, name, sentBeforeMs);
    return (this.#messages.get(params.taskId) ?? []).some((m) => m.consumedBy === null && m.name === params.name && m.atMs < params.messagesBeforeMs);
  }

  wakeJoin(parentId: string): boolean {
    const task = this.tasks.get(requireName(parentId, "parentId"));
    return task !== undefined && this.#wake(task, (entry) => entry.kind === "join");
  }

  #wake(task: Task, waitingOn: (entry: StepRecord) => boolean): boolean {
    const now = this.tasks.now();
    if (task.status !== "queued" || task.run_at_ms <= now) return false;
    const entries = [...(this.#journals.get(task.id)?.values() ?? [])];
    if (!entries.some((entry) => entry.status === "waiting" && waitingOn(entry))) return false;
    this.tasks.set({ ...task, run_at_ms: now, updated_at_ms: now });
    return true;
  }

  #fence(params: Params): Task {
    const task = this.tasks.get(String(params.taskId));
    if (task === undefined || !holds(OWNED, { row: task as never, params, nowMs: this.tasks.now() })) throw new LostLease(String(params.taskId));
    return task;
  }

  #write(task: Task, params: Params, entry: Omit<StepRecord, "name" | "seq" | "attempt" | "atMs">): void {
    const name = String(params.stepName);
    const journal = this.#journals.get(task.id) ?? new Map<string, StepRecord>();
    const existing = journal.get(name);
    if (existing?.status === "done") throw new LostLease(task.id);
    journal.set(name, { ...entry, name, seq: existing?.seq ?? Number(params.seq), attempt: task.attempt, atMs: this.tasks.now() });
    this.#journals.set(task.id, journal);
  }
}
