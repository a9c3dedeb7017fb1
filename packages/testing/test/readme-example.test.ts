import { expect, it } from "vitest";
import { createTestQueue } from "@cairnq/testing";

it("retries a failed charge after its backoff and sends the reminder a day later, in milliseconds", async () => {
  const queue = await createTestQueue();
  const worker = queue.worker({ retryBackoffMs: 1000 });
  worker.task("charge", async (ctx, { orderId }: { orderId: string }) => {
    if (ctx.attempt === 1) throw new Error("the payment provider timed out");
    return { charged: orderId };
  });
  worker.task("reminder", async () => "sent");

  // Runs at once: nothing here waits for time.
  const charge = await queue.client.submit("charge", { orderId: "o-1" });
  const first = await queue.drain();
  expect(first.ran.map((run) => [run.attempt, run.outcome])).toEqual([[1, "retrying"]]);

  // Attempt 1's backoff is 500–1000 ms: one virtual second later, attempt 2 has run.
  const second = await queue.advance(1000);
  expect(second.ran.map((run) => [run.attempt, run.outcome])).toEqual([[2, "succeeded"]]);
  expect(await queue.client.get(charge.id)).toMatchObject({ status: "succeeded", result: { charged: "o-1" } });

  // A task delayed by a day runs once the clock has moved a day, and not a millisecond before.
  const reminder = queue.client.call("reminder", {}, { runAtDelayMs: 86_400_000, waitTimeoutMs: 2 * 86_400_000 });
  await queue.advance(86_400_000 - 1);
  expect((await queue.drain()).ran).toEqual([]);
  await queue.advance(1);
  expect(await reminder).toBe("sent");

  await queue.close();
});
