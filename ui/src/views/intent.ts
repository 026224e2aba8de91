// Intent view, the developer's Agent-Safe Intent v1 panel (§3–§6): two
// slots, each a binding pasted or opened from a file (read in Rust). Each
// shows what `jcp intent hash` prints — the canonical bytes as text and hex
// and the intent hash — or the refusal with its code and the rule it
// enforces; never a hash for a refused binding. "Compare" names every
// property that makes the two different intents (§6).
import { api, type FileHandle, type IntentComparison, type IntentSource, type IntentView as Inspected, type UiError } from "../ipc";
import { el, table } from "../format";
import type { Notifier } from "./energy";

type Slot = "a" | "b";

const CHANGE_WORDS: Record<IntentComparison["differences"][number]["change"], string> = {
  changed: "changed",
  added: "only in B",
  removed: "only in A",
};

export class IntentPanel {
  readonly root: HTMLElement;
  private texts: Record<Slot, HTMLTextAreaElement> = { a: el("textarea"), b: el("textarea") };
  /** The file chosen for each slot (issue 34: its handle is sent, its path only shown). */
  private files: Record<Slot, FileHandle | null> = { a: null, b: null };
  private fileLabels: Record<Slot, HTMLElement> = { a: el("span", "file none", "pasted text"), b: el("span", "file none", "pasted text") };
  private outs: Record<Slot, HTMLElement> = { a: el("div", "intent-out"), b: el("div", "intent-out") };
  private comparison = el("div", "intent-compare");

  constructor(private notify: Notifier) {
    this.root = el("section", "view intent");
    this.root.id = "view-intent";
    const head = el("div", "view-head");
    head.append(el("h2", undefined, "Intent"));
    const hint = el(
      "p",
      "hint",
      "Paste or open an Agent-Safe Intent binding (or a vector). Its canonical bytes and intent hash are computed by the same code as `jcp intent hash`; a refused binding shows its rule and no hash.",
    );
    const slots = el("div", "intent-slots");
    slots.append(this.slot("a"), this.slot("b"));
    const compare = el("button", "compare primary", "Compare A and B");
    compare.id = "intent-compare";
    compare.addEventListener("click", () => void this.compare());
    this.comparison.id = "intent-comparison";
    this.root.append(head, hint, compare, this.comparison, slots);
  }

  private slot(s: Slot): HTMLElement {
    const box = el("div", `panel intent-slot slot-${s}`);
    const t = this.texts[s];
    t.id = `intent-text-${s}`;
    t.rows = 8;
    t.spellcheck = false;
    t.placeholder = '{"protocol_version":"agent-safe.intent/1", …}';
    t.addEventListener("input", () => this.setFile(s, null));
    const open = el("button", "open", "Open file…");
    open.id = `intent-open-${s}`;
    open.addEventListener("click", () => void this.pick(s));
    const inspect = el("button", "inspect primary", "Hash");
    inspect.id = `intent-inspect-${s}`;
    inspect.addEventListener("click", () => void this.inspect(s));
    const row = el("div", "row");
    row.append(open, inspect, this.fileLabels[s]);
    this.outs[s].id = `intent-out-${s}`;
    box.append(el("h3", undefined, `Binding ${s.toUpperCase()}`), t, row, this.outs[s]);
    return box;
  }

  private setFile(s: Slot, file: FileHandle | null): void {
    // A changed binding makes the shown comparison stale: it goes.
    this.comparison.replaceChildren();
    this.files[s] = file;
    this.fileLabels[s].textContent = file?.path ?? "pasted text";
    this.fileLabels[s].className = file ? "file" : "file none";
  }

  private source(s: Slot): IntentSource {
    const file = this.files[s];
    return file !== null ? { kind: "file", handle: file.handle } : { kind: "text", text: this.texts[s].value };
  }

  async pick(s: Slot): Promise<void> {
    try {
      const file = await api.developerPickFile(`intent binding ${s.toUpperCase()}`);
      if (file === null) return;
      this.texts[s].value = "";
      this.setFile(s, file);
      await this.inspect(s);
    } catch (e) {
      this.notify.error(e as UiError);
    }
  }

