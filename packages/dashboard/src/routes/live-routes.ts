/**
 * The server-sent event stream that nudges open pages when something
 * changed, so they re-read what they show.
 */
import type { Route, RouteContext } from "../router.js";

/** `GET /api/events`: `hello`, then `tick` and `problem` events from the live hub. */
export function liveRoutes(ctx: RouteContext): Route[] {
  return [
    {
      method: "GET",
      path: "/api/events",
      action: "read",
      handle(_req, res) {
        res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff", connection: "keep-alive" });
        res.write(`retry: 3000\nevent: hello\ndata: ${JSON.stringify({ pushWakeups: ctx.client.store.capabilities.pushWakeups })}\n\n`);
        ctx.hub.add(res);
      },
    },
  ];
}
