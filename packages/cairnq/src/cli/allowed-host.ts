/**
 * The values `cairnq dashboard --allowed-host` takes. Apart from
 * `dashboard-command.ts` so that parsing the command line does not load the
 * dashboard.
 */

/**
 * An `--allowed-host` value as a browser's `Host` header spells it (lower
 * case, `127.1` → `127.0.0.1`): a host name or address with an optional
 * `:port` (an IPv6 address in brackets); `null` when it is not one.
 *
 * @example
 * ```ts
 * allowedHostValue("Queue.Internal"); // "queue.internal"
 * allowedHostValue("http://queue.internal/"); // null
 * ```
 */
export function allowedHostValue(value: string): string | null {
  if (value === "" || /[\s/?#@\\]/.test(value)) return null;
  try {
    const url = new URL(`http://${value}/`);
    // The URL parser drops the default port; one given explicitly is kept, as a Host header would carry it.
    return url.port === "" && /:0*80$/.test(value) ? `${url.hostname}:80` : url.host;
  } catch {
    return null;
  }
}
