/**
 * The page and the static files it loads. The page holds no database value:
 * its script fills it from the JSON API.
 */
import { ASSETS, pageHtml } from "../assets.js";
import { send } from "../http.js";
import type { Route, RouteContext } from "../router.js";

/** Only the page's own script and styles; no framing, no form posts, no base URL changes. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** `GET /` (the page) and `GET /assets/*` (its script, styles and icon, served without asking `authorize`). */
export function pageRoutes(ctx: RouteContext): Route[] {
  const page: Route = {
    method: "GET",
    path: "/",
    action: "read",
    handle(req, res) {
      // Relative asset and API URLs need the page's URL to end with "/".
      const seen = new URL((req as { originalUrl?: string }).originalUrl ?? req.url ?? "/", "http://dashboard.invalid");
      if (!seen.pathname.endsWith("/")) {
        res.writeHead(308, { location: `${seen.pathname}/${seen.search}` });
        res.end();
        return;
      }
      send(res, 200, pageHtml({ readOnly: ctx.readOnly }), "text/html; charset=utf-8", { "content-security-policy": CSP });
    },
  };
  const assets = [...ASSETS].map(
    ([path, asset]): Route => ({
      method: "GET",
      path,
      action: null,
      handle(_req, res) {
        send(res, 200, asset.body, asset.type, { "cache-control": "no-cache" });
      },
    }),
  );
  return [page, ...assets];
}
