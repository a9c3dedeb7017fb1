/**
 * The v1 task table's name (§3.1), in a module of its own so that the rule compiler (a parent
 * condition's subquery) and the statements built on it share it without importing each other.
 */

/** The task table (§3.1). */
export const TASKS_TABLE = "cairnq_tasks";
