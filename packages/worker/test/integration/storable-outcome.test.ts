import { POSTGRES } from "../support/stores.js";
import { describeUnstorableOutcomes } from "../support/unstorable-outcomes.js";

describeUnstorableOutcomes(POSTGRES);
