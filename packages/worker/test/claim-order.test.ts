import { SQLITE } from "./support/stores.js";
import { describeClaimOrder } from "./support/claim-order.js";

describeClaimOrder(SQLITE);
