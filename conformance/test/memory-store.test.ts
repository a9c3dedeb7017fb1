import { MemoryStore } from "@cairnq/conformance";
import { runConformance } from "@cairnq/conformance/vitest";

runConformance({
  name: "MemoryStore",
  capabilities: { flowControl: true, schedules: true, claimReprobe: true, durableSteps: true, groups: true },
  createStore: () => new MemoryStore(),
});
