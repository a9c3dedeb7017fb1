import { MYSQL, POSTGRES } from "../support/stores.js";
import { describeClaimOrder } from "../support/claim-order.js";

describeClaimOrder(POSTGRES);
describeClaimOrder(MYSQL);
