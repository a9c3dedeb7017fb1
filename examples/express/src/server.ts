/**
 * The API process: `pnpm start` (or `tsx src/server.ts`).
 *
 * Env: `PORT` (default 3000; 0 picks a free port), `DATABASE_URL` (Postgres,
 * with `CAIRNQ_PG_SCHEMA` optional) or `CAIRNQ_SQLITE_PATH` (default ./cairnq.db).
 */
import type { AddressInfo } from "node:net";
import { createDashboard } from "@cairnq/dashboard";
import { createApp, fromLoopback } from "./app.js";
import { describeDatabase, openClient } from "./cairnq.js";

const cairnq = openClient();
// Optional (every call connects lazily), but a wrong DATABASE_URL or an
// unreadable SQLite file should stop the process now, not fail the first request.
await cairnq.connect();

// The dashboard at /admin/, for requests from this machine only (swap in your auth).
const admin = createDashboard({ client: cairnq, authorize: (req) => fromLoopback(req) });
const server = createApp(cairnq, { admin }).listen(Number(process.env.PORT ?? 3000));
server.on("listening", () => {
  const { port } = server.address() as AddressInfo;
  console.log(`API listening on http://localhost:${port} (${describeDatabase()}); dashboard at http://localhost:${port}/admin/`);
});
server.on("error", (err) => {
  console.error(`API could not listen: ${err.message}`);
  process.exitCode = 1;
  void cairnq.close();
});

// Stop accepting requests, let those in flight finish, then close the store.
let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    console.log(`API: ${signal}, shutting down`);
    void admin.close(); // ends the dashboard's live event streams, which would keep server.close() waiting
    server.close(() => {
      void cairnq.close().then(() => console.log("API stopped"));
    });
    server.closeIdleConnections();
  });
}
