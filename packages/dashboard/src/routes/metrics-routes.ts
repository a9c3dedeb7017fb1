/**
 * `GET /metrics`: the Prometheus text of `prometheus.ts`, for a scraper.
 * Its action is `"read"`, so `authorize` decides it as it decides the page
 * (a scraper sends its bearer token or basic auth; check it there).
 */
import { send } from "../http.js";
import { cachedPrometheusText } from "../prometheus.js";
import type { Route, RouteContext } from "../router.js";

/** `GET /metrics`, one cached read for every scraper within `cacheMs`. */
export function metricsRoutes(ctx: RouteContext, cacheMs: number): Route[] {
  const scrape = cachedPrometheusText(ctx.client.store, cacheMs);
  return [
    {
      method: "GET",
      path: "/metrics",
      action: "read",
      async handle(_req, res) {
        const { contentType, text } = await scrape();
        send(res, 200, text, contentType);
      },
    },
  ];
}
