import { describe, expect, it } from "vitest";
import { lostInFlightMessage, namedDriverError } from "../src/connection-lost.js";

describe("namedDriverError / lostInFlightMessage (the stores' connection-lost errors)", () => {
  it("names a plain Error, keeps the driver's error as cause and copies the fields it set", () => {
    const cause = Object.assign(new Error("Connection lost"), { code: "PROTOCOL_CONNECTION_LOST", errno: undefined });
    const err = namedDriverError("MySQLConnectionLost", lostInFlightMessage("MySQL", cause), cause, ["code", "errno"], { fatal: true });
    expect(err).toBeInstanceOf(Error);
    expect(err.cause).toBe(cause);
    expect(err).toMatchObject({ name: "MySQLConnectionLost", code: "PROTOCOL_CONNECTION_LOST", fatal: true });
    expect("errno" in err).toBe(false);
    expect(err.message).toBe(
      "the connection to MySQL ended while a statement was in flight (Connection lost): the server may or may not have applied it. " +
        "Read before writing again, or retry a submit with a key (a keyed submit is idempotent); a worker retries by itself",
    );
  });
});
