import { MemoryStore } from "@cairnq/conformance";
import { runConformance } from "@cairnq/conformance/vitest";
import { describe } from "vitest";

// Every case builds its own store, so the cases may run at once: most of their time is real time waited out
// (a lease of 150 ms, then 300 ms until it is surely past).
describe.concurrent("MemoryStore, cases at once", () => {
  runConformance({
    name: "MemoryStore",
    capabilities: { flowControl: true, schedules: true, claimReprobe: true, durableSteps: true, groups: true },
    createStore: () => new MemoryStore(),
  });
});
