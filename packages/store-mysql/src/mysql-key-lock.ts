import { StatementKeyLock } from "@cairnq/store-kysely";

/** How many lock rows the keys share; two keys in one slot only wait for each other. */
export const KEY_LOCK_SLOTS = 65_536;

/**
 * The key lock of §5.0 without session state: the row of the key's slot
 * (`CRC32(key) mod 65536`) in `cairnq_ext_key_locks`, locked by an upsert
 * inside the transaction and released when it ends — no `GET_LOCK`, which is
 * held by the connection and outlives a transaction a pooled connection
 * failed to finish. Unrelated keys of one slot serialize, a wait of one
 * transaction; the table never holds more than 65,536 rows.
 */
export const MYSQL_KEY_LOCK: StatementKeyLock = new StatementKeyLock(
  `INSERT INTO cairnq_ext_key_locks (slot) VALUES (CRC32(?) % ${KEY_LOCK_SLOTS}) ON DUPLICATE KEY UPDATE slot = slot`,
);
