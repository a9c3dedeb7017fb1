import { POSTGRES } from "../helpers.ts";
import { describePurges } from "../purge-suite.ts";

describePurges([POSTGRES]);
