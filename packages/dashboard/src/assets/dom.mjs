// DOM and HTTP helpers of the dashboard page, shared by its modules. Every
// value from the database reaches the DOM through textContent or an attribute
// set with setAttribute, never as markup.

export const $ = (id) => document.getElementById(id);

/** Builds an element; string and number children become text nodes. */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/**
 * A value from the database as an inline element: a `<bdi>` (`unicode-bidi: isolate`), so a value holding a
 * bidi override (a group ending in U+202E) or right-to-left text cannot reorder the text around it.
 */
export function stored(value, attrs) {
  return el("bdi", attrs, value === null || value === undefined ? "" : String(value));
}

/**
 * Stored JSON as text (`indent` as JSON.stringify's), with the bidi controls and the line and paragraph
 * separators JSON.stringify leaves raw written as JSON escapes (`\u202e`, still valid JSON), so one in a
 * string cannot reorder the rest of its line.
 */
export function jsonText(value, indent) {
  return (JSON.stringify(value, null, indent) ?? "null").replace(/[\u202a-\u202e\u2066-\u2069\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

// The bidi embeddings, overrides and isolates, and the line and paragraph separators: what the CLI writes out too.
const BIDI_CONTROLS = /([\u202a-\u202e\u2066-\u2069\u2028\u2029])/;

/**
 * Text built around values from the database (the server's explanation), where the values cannot be isolated
 * one by one: each bidi control is shown as its code point (`U+202E`) instead of applied, so a value ending in
 * an override cannot mirror the rest of the paragraph.
 */
export function inertBidi(text) {
  return String(text)
    .split(BIDI_CONTROLS)
    .map((part, i) =>
      i % 2 === 0 ? part : el("span", { class: "ctl", title: "a bidi control character from the database, shown rather than applied" }, `U+${part.charCodeAt(0).toString(16).toUpperCase()}`),
    )
    .filter((part) => part !== "");
}

/** Children for replaceChildren: arrays flattened, null/false dropped. */
export function nodes(...items) {
  return items.flat(Infinity).filter((item) => item !== null && item !== undefined && item !== false);
}

export function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, String(value));
  return node;
}

export async function api(path, body) {
  const init =
    body === undefined
      ? { headers: { accept: "application/json" } }
      : { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body: JSON.stringify(body) };
  const res = await fetch(path, init);
  let data = {};
  try {
    data = await res.json();
  } catch {
    data = {};
  }
  if (!res.ok) throw Object.assign(new Error(data.error || `HTTP ${res.status}`), { status: res.status });
  return data;
}
