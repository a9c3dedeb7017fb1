/** The protocol this package implements; a database holding another value is refused (§11). */
export const PROTOCOL_VERSION = 1;

/** The schema version after every migration of protocol v1 (§3.6); informational only. */
export const SCHEMA_VERSION = 10;
