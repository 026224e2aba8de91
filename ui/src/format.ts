// Formatting shared by the views. Energy is integer µJ on the wire (§5); its
// words come from Rust (`jcp::energy::format_uj`, the one formatter), never from here.
import type { UiError } from "./gen/UiError";

// Typed energy is read by `parseEnergy`, which follows `jcp::energy::parse_energy`
// case for case (both read `conformance/jcp/v1/energy-text.json`).

const UNIT_UJ: Record<string, bigint> = {
  "µJ": 1n,
  uJ: 1n,
  mJ: 1_000n,
  J: 1_000_000n,
  kJ: 1_000_000_000n,
  MJ: 1_000_000_000_000n,
  Wh: 3_600_000_000n,
  kWh: 3_600_000_000_000n,
};

/** Energy as a person types it (`50 J`, `1.5 kWh`) in µJ, or why not (an
 *  `energy-text` refusal in words): exact, never rounded; the unit is
 *  required (case matters: mJ is not MJ); at most 2^53 − 1 µJ. */
export function parseEnergy(text: string): { uj: number } | { error: UiError } {
  const refuse = (why: string) => ({ error: { code: "energy-text", message: `${JSON.stringify(text)} is not an energy: ${why}` } });
  const compact = text.replace(/[\s\u202f]/g, "");
  if (compact === "") return refuse("nothing was typed: write a figure and its unit, e.g. 50 J");
  const m = /^([0-9.]*)(.*)$/.exec(compact) ?? ["", "", compact];
  const [figure, unit] = [m[1], m[2]];
  if (figure === "") return refuse(unit.startsWith("-") ? "a budget is not negative" : "no figure before the unit: e.g. 50 J");
  if (unit === "") return refuse("no unit: write µJ, mJ, J, kJ, MJ, Wh or kWh after the figure");
  const scale = UNIT_UJ[unit];
  if (scale === undefined) return refuse("not an energy unit: write µJ, mJ, J, kJ, MJ, Wh or kWh (case matters: mJ is not MJ)");
  const [whole, frac = "", extra] = figure.split(".");
  if (whole === "" || extra !== undefined || (figure.includes(".") && frac === "") || frac.length > 18)
    return refuse("not a figure: digits, with at most one decimal point between digits");
  const den = 10n ** BigInt(frac.length);
  const fracScaled = (frac === "" ? 0n : BigInt(frac)) * scale;
  if (fracScaled % den !== 0n) return refuse("finer than 1 µJ: the ledger counts whole microjoules");
  const uj = BigInt(whole) * scale + fracScaled / den;
  if (uj > BigInt(Number.MAX_SAFE_INTEGER)) return refuse("more than this console takes (about 9 GJ)");
  return { uj: Number(uj) };
}


/** A whole number with its thousands apart by a narrow space (`131 251`), as the report writes byte offsets. */
export function formatCount(n: number): string {
  return String(Math.trunc(n)).replace(/\B(?=(\d{3})+(?!\d))/g, "\u202f");
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(2)} GiB`;
}

const pad = (n: number) => String(n).padStart(2, "0");

/** The user's zone as an offset from UTC at `d` (`UTC+01:00`). */
export function zoneOf(d: Date): string {
  const off = -d.getTimezoneOffset();
  return `UTC${off < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
}

/** Unix ms as a date and time in the user's zone (`2026-12-07 09:20:15`);
 *  the zone is on hover, and said once where a table has many. */
export function formatTime(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A time cell: the date and time in the user's zone, the zone and UTC on hover. */
export function timeCell(ms: number, cls?: string): HTMLTableCellElement {
  const td = el("td", cls, formatTime(ms));
  td.title = `${zoneOf(new Date(ms))}; ${new Date(ms).toISOString()}`;
  return td;
}

/** A `datetime-local` input's value (the user's zone) as Unix seconds; `null` when empty or not a date. */
export function localInputToUnix(value: string): number | null {
  if (value.trim() === "") return null;
  const t = new Date(value).getTime();
  return Number.isFinite(t) ? Math.floor(t / 1000) : null;
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

/** Unix seconds as a date and time in the user's zone, the zone said
 *  (`2026-01-01 10:20 UTC+01:00`): records are signed in UTC, people read their own clock. */
export function formatUnixLocal(secs: number): string {
  const d = new Date(secs * 1000);
  return `${formatTime(secs * 1000).slice(0, 16)} ${zoneOf(d)}`;
}

/** A long hex id or did:key shortened for a table cell: the whole on hover,
 *  copied by a click (issue 39: ids truncate with copy). */
export function shortId(id: string, keep = 10): HTMLElement {
  const c = el("code", "id", id.length > keep + 2 ? `${id.slice(0, keep)}…` : id);
  c.title = id;
  makeCopyable(c, id);
  return c;
}

/** Makes `e` copy `text` when clicked (or on Enter), saying so in its title;
 *  where the clipboard is not reachable the whole text is selected instead. */
export function makeCopyable(e: HTMLElement, text: string): void {
  e.classList.add("copyable");
  e.tabIndex = 0;
  e.setAttribute("role", "button");
  // The title stays the whole text (people and tests read it there); the action is said to assistive tech.
  e.setAttribute("aria-label", `copy ${text}`);
  const copy = () => {
    const done = () => {
      e.classList.add("copied");
      setTimeout(() => e.classList.remove("copied"), 1200);
    };
    const clip = (globalThis.navigator as Navigator | undefined)?.clipboard;
    if (clip) void clip.writeText(text).then(done, () => selectText(e));
    else selectText(e);
  };
  e.addEventListener("click", copy);
  e.addEventListener("keydown", (k) => {
    if (k.key === "Enter") copy();
  });
}

function selectText(e: HTMLElement): void {
  const sel = globalThis.getSelection?.();
  if (!sel) return;
  const r = document.createRange();
  r.selectNodeContents(e);
  sel.removeAllRanges();
  sel.addRange(r);
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
