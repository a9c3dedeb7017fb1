/**
 * Durable steps in traces (with `tracing` on): each `ctx.step` that runs is a
 * span `step <name>`, a child of the span active where the handler called it
 * — the call's consumer span `process <queue>` unless the handler opened one
 * of its own — covering the step's function and its record. A step answered
 * from the journal (a replay) runs nothing and makes no span: a handler
 * resumed after a park would otherwise repeat every earlier step's span in
 * each of its calls. A `ctx.spawn` that submits its child does so inside a
 * producer span `send <queue>`, whose context is stored with the child
 * (`cairnq.trace`), as `ctx.submit` does, so the child's `process` span joins
 * the parent's trace.
 */
import type { SubmitInput } from "@cairnq/protocol";
import type { OtelAttributes, Telemetry } from "@cairnq/runtime";
import { markError, MESSAGING_SYSTEM, TELEMETRY_ATTRIBUTES } from "@cairnq/runtime";

/** The attributes of a step span beyond the task's (`messaging.message.id`, `cairnq.task.name`, `cairnq.task.attempt`). */
export const STEP_SPAN_ATTRIBUTES = Object.freeze({
  /** The step name the handler passed (`"page"`). */
  name: "cairnq.step.name",
  /** Which use of that name in the handler's run it is, from 1: the journal key is `page#2` for the second. */
  occurrence: "cairnq.step.occurrence",
} as const);

/** One step occurrence, as its span describes it. */
export interface StepSpanInfo {
  readonly name: string;
  readonly occurrence: number;
  readonly taskId: string;
  readonly taskName: string;
  readonly attempt: number;
}

/** The spans of durable steps (see the module comment). @internal */
export class StepSpans {
  readonly #telemetry: Telemetry;

  constructor(telemetry: Telemetry) {
    this.#telemetry = telemetry;
  }

  /** Runs `fn` (a step's function and its record) inside a span `step <name>`; a throw marks it ERROR. Without a tracer, `fn()`. */
  async run<T>(step: StepSpanInfo, fn: () => Promise<T>): Promise<T> {
    const tracer = this.#telemetry.tracer();
    if (tracer === null) return fn();
    const api = this.#telemetry.api;
    const parent = api.context.active();
    const attributes: OtelAttributes = {
      [TELEMETRY_ATTRIBUTES.system]: MESSAGING_SYSTEM,
      [TELEMETRY_ATTRIBUTES.messageId]: step.taskId,
      [TELEMETRY_ATTRIBUTES.taskName]: step.taskName,
      [TELEMETRY_ATTRIBUTES.attempt]: step.attempt,
      [STEP_SPAN_ATTRIBUTES.name]: step.name,
      [STEP_SPAN_ATTRIBUTES.occurrence]: step.occurrence,
    };
    const span = tracer.startSpan(`step ${step.name}`, { attributes }, parent);
    try {
      return await api.context.with(this.#telemetry.contextWithSpan(parent, span), fn);
    } catch (err) {
      markError(api, span, err);
      throw err;
    } finally {
      span.end();
    }
  }

  /** Submits a spawned child through `write` inside a producer span whose context is stored with the child; resolves with the child's id. */
  spawn(child: SubmitInput, write: (traced: SubmitInput) => Promise<string>): Promise<string> {
    return this.#telemetry.send(child, write, (id) => ({ id }));
  }
}
