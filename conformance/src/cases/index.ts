import type { ConformanceCase } from "../case.js";
import { boundaryCases } from "./boundaries.js";
import { bulkCases } from "./bulk.js";
import { claimCases } from "./claim.js";
import { clientTransitionCases } from "./client-transitions.js";
import { debounceDelayCases, delayCases, stepDelayCases } from "./delays.js";
import { flowControlCases } from "./flow-control.js";
import { debounceCases, groupCases } from "./groups.js";
import { groupIdleCases } from "./groups-idle.js";
import { groupPagedCases } from "./groups-paged.js";
import { groupRandomCases } from "./groups-random.js";
import { inputCases } from "./inputs.js";
import { lifecycleCases } from "./lifecycle.js";
import { lifecycleRandomCases } from "./lifecycle-random.js";
import { ownedWriteCases } from "./owned-writes.js";
import { rateWindowCases } from "./rate-windows.js";
import { readCases } from "./reads.js";
import { scenarioCases } from "./scenarios.js";
import { scenarioReadCases } from "./scenarios-reads.js";
import { scheduleSlotCases } from "./schedule-slots.js";
import { stepCases } from "./steps.js";
import { submitCases } from "./submit.js";

/**
 * Every case of the kit, in report order: the §14 scenarios first, then the
 * rest of the contract grouped by operation.
 */
export const CONFORMANCE_CASES: readonly ConformanceCase[] = [
  ...scenarioCases,
  ...scenarioReadCases,
  ...submitCases,
  ...readCases,
  ...clientTransitionCases,
  ...bulkCases,
  ...claimCases,
  ...ownedWriteCases,
  ...inputCases,
  ...delayCases,
  ...boundaryCases,
  ...lifecycleCases,
  ...lifecycleRandomCases,
  ...flowControlCases,
  ...groupCases,
  ...groupRandomCases,
  ...groupPagedCases,
  ...groupIdleCases,
  ...rateWindowCases,
  ...debounceCases,
  ...debounceDelayCases,
  ...scheduleSlotCases,
  ...stepCases,
  ...stepDelayCases,
];
