import { MemoryStore } from "@cairnq/conformance";
import { runConformance } from "@cairnq/conformance/vitest";

runConformance({
  name: "MemoryStore",
  createStore: () => new MemoryStore(),
});