  /** Inspects slot `s` (for tests and the buttons). */
  async inspect(s: Slot): Promise<void> {
    try {
      this.show(s, await api.intentInspect(this.source(s)));
    } catch (e) {
      const u = e as UiError;
      this.outs[s].replaceChildren(el("p", "refusal", `${u.message}`));
    }
  }

  /** Sets slot `s` to pasted text (tests). */
  paste(s: Slot, text: string): void {
    this.texts[s].value = text;
    this.setFile(s, null);
  }

  show(s: Slot, v: Inspected): void {
    const out: HTMLElement[] = [];
    if (v.refusal) {
      const r = el("div", "refusal");
      r.id = `intent-refusal-${s}`;
      r.append(el("strong", undefined, "Refused "), el("code", "code", v.refusal.code), el("p", "message", v.refusal.message), el("p", "rule", `Rule: ${v.refusal.rule}`));
      out.push(r, el("p", "none", "No intent hash: a refused binding is never hashed."));
    }
    if (v.intent_hash !== null && v.canonical_json !== null) {
      const kind = v.kind === "binding" ? "binding (§3 rules applied)" : "JSON value (canonical form only: no protocol_version, so no binding rules)";
      const h = el("p", "hash");
      const code = el("code", "value", v.intent_hash);
      code.id = `intent-hash-${s}`;
      h.append(el("span", "label", "Intent hash: "), code);
      out.push(el("p", "kind", `Hashed as a ${kind}.`), h);
      out.push(el("h4", undefined, `Canonical bytes (${v.canonical_len ?? 0} bytes)`));
      const text = el("pre", "canonical", v.canonical_json);
      text.id = `intent-canonical-${s}`;
      const hex = el("pre", "hex", (v.canonical_hex ?? "").replace(/(.{64})/g, "$1\n").trim());
      hex.id = `intent-hex-${s}`;
      out.push(text, el("h4", undefined, "The same bytes in hex"), hex);
    }
    this.outs[s].replaceChildren(...out);
  }

  async compare(): Promise<void> {
    try {
      this.showComparison(await api.intentCompare(this.source("a"), this.source("b")));
    } catch (e) {
      this.notify.error(e as UiError);
    }
  }

  showComparison(c: IntentComparison): void {
    this.show("a", c.first);
    this.show("b", c.second);
    const parts: HTMLElement[] = [];
    if (!c.compared) {
      parts.push(el("p", "verdict failed", `Not compared: ${c.refusal?.message ?? "a document has no canonical form"}`));
      if (c.refusal) parts.push(el("p", "rule", `Rule: ${c.refusal.rule}`));
      this.comparison.replaceChildren(...parts);
      return;
    }
    const v = el("p", c.same_intent ? "verdict same" : "verdict different");
    v.id = "intent-verdict";
    v.textContent = c.same_intent
      ? "The same intent: equal canonical bytes, equal hash."
      : `Different intents: ${c.differences.length} propert${c.differences.length === 1 ? "y differs" : "ies differ"}. Authority decided over one hash does not cover the other (§6).`;
    parts.push(v);
    if (c.hashes) {
      const hs = el("p", "hashes");
      hs.append(el("span", undefined, "A "), el("code", undefined, c.hashes[0]), el("br"), el("span", undefined, "B "), el("code", undefined, c.hashes[1]));
      parts.push(hs);
    }
    for (const [s, view] of [["A", c.first], ["B", c.second]] as const) {
      if (view.refusal) parts.push(el("p", "note", `${s} is refused as a binding (${view.refusal.code}); it is compared as JSON all the same.`));
    }
    if (c.differences.length > 0) {
      const [t, body] = table("intent-diff", ["property", "how", "A", "B"]);
      for (const d of c.differences) {
        const tr = el("tr", `diff ${d.change}`);
        tr.append(el("td", "path", d.path), el("td", "change", CHANGE_WORDS[d.change]), el("td", "value", d.first ?? "(absent)"), el("td", "value", d.second ?? "(absent)"));
        body.append(tr);
      }
      parts.push(t);
    }
    this.comparison.replaceChildren(...parts);
  }

  async refresh(): Promise<void> {
    // Nothing to poll: the panel shows what was asked.
  }
}
