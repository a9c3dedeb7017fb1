/**
 * The page and the static files it loads. The page holds no database value:
 * its script fills it from the JSON API.
 */
import { ASSETS, pageHtml } from "../assets.js";
import { requestTarget, send } from "../http.js";
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
      // Express's originalUrl holds the mount path too; never redirect to a "//host" target.
      const seen = requestTarget((req as { originalUrl?: string }).originalUrl) ?? requestTarget(req.url) ?? { path: "/", query: "" };
      if (!seen.path.endsWith("/")) {
        res.writeHead(308, { location: `${seen.path}/${seen.query}` });
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
