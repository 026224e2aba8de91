// Formatting shared by the views. Energy is integer µJ on the wire (§5); its
// words come from Rust (`jcp::energy::format_uj`, the one formatter), never from here.

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(2)} GiB`;
}

export function formatTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** What each provenance grade means, in words (the table's tooltip and the legend's text). */
export const GRADE_MEANING: Record<string, string> = {
  HwShunt: "hardware reading from a live, plausible counter",
  ModelBased: "model calibrated on this host",
  Estimator: "nothing calibrated (e.g. default power)",
};

/** Creates an element with a class and text (text is never parsed as HTML). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Unix seconds as a UTC date and time (`2026-01-01 09:20 UTC`): run records are signed in UTC. */
export function formatUnixUtc(secs: number): string {
  const iso = new Date(secs * 1000).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** A long hex id or did:key shortened for a table cell (the full value is the title). */
export function shortId(id: string, keep = 10): HTMLElement {
  const c = el("code", "id", id.length > keep + 2 ? `${id.slice(0, keep)}…` : id);
  c.title = id;
  return c;
}

/** A small table with a header row; returns the table and its body. */
export function table(cls: string, heads: string[]): [HTMLTableElement, HTMLTableSectionElement] {
  const t = el("table", cls);
  const tr = el("tr");
  for (const h of heads) tr.append(el("th", undefined, h));
  const thead = el("thead");
  thead.append(tr);
  const body = el("tbody");
  t.append(thead, body);
  return [t, body];
}

/** A key/value table without a header row: the table, and a function that
 *  adds the row `key | value` (the row gets class `rowCls`). */
export function kvTable(cls: string): [HTMLTableElement, (key: string, value: string | HTMLElement, rowCls?: string) => void] {
  const t = el("table", cls);
  const body = el("tbody");
  t.append(body);
  const add = (key: string, value: string | HTMLElement, rowCls?: string) => {
    const tr = el("tr", rowCls);
    const td = el("td");
    if (typeof value === "string") td.textContent = value;
    else td.append(value);
    tr.append(el("th", undefined, key), td);
    body.append(tr);
  };
  return [t, add];
}
