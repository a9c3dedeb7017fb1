/**
 * The client's `BackpressureGate`: the §5.6 gate of `@cairnq/protocol` on the
 * client's timers, so that it can be built from options alone.
 */
import type { BackpressureGateOptions } from "@cairnq/protocol";
import type { BackpressureGateDeps } from "@cairnq/protocol/sdk";
import { BackpressureGateCore } from "@cairnq/protocol/sdk";
import { monotonicMs, nextTurn, sleep } from "@cairnq/runtime";

/**
 * The §5.6 backpressure gate ({@link BackpressureGateCore}) running on the
 * client's timers: a ref'd sleep (a submit waiting for headroom is awaited by
 * someone, so it must hold the process open), a monotonic clock, and
 * `setImmediate` between a shared probe and the next. {@link CairnQ} builds
 * one from its `maxQueueDepth` option and installs it on
 * `store.queueDepthGate`; use it directly only to gate a store without a
 * client.
 *
 * @example
 * ```ts
 * store.queueDepthGate = new BackpressureGate({ maxQueueDepth: { emails: 10_000 } });
 * await store.submit({ name: "send", queue: "emails" }); // waits while 10 000 emails are queued
 * ```
 */
export class BackpressureGate extends BackpressureGateCore {
  /**
   * @param options - See `BackpressureGateOptions` (`@cairnq/protocol`).
   * @param deps - Replaces the client's timers, e.g. to pin time in tests. @default the client's sleep, clock and `setImmediate`
   * @throws InvalidArgument when an option is out of range.
   */
  constructor(options: BackpressureGateOptions, deps: Partial<BackpressureGateDeps> = {}) {
    super(options, { sleep: deps.sleep ?? ((ms, signal) => sleep(ms, { signal })), now: deps.now ?? monotonicMs, nextTurn: deps.nextTurn ?? nextTurn });
  }
}
