// Steward view (JCP §4.3, §4.7, §4.11): the steward's key (create, import,
// unlock, lock now — the private key stays in the shell), the runs of the
// workspace's runs folder and the live runs of the console's endpoint, and
// on a run: approve, amend (checked — and a widening or an amount above the
// remainder refused — before anything is signed) and revoke (after a
// confirmation naming every grant that dies with it), the live agent's
// account of itself, and the run's history: what was signed, by whom, when.
import { api, type AmendForm, type KeyStatus, type RunRow, type SettleStatus, type StewardOverview, type StewardRunView, type UiError, type UnresolvedStream } from "../ipc";
import type { CaveatInput } from "../gen/CaveatInput";
import type { CaveatKind } from "../gen/CaveatKind";
import type { Notifier } from "./energy";
import { el, formatUnixLocal, GRADE_MEANING, localInputToUnix, parseEnergy, shortId, table } from "../format";
import type { MeteredCall } from "../gen/MeteredCall";
import type { GatewayView } from "../gen/GatewayView";
import { renderRun } from "./run";

const CAVEATS: [CaveatKind, string][] = [
  ["ActionIn", "only these actions (comma-separated)"],
  ["MaxCostUj", "at most this much energy per action (e.g. 2 J)"],
  ["NotAfter", "not after (a date and time)"],
  ["NotBefore", "not before (a date and time)"],
];

/** A run's status in words (`RunRow.status`). */
const STATUS_WORDS: Record<RunRow["status"], string> = {
  unreadable: "unreadable",
  revoked: "revoked",
  awaiting: "awaits its steward",
  running: "running",
  crashed: "crashed",
  stopped: "stopped",
  idle: "not running here",
};

function input(id: string, placeholder: string, type = "text"): HTMLInputElement {
  const i = el("input");
  i.id = id;
  i.type = type;
  i.placeholder = placeholder;
  return i;
}

function button(id: string, label: string, cls = "action"): HTMLButtonElement {
  const b = el("button", cls, label);
  b.id = id;
  return b;
}

/** The calls the endpoint ran behind its gate, each with the figure it
 *  metered (§11): µJ, grade, coverage and the gaps it named. A Partial
 *  figure is marked as part of the work, never as its total (§5.2). */
export function meteredTable(calls: MeteredCall[], note: string | null): HTMLElement {
  const box = el("div", "live-metered");
  box.id = "live-metered";
  box.append(el("h4", undefined, "Metered calls (the endpoint's figures)"));
  if (calls.length === 0) {
    box.append(el("p", "none", "No call has been metered yet: each allowed step's work runs behind the endpoint's gate, which meters and charges it."));
    return box;
  }
  const [t, body] = table("metered-calls", ["step", "metered", "provenance", "coverage", "gaps", "charged"]);
  for (const c of [...calls].reverse()) {
    const tr = el("tr", `metered-call ${c.state}`);
    const energy = el("td", "energy num", c.energy_text);
    energy.title = `rung ${c.rung}; ${c.cpu_ms} ms of CPU over the span`;
    const prov = el("td", "provenance");
    const chip = el("span", `grade grade-${c.provenance}`, c.provenance);
    chip.title = GRADE_MEANING[c.provenance] ?? "";
    prov.append(chip);
    const partial = c.coverage === "Partial";
    const cov = el("td", partial ? "coverage partial" : "coverage", c.coverage);
    if (partial) cov.title = "covers only part of the call's work: not its total (§5.2)";
    const gaps = el("td", "gaps");
    if (c.gaps.length === 0) gaps.textContent = "none named";
    for (const g of c.gaps) {
      const code = el("code", "gap", g.code);
      code.title = g.detail;
      gaps.append(code, " ");
    }
    const charged = c.charged === null
      ? el("td", "charged none", c.state === "lost" ? "nothing (lost: unresolved)" : "nothing")
      : el("td", "charged num", c.breach ? `${c.charged} (${c.breach})` : c.charged);
    tr.append(el("td", "num", String(c.step)), energy, prov, cov, gaps, charged);
    body.append(tr);
  }
  box.append(t);
  if (note) box.append(el("p", "metered-note", note));
  return box;
}

/** An MCP gateway's run (`jcp gateway --run` in the runs folder), from the
 *  log it writes beside the run: each tools/call with its tool, intent
 *  hash, verdict and the figure its endpoint metered (§11; Agent-Safe §8).
 *  The log is the gateway's account; its record is what the Auditor verifies. */
/** `onAudit` is given the record's handle (issue 34). */
export function gatewaySection(g: GatewayView, onAudit: (stream: string) => void): HTMLElement[] {
  const short = (id: string, keep: number) => (id.length > keep + 2 ? `${id.slice(0, keep)}…` : id);
  const parts: HTMLElement[] = [];
  const head = el("h3", undefined, "MCP gateway ");
  const state = g.closed ? "closed" : g.held_at ? "held" : "running";
  const chip = el("span", `chip gateway ${state}`, state);
  chip.id = "gateway-state";
  head.append(chip);
  parts.push(head);
  if (g.held_at) {
    const held = el("p", "gateway-held", `A call is held at checkpoint ${short(g.held_at, 12)}: the agent's tool call waits until you approve, amend or revoke.`);
    held.id = "gateway-held";
    parts.push(held);
  }
  const facts = el("dl", "live-facts");
  const fact = (k: string, val: string, id?: string) => {
    const dd = el("dd", undefined, val);
    if (id) dd.id = id;
    facts.append(el("dt", undefined, k), dd);
  };
  fact("upstream server", g.upstream ?? "—", "gateway-upstream");
  fact("client", g.client ?? "not initialized yet", "gateway-client");
  fact("holder", g.holder ? short(g.holder, 24) : "—");
  fact("record", g.stream ?? "—");
  fact("calls", `${g.allowed} allowed, ${g.denied} denied, ${g.refused} refused before the gate, ${g.lost} lost (unresolved)`, "gateway-counts");
  parts.push(facts);
  const [t, body] = table("gateway-calls", ["#", "tool", "intent hash", "verdict", "metered", "provenance", "coverage", "receipt"]);
  t.id = "gateway-calls";
  for (const c of [...g.calls].reverse()) {
    const tr = el("tr", `gateway-call ${c.verdict}${c.state ? " " + c.state : ""}`);
    const verdict = c.verdict === "allow"
      ? (c.state === "lost" ? "allow — lost (unresolved)" : `allow — ${c.state ?? "?"}`)
      : `${c.verdict} (${c.reason ?? "?"})`;
    const hash = el("td", "hash", c.intent_hash ? short(c.intent_hash.replace(/^sha256:/, ""), 12) : "—");
    if (c.intent_hash) hash.title = c.intent_hash;
    const m = c.metered;
    const energy = el("td", "energy num", m ? m.energy_text : "—");
    const prov = el("td", "provenance");
    if (m) {
      const gchip = el("span", `grade grade-${m.provenance}`, m.provenance);
      gchip.title = GRADE_MEANING[m.provenance] ?? "";
      prov.append(gchip);
    }
    const partial = m?.coverage === "Partial";
    const cov = el("td", partial ? "coverage partial" : "coverage", m ? m.coverage : "—");
    if (partial) cov.title = "covers only part of the call's work: not its total (§5.2)";
    if (m && m.gaps.length) cov.title += ` gaps: ${m.gaps.map((x) => x.code).join(", ")}`;
    const receipt = el("td", "receipt", c.receipt ? short(c.receipt, 12) : "none (not decided)");
    if (c.receipt) receipt.title = c.receipt;
    const verdictCell = el("td", "call-verdict", verdict);
    if (c.why) {
      // Why it was lost or did not run, as the gateway told the agent.
      verdictCell.title = c.why;
      verdictCell.append(el("div", "call-why", c.why));
    }
    tr.append(el("td", "num", String(c.n)), el("td", "tool", c.tool), hash, verdictCell, energy, prov, cov, receipt);
    body.append(tr);
  }
  if (g.calls.length === 0) parts.push(el("p", "none", "No tool call yet."));
  else parts.push(t);
  if (g.metered_note) parts.push(el("p", "metered-note", g.metered_note));
  const source = el("p", "gateway-source", `From the gateway's log ${g.log}${g.unreadable_lines ? ` (${g.unreadable_lines} lines did not read)` : ""}; its receipts are in its record, which the Auditor verifies.`);
  parts.push(source);
  if (g.stream_handle) {
    const row = el("div", "button-row");
    const audit = button("gateway-audit", "Open its record in the Auditor", "small");
    const stream = g.stream_handle;
    audit.addEventListener("click", () => onAudit(stream));
    row.append(audit);
    parts.push(row);
  }
  return parts;
}

/** A history entry's action in words (issue 39: "action names read as words, not live_start"); an unknown one as it is stored. */
export function actionWords(action: string): string {
  const words: Record<string, string> = {
    approve: "Approved",
    amend: "Amended",
    revoke: "Revoked",
    settle: "Settled",
    live_start: "Started the demo run",
    live_stop: "Stopped the run",
    gateway_prepare: "Prepared a gateway run",
  };
  return words[action] ?? action.replace(/_/g, " ");
}

/** Marks a control that signs with the steward's key: disabled while the key is locked, and kept in step with it. */
/** An idle time in words: "15 minutes", "1 hour", "45 seconds". */
export function idleWords(s: number): string {
  const unit = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;
  if (s % 3600 === 0) return unit(s / 3600, "hour");
  if (s % 60 === 0) return unit(s / 60, "minute");
  return unit(s, "second");
}

function needsKey(b: HTMLButtonElement, unlocked: boolean): HTMLButtonElement {
  b.classList.add("needs-key");
  b.disabled = !unlocked;
  return b;
}

export class StewardView {
  readonly root: HTMLElement;
  private keyPanel = el("div", "panel key-panel");
  private runsList = el("div", "runs-list");
  private status = el("p", "status");
  private detail = el("div", "steward-run");
  private actions = el("div", "panel actions");
  private live = el("div", "panel live-panel");
  private gateway = el("div", "panel gateway-panel");
  private gatewayStart = el("div", "panel gateway-start");
  private awaitingBanner = el("div", "awaiting-banner");
  private history = el("div", "panel history");
  private report = el("div", "run-report");
  /** The run's spend against its ceiling over its checkpoints (plotters SVG from the shell). */
  private spend = el("div", "panel spend");
  private spendText = el("p", "spend-text");
  private spendChart = el("div", "spend-chart");
  private spendShown = "";
  private result = el("div", "action-result");
  private unresolvedPanel = el("div", "panel unresolved");
  private unresolvedShown = "";
  private overview: StewardOverview | null = null;
  private selected: number | null = null;
  private shownRevision = -1;
  private shownId: number | null = null;
  private keyShown = "";
  private caveats: CaveatInput[] = [];
  /** Called with the number of checkpoints awaiting the steward (the tab's badge). */
  onAwaiting: (n: number) => void = () => {};
  /** Opens a stream in the Auditor view. */
  /** Opens a record in the Auditor, by its handle (issue 34). */
  onAudit: (handle: string) => void = () => {};

  constructor(private notify: Notifier) {
    this.root = el("section", "view steward");
    this.root.id = "view-steward";
    const head = el("div", "view-head");
    const start = button("live-start", "Start demo run");
    start.title = "Issues a demo agent a grant under your key, starts the console's enforcement endpoint and the agent (jcp agent demo)";
    start.addEventListener("click", () => void this.startLive());
    const gw = button("gateway-start", "MCP gateway run…", "small");
    gw.title = "Put a real agent's MCP tools behind the gate: issue its grant under your key and get the line to paste into its MCP configuration";
    gw.addEventListener("click", () => {
      this.gatewayStart.hidden = !this.gatewayStart.hidden;
    });
    head.append(el("h2", undefined, "Steward"), start, gw);
    this.gatewayStart.id = "gateway-start-panel";
    this.gatewayStart.hidden = true;
    this.gatewayStart.append(...this.gatewayStartForm());
    const side = el("aside", "steward-side");
    const runs = el("div", "panel");
    runs.append(el("h3", undefined, "Runs"), this.runsList);
    side.append(this.keyPanel, runs);
    this.awaitingBanner.id = "awaiting-banner";
    this.awaitingBanner.hidden = true;
    this.live.id = "live-panel";
    this.actions.id = "actions";
    this.history.id = "history";
    this.result.id = "action-result";
    this.gateway.id = "gateway-panel";
    this.spend.id = "spend-panel";
    this.spendText.id = "spend-text";
    this.spend.append(el("h3", undefined, "Course"), this.spendText, this.spendChart);
    this.detail.append(this.awaitingBanner, this.spend, this.live, this.gateway, this.actions, this.result, this.history, this.report);
    const mainCol = el("div", "steward-main");
    this.unresolvedPanel.id = "unresolved-panel";
    mainCol.append(this.gatewayStart, this.status, this.detail, this.unresolvedPanel);
    const grid = el("div", "steward-grid");
    grid.append(side, mainCol);
    this.root.append(head, grid);
  }

  get awaitingCount(): number {
    return this.overview?.awaiting ?? 0;
  }

  /** Polls the overview (every view does, for the tab's badge). */
  async poll(): Promise<StewardOverview | null> {
    try {
      this.overview = await api.stewardOverview();
    } catch (e) {
      this.fail(e as UiError);
      return null;
    }
    this.onAwaiting(this.overview.awaiting);
    return this.overview;
  }

  async refresh(): Promise<void> {
    const ov = await this.poll();
    if (!ov) return;
    this.renderKey(ov.key);
    if (this.selected === null || !ov.runs.some((r) => r.id === this.selected)) {
      // First a run that awaits the steward, else the newest.
      // Open on what awaits you; else your newest run; else the newest.
      const mine = ov.runs.filter((r) => r.mine);
      this.selected = (mine.find((r) => r.awaiting) ?? mine[mine.length - 1] ?? ov.runs[ov.runs.length - 1])?.id ?? null;
    }
    this.renderRuns(ov.runs);
    await this.loadUnresolved();
    if (this.selected === null) {
      this.status.textContent = "No run yet: start the demo run, or put a run file (.jcprun) in the workspace's runs folder.";
      return;
    }
    if (ov.revision !== this.shownRevision || this.selected !== this.shownId) await this.load();
  }

  async open(id: number): Promise<void> {
    this.selected = id;
    this.shownId = null;
    await this.refresh();
  }

  private fail(e: UiError): void {
    this.status.textContent = e.message;
    this.status.className = "status error";
  }

  /** The key's state reaches every control that signs at once (issue 39): a
   * panel rendered while the key was locked enables its buttons when it is
   * unlocked, and "Lock now" disables them, without the run being clicked again. */
  private applyKeyState(unlocked: boolean): void {
    for (const b of this.root.querySelectorAll<HTMLButtonElement>("button.needs-key")) b.disabled = !unlocked;
    for (const h of this.root.querySelectorAll<HTMLElement>(".key-hint")) h.hidden = unlocked;
  }

  private renderKey(k: KeyStatus): void {
    this.applyKeyState(k.unlocked);
    const sig = JSON.stringify(k);
    if (sig === this.keyShown) return;
    this.keyShown = sig;
    const parts: HTMLElement[] = [el("h3", undefined, "Your key")];
    const state = el("div", `key-state ${k.unlocked ? "unlocked" : k.exists ? "locked" : "none"}`);
    state.id = "key-state";
    state.textContent = k.unlocked ? "Unlocked for this session" : k.exists ? "Locked" : "No key yet";
    parts.push(state);
    if (k.exists) {
      const idle = el("p", "hint idle-lock", `Locks itself after ${idleWords(k.idle_lock_s)} without a signature.`);
      idle.id = "key-idle-lock";
      parts.push(idle);
    }
    if (k.did) {
      const row = el("div", "did-row");
      const did = el("code", "did", k.did);
      did.id = "key-did";
      const copy = button("key-copy", "Copy", "small");
      copy.addEventListener("click", () => void navigator.clipboard?.writeText(k.did ?? "").then(() => this.notify.info("did:key copied"), () => this.notify.info(k.did ?? "")));
      row.append(did, copy);
      parts.push(row);
    }
    parts.push(el("p", "hint path", k.path));
    if (k.error) {
      const err = el("p", "key-error error", k.error.message);
      err.id = "key-error";
      parts.push(err);
    }
    const form = el("div", "key-form");
    if (!k.exists) {
      const p1 = input("key-pass", "passphrase (8 characters or more)", "password");
      const p2 = input("key-pass2", "passphrase again", "password");
      const create = button("key-create", "Create key");
      create.addEventListener("click", () => {
        if (!p1.value) return this.notify.error({ code: "key-passphrase-empty", message: "A key file needs a passphrase." });
        if (p1.value !== p2.value) return this.notify.error({ code: "key.mismatch", message: "The two passphrases differ; nothing was created." });
        void this.keyCall(() => api.keyCreate(p1.value), "Key created and unlocked.", "Creating the key: its passphrase is stretched on purpose (scrypt), about a second…");
      });
      const from = input("key-import-pass", "passphrase of the file to import (if any)", "password");
      const imp = button("key-import", "Import a key file…", "small");
      imp.addEventListener("click", () => {
        if (!p1.value || p1.value !== p2.value) return this.notify.error({ code: "key.mismatch", message: "Type the new passphrase twice above; the imported key is stored under it." });
        void this.keyCall(() => api.keyImport(from.value, p1.value), "Key imported and unlocked.", "Importing the key and sealing it under your passphrase (scrypt), about a second…");
      });
      form.append(p1, p2, create, from, imp);
    } else if (!k.unlocked) {
      const p = input("key-pass", "passphrase", "password");
      const unlock = button("key-unlock", "Unlock");
      const go = () => void this.keyCall(() => api.keyUnlock(p.value), "Key unlocked for this session.", "Unlocking: the passphrase is stretched on purpose (scrypt), about a second…");
      unlock.addEventListener("click", go);
      p.addEventListener("keydown", (e) => e.key === "Enter" && go());
      form.append(p, unlock);
    } else {
      const lock = button("key-lock", "Lock now");
      lock.addEventListener("click", () => void this.keyCall(() => api.keyLock(), "Key locked."));
      form.append(lock);
    }
    parts.push(form);
    this.keyPanel.replaceChildren(...parts);
  }

  /** A key operation; `busy`, shown (and the key panel's buttons disabled) while it runs: creating, importing and unlocking take about a second by design. */
  private async keyCall(f: () => Promise<KeyStatus | null>, ok: string, busy?: string): Promise<void> {
    if (busy) {
      for (const b of this.keyPanel.querySelectorAll<HTMLButtonElement>("button")) b.disabled = true;
      const p = el("p", "hint key-busy", busy);
      p.id = "key-busy";
      this.keyPanel.append(p);
    }
    try {
      const k = await f();
      if (k) {
        this.notify.info(ok);
        this.renderKey(k);
      }
    } catch (e) {
      this.notify.error(e as UiError);
    }
    // A passphrase does not stay in the window once sent, tried or not.
    for (const i of this.keyPanel.querySelectorAll<HTMLInputElement>("input[type=password]")) i.value = "";
    this.shownRevision = -1;
    await this.refresh();
  }

  /** Your runs apart from the others' (a review queue keeps "needs your review" apart), yours awaiting you first. */
  private renderRuns(runs: RunRow[]): void {
    const mine = runs.filter((r) => r.mine);
    const yours = [...mine.filter((r) => r.awaiting), ...mine.filter((r) => !r.awaiting)];
    const others = runs.filter((r) => !r.mine);
    const group = (cls: string, title: string, rs: RunRow[]): HTMLElement[] =>
      rs.length ? [el("h4", `runs-group ${cls}`, `${title} (${rs.length})`), ...this.runButtons(rs)] : [];
    this.runsList.replaceChildren(
      ...group("yours", "Your runs", yours),
      ...group("others", "Others' runs: their issuer steers them", others),
    );
  }

  private runButtons(runs: RunRow[]): HTMLElement[] {
    return (
      runs.map((r) => {
        const b = el("button", "run-pick");
        b.dataset.id = String(r.id);
        b.classList.toggle("active", r.id === this.selected);
        b.append(el("span", "label", r.label));
        // One status, from the run's own record (revoked, awaiting, running, …).
        const [cls, words] = r.status === "awaiting" ? (r.mine ? ["awaiting", "awaits you"] : ["waits", "awaits its steward (not your key)"]) : [r.status, STATUS_WORDS[r.status]];
        const chip = el("span", `chip status ${cls}`, words);
        chip.dataset.status = r.status;
        b.append(chip);
        if (r.verdict === "findings") b.append(el("span", "chip findings", "findings"));
        b.title = r.error ?? r.path;
        b.addEventListener("click", () => void this.open(r.id));
        return b;
      })
    );
  }

  private async load(): Promise<void> {
    const id = this.selected;
    if (id === null) return;
    const rev = this.overview?.revision ?? -1;
    try {
      const v = await api.stewardRun(id);
      if (this.selected !== id) return;
      const fresh = this.shownId !== id;
      this.shownId = id;
      this.shownRevision = rev;
      this.status.textContent = "";
      this.status.className = "status";
      this.show(v, fresh);
    } catch (e) {
      this.shownId = id;
      this.shownRevision = rev;
      this.fail(e as UiError);
    }
  }

  /** Renders a run; the action forms are rebuilt only for another run or a new checkpoint (typing is never lost to a poll). */
  show(v: StewardRunView, fresh = true): void {
    const last = v.run.checkpoints[v.run.checkpoints.length - 1];
    const mine = this.overview?.runs.find((r) => r.id === v.id)?.mine ?? false;
    this.awaitingBanner.hidden = !v.awaiting;
    this.awaitingBanner.classList.toggle("other", !mine);
    this.awaitingBanner.textContent = !(v.awaiting && last)
      ? ""
      : mine
        ? `Checkpoint ${last.seq} awaits your decision: spent ${last.spent.text}; remainder ${last.remainder.text}. ${
            v.live && v.live.state !== "running"
              ? `Its agent is not running (${v.live.state}): your decision is recorded in the run file, and an agent resuming the run picks it up.`
              : "The agent waits until you approve, amend or revoke."
          }`
        : `Checkpoint ${last.seq} awaits its steward ${v.run.issuer.slice(0, 24)}…, not your key: only the run's issuer may steer it (§4.7).`;
    this.renderLive(v);
    this.gateway.hidden = v.gateway === null;
    if (v.gateway) this.gateway.replaceChildren(...gatewaySection(v.gateway, (s) => this.onAudit(s)));
    if (fresh) this.result.replaceChildren();
    const actionsKey = `${v.id}:${v.awaiting}:${last?.id ?? ""}:${v.revoked.join(",")}:${v.run.grants.length}`;
    if (fresh || this.actions.dataset.key !== `${actionsKey}:${mine}`) {
      this.actions.dataset.key = `${actionsKey}:${mine}`;
      this.renderActions(v, mine);
    }
    this.renderHistory(v);
    this.report.replaceChildren(...renderRun(v.run));
    // The course at a glance: spend against the ceiling, amendments marked, when the remainder runs out.
    this.spendText.textContent = v.spend.text;
    const svg = v.spend.svg ?? "";
    if (svg !== this.spendShown) {
      // SVG drawn by plotters in the shell from numbers only; no script.
      this.spendChart.innerHTML = svg;
      this.spendShown = svg;
    }
    this.spendChart.hidden = v.spend.svg === null;
  }

  /** The form that sets up an MCP gateway run: the upstream server, the
   *  grant (resource, actions, budget), the tool bindings and the
   *  checkpoint cadence; then the line to paste into the agent's MCP configuration. */
  private gatewayStartForm(): HTMLElement[] {
    const name = input("gw-name", "server name in the MCP configuration");
    name.value = "tools";
    const upstream = input("gw-upstream", "upstream server command, e.g. npx -y @modelcontextprotocol/server-filesystem /home/me/projects");
    const resource = input("gw-resource", "resource (text:NAME)");
    resource.value = "text:tools";
    const actions = input("gw-actions", "actions the grant allows (comma-separated)");
    const budget = input("gw-budget", "budget, e.g. 100 J");
    budget.value = "100 J";
    const every = input("gw-every", "checkpoint every N calls (0: none)", "number");
    every.value = "20";
    const bindings = el("textarea", "gw-bindings");
    bindings.id = "gw-bindings";
    bindings.rows = 6;
    bindings.value = '{"tools": [{"tool": "read_text_file", "action": "read", "system": "tools", "operation": "read",\n  "target": "file:{path}", "arguments": ["path", "head", "tail"], "consequential": ["path"]}]}';
    const out = el("div", "gateway-prepared");
    out.id = "gateway-prepared";
    const go = button("gw-prepare", "Issue the grant and give me the line");
    go.addEventListener("click", () => void this.act(async () => {
      const form = {
        name: name.value.trim(),
        upstream: upstream.value.trim().split(/\s+/).filter((x) => x.length > 0),
        resource: resource.value.trim(),
        actions: actions.value.split(",").map((a) => a.trim()).filter((a) => a.length > 0),
        budget_uj: (() => {
          const r = parseEnergy(budget.value);
          if ("error" in r) throw r.error;
          return r.uj;
        })(),
        bindings: bindings.value,
        checkpoint_every: Math.max(0, Math.round(Number(every.value) || 0)),
      };
      const p = await api.gatewayPrepare(form);
      const line = el("pre", "gateway-line", p.line);
      line.id = "gateway-line";
      const config = el("pre", "gateway-config", p.mcp_config);
      config.id = "gateway-config";
      out.replaceChildren(
        el("p", undefined, `Grant ${p.grant.slice(0, 12)}… issued to a fresh agent key the gateway holds; run file ${p.run}. Paste this into the agent's MCP configuration (it shows here as soon as the agent calls a tool):`),
        config,
        el("p", undefined, "or launch it as:"),
        line,
      );
      this.selected = p.id;
      await this.refresh();
    }));
    const row = (label: string, i: HTMLElement) => {
      const l = el("label", undefined, label);
      l.append(i);
      return l;
    };
    return [
      el("h3", undefined, "Start an MCP gateway run"),
      el("p", "hint", "The agent's client launches the gateway instead of the tool server; every tool call is decided under the grant, run, metered and sealed, and steered here."),
      row("name ", name), row("upstream ", upstream), row("resource ", resource), row("actions ", actions),
      row("budget ", budget), row("checkpoint every ", every), row("tool bindings (JSON) ", bindings), go, out,
    ];
  }

  private renderLive(v: StewardRunView): void {
    const l = v.live;
    this.live.hidden = l === null;
    if (!l) return;
    const parts: HTMLElement[] = [];
    const head = el("h3", undefined, "Live run ");
    const st = el("span", `chip live ${l.state}`, l.state);
    st.id = "live-state";
    head.append(st);
    parts.push(head);
    const facts = el("dl", "live-facts");
    const fact = (k: string, val: string | HTMLElement, id?: string) => {
      const dd = el("dd");
      if (id) dd.id = id;
      if (typeof val === "string") dd.textContent = val;
      else dd.append(val);
      facts.append(el("dt", undefined, k), dd);
    };
    fact("endpoint", l.endpoint);
    fact("record", l.stream);
    fact("agent", shortId(l.agent, 24));
    fact("grant in force", l.grant ? shortId(l.grant, 12) : "—", "live-grant");
    fact("decisions", `${l.allowed} allowed, ${l.denied} denied`, "live-decisions");
    fact("debited this session", l.spent, "live-spent");
    parts.push(facts);
    if (l.ended) {
      const ended = el("p", `live-ended ${l.state}`, l.ended);
      ended.id = "live-ended";
      parts.push(ended);
    }
    if (l.stderr) {
      const pre = el("pre", "live-stderr", l.stderr);
      parts.push(pre);
    }
    parts.push(meteredTable(l.metered, l.metered_note));
    const events = el("ol", "live-events");
    events.id = "live-events";
    // The run's own numbering (issue 39): the first shown is event number events_first + what was cut here.
    const shown = l.events.slice(-14);
    events.start = l.events_first + (l.events.length - shown.length);
    for (const e of shown) events.append(el("li", `event ${e.event}`, e.text));
    parts.push(events);
    const row = el("div", "button-row");
    if (l.state === "running") {
      const stop = button("live-stop", "Stop the run", "small");
      stop.addEventListener("click", () => void this.act(async () => {
        await api.liveStop(v.id);
        this.notify.info("The live run was stopped; its run file and record stay in the workspace.");
      }));
      row.append(stop);
    }
    const audit = button("open-in-auditor", "Open its record in the Auditor", "small");
    audit.addEventListener("click", () => this.onAudit(l.stream_handle));
    row.append(audit);
    parts.push(row);
    this.live.replaceChildren(...parts);
  }

  /** The amendment as typed: the budget is read by the one energy parser
   *  (a text it refuses is thrown as an `energy-text` refusal, the typing
   *  kept); the expiry is a `datetime-local` value in the user's zone. */
  private form(budget: string, expiry: string, instructions: string): AmendForm {
    let budget_uj: number | null = null;
    if (budget.trim() !== "") {
      const r = parseEnergy(budget);
      if ("error" in r) throw r.error;
      budget_uj = r.uj;
    }
    return { budget_uj, expiry: localInputToUnix(expiry), instructions: instructions.trim() === "" ? null : instructions, add_caveats: [...this.caveats] };
  }

  private showResult(kind: "ok" | "refused" | "preview", title: string, lines: string[] = []): void {
    const box = el("div", `result ${kind}`);
    box.append(el("strong", undefined, title));
    if (lines.length) {
      const ul = el("ul");
      for (const l of lines) ul.append(el("li", undefined, l));
      box.append(ul);
    }
    this.result.replaceChildren(box);
    box.scrollIntoView?.({ block: "nearest" });
  }

  /** A refusal, said once: its code in the title, its message without the code repeated. Always `false` (nothing signed). */
  private refusal(e: UiError, signing: boolean): false {
    // The code once, in the title: a message that opens with it again ("code: …", "refused before signing (code): …") is shown without it.
    const leads = [`${e.code}: `, `refused before signing (${e.code}): `, `refused (${e.code}): `];
    let why = e.message;
    for (let lead = leads.find((p) => why.toLowerCase().startsWith(p.toLowerCase())); lead; lead = leads.find((p) => why.toLowerCase().startsWith(p.toLowerCase()))) {
      why = why.slice(lead.length);
    }
    this.showResult("refused", signing ? `Refused (${e.code}): nothing was signed.` : `Refused before signing (${e.code})`, [why]);
    return false;
  }

  private renderActions(v: StewardRunView, mine = true): void {
    this.caveats = [];
    if (!mine) {
      // Only the run's issuer steers or revokes it (§4.7, §4.3): nothing here your key could sign.
      this.actions.replaceChildren(
        el("h3", undefined, "Your decision"),
        el("p", "hint not-yours", `Not your run: only its issuer ${v.run.issuer.slice(0, 24)}… may approve, amend or revoke it (§4.7, §4.3). Your key cannot act here.`),
      );
      return;
    }
    const parts: HTMLElement[] = [el("h3", undefined, "Your decision")];
    const unlocked = this.overview?.key.unlocked ?? false;
    const hint = el("p", "hint key-hint", "Unlock your key to sign: nothing is signed while it is locked.");
    hint.hidden = unlocked;
    parts.push(hint);
    if (v.awaiting) {
      // Approve: the remainder, previewed first.
      const approve = el("div", "approve");
      const ab = needsKey(button("approve", "Approve (continue with the remainder)"), unlocked);
      ab.addEventListener("click", () => void this.act(async () => {
        const p = await api.stewardPreview(v.id, { budget_uj: null, expiry: null, instructions: null, add_caveats: [] }).catch((e: UiError) => {
          this.refusal(e, false);
          return null;
        });
        if (!p) return;
        this.showResult("preview", `Approve: a continuation grant of ${p.budget} (the remainder) at checkpoint ${p.checkpoint.slice(0, 8)}…`);
        const sign = button("approve-sign", "Sign approval");
        sign.addEventListener("click", () => void this.act(async () => {
          const d = await api.stewardAmend(v.id, { budget_uj: null, expiry: null, instructions: null, add_caveats: [] });
          this.showResult("ok", d.message, [`signed by ${d.signed_by}`, ...d.signed.map((s) => `signed ${s}`)]);
        }, true));
        this.result.firstElementChild?.append(sign);
      }));
      approve.append(ab);
      parts.push(approve);

      // Amend: tighter only.
      const amend = el("div", "amend-form");
      const budget = input("amend-budget", "new budget, e.g. 50 J");
      budget.title = "µJ, mJ, J, kJ, MJ, Wh or kWh; exact, never rounded";
      const expiry = input("amend-expiry", "earlier expiry (optional)", "datetime-local");
      expiry.title = "An earlier expiry, in your time zone (optional)";
      const instr = input("amend-instructions", "new instructions: text or 64 hex digits (optional)");
      const kind = el("select");
      kind.id = "caveat-kind";
      for (const [k, label] of CAVEATS) {
        const o = el("option", undefined, `${k}: ${label}`);
        o.value = k;
        kind.append(o);
      }
      const cval = input("caveat-value", "caveat argument");
      // A time caveat takes a date and time (the user's zone), sent as Unix seconds.
      const timed = () => kind.value === "NotAfter" || kind.value === "NotBefore";
      kind.addEventListener("change", () => {
        cval.value = "";
        cval.type = timed() ? "datetime-local" : "text";
      });
      const cadd = button("caveat-add", "Add caveat", "small");
      const clist = el("ul", "caveat-list");
      clist.id = "caveat-list";
      cadd.addEventListener("click", () => {
        if (!cval.value.trim()) return;
        const secs = timed() ? localInputToUnix(cval.value) : null;
        if (timed() && secs === null) return;
        let value = secs === null ? cval.value.trim() : String(secs);
        let shown = secs === null ? value : formatUnixLocal(secs);
        if (kind.value === "MaxCostUj") {
          // An energy, read by the one parser and sent in µJ.
          const r = parseEnergy(cval.value);
          if ("error" in r) return void this.refusal(r.error, false);
          [value, shown] = [String(r.uj), cval.value.trim()];
        }
        this.caveats.push({ kind: kind.value as CaveatKind, value });
        clist.append(el("li", undefined, `${kind.value} ${shown}`));
        cval.value = "";
      });
      const check = button("amend-check", "Check", "small");
      const sign = needsKey(button("amend-sign", "Sign amendment"), unlocked);
      check.addEventListener("click", () => void this.act(async () => {
        try {
          const p = await api.stewardPreview(v.id, this.form(budget.value, expiry.value, instr.value));
          this.showResult("preview", `Within the rules: ${p.budget} of at most ${p.ceiling} (remainder ${p.remainder.text})`, [
            `continuation expires ${p.expiry === 0 ? "never" : formatUnixLocal(p.expiry)}`,
            ...p.caveats.map((c) => `caveat ${c}`),
            ...(p.instructions ? [`new instructions ${p.instructions}`] : []),
          ]);
        } catch (e) {
          this.refusal(e as UiError, false);
        }
      }));
      sign.addEventListener("click", () => void this.act(async () => {
        if (budget.value.trim() === "") return this.refusal({ code: "steward.bad_form", message: "An amendment states its budget; to continue with the remainder, approve." }, false);
        try {
          // Checked first: a refusal is shown before anything is signed.
          await api.stewardPreview(v.id, this.form(budget.value, expiry.value, instr.value));
        } catch (e) {
          return this.refusal(e as UiError, false);
        }
        const d = await api.stewardAmend(v.id, this.form(budget.value, expiry.value, instr.value));
        this.showResult("ok", d.message, [`signed by ${d.signed_by}`, ...d.signed.map((s) => `signed ${s}`)]);
        return true;
      }, true));
      amend.append(el("h4", undefined, "Amend (only ever tighter)"), budget, expiry, instr, el("div", "caveat-row"), clist);
      amend.querySelector(".caveat-row")?.append(kind, cval, cadd);
      const row = el("div", "button-row");
      row.append(check, sign);
      amend.append(row);
      parts.push(amend);
    } else {
      parts.push(el("p", "hint", v.revoked.length ? "Revoked: nothing awaits you on this run." : "No checkpoint awaits you on this run."));
    }

    // Revoke the grant in force, unless it was revoked (a superseded grant is steered already).
    const live = v.run.grants.filter((g) => v.revocable.includes(g.id));
    if (live.length) {
      const rv = el("div", "revoke");
      const sel = el("select");
      sel.id = "revoke-grant";
      for (const g of live) {
        const o = el("option", undefined, `${g.role} ${g.id.slice(0, 10)}… (${g.budget})`);
        o.value = g.id;
        sel.append(o);
      }
      sel.value = live[live.length - 1].id;
      const rb = needsKey(button("revoke-plan", "Revoke…", "danger"), unlocked);
      rb.addEventListener("click", () => void this.act(async () => {
        let plan;
        try {
          plan = await api.stewardRevokePlan(v.id, sel.value);
        } catch (e) {
          return this.refusal(e as UiError, false);
        }
        const box = el("div", "result confirm");
        box.id = "revoke-confirm";
        box.append(el("strong", undefined, `Revoke grant ${plan.target.slice(0, 10)}…? These grants die with it:`));
        const ul = el("ul", "dies");
        for (const d of plan.dies) {
          const li = el("li", `dies ${d.why}`);
          li.append(shortId(d.id, 16), document.createTextNode(` — held by ${d.subject.slice(0, 20)}…, ${d.budget}${d.why === "below" ? " (delegated below it)" : ""}`));
          ul.append(li);
        }
        const yes = button("revoke-sign", `Revoke ${plan.dies.length} grant(s)`, "danger");
        const no = button("revoke-cancel", "Cancel", "small");
        no.addEventListener("click", () => this.result.replaceChildren());
        yes.addEventListener("click", () => void this.act(async () => {
          const d = await api.stewardRevoke(v.id, sel.value);
          this.showResult("ok", d.message, [`signed by ${d.signed_by}`, ...d.files.map((f) => `written to ${f}`)]);
        }, true));
        box.append(ul, yes, no);
        this.result.replaceChildren(box);
        box.scrollIntoView?.({ block: "nearest" });
        return true;
      }));
      rv.append(el("h4", undefined, "Revoke"), sel, rb);
      parts.push(rv);
    }
    this.actions.replaceChildren(...parts);
  }

  private renderHistory(v: StewardRunView): void {
    const parts: HTMLElement[] = [el("h3", undefined, `History (${v.history.length})`)];
    if (!v.history.length) parts.push(el("p", "none", "Nothing signed on this run from this console yet."));
    const ol = el("ol", "history-list");
    for (const h of v.history) {
      const li = el("li", `history ${h.action}`);
      li.append(el("span", "when", new Date(h.at_ms).toISOString().replace("T", " ").slice(0, 19) + " UTC"), el("strong", "what", ` ${actionWords(h.action)} `), el("span", "text", h.text));
      if (h.signed_by) li.append(el("span", "who", " — signed by "), shortId(h.signed_by, 20));
      ol.append(li);
    }
    parts.push(ol);
    this.history.replaceChildren(...parts);
  }

  private async loadUnresolved(): Promise<void> {
    let list: UnresolvedStream[];
    try {
      list = await api.stewardUnresolved();
    } catch (e) {
      this.unresolvedPanel.replaceChildren(el("h3", undefined, "Unresolved decisions"), el("p", "error", (e as UiError).message));
      return;
    }
    const sig = JSON.stringify(list);
    if (sig === this.unresolvedShown) return;
    this.unresolvedShown = sig;
    this.renderUnresolved(list);
  }

  /** §4.11: decisions recorded with no outcome, per stream, with the party that held them; settled by a signed note, never retried. */
  renderUnresolved(list: UnresolvedStream[]): void {
    const parts: HTMLElement[] = [el("h3", undefined, "Unresolved decisions (recorded, no outcome)")];
    if (!list.length) {
      parts.push(el("p", "none", "None in the streams audited in this workspace. (A stream's unresolved decisions are listed once it has been audited.)"));
      this.unresolvedPanel.replaceChildren(...parts);
      return;
    }
    parts.push(el("p", "hint", "Whether each action took effect is known only to the party that held it. Settle each as completed or failed with a signed note; its energy stays debited either way, and the console never retries it."));
    const unlocked = this.overview?.key.unlocked ?? false;
    for (const s of list) {
      const box = el("div", "unresolved-stream");
      box.append(el("h4", undefined, `${s.stream} — ${s.total} unresolved`));
      if (s.changed_since) box.append(el("p", "hint", "The stream changed since its last audit: audit it again for a current list."));
      const ul = el("ul", "unresolved-list");
      for (const r of s.rows) {
        const li = el("li", `unresolved-row ${r.settled ? "settled" : "open"}`);
        li.dataset.receipt = r.receipt;
        li.append(shortId(r.receipt, 10), el("span", undefined, ` ${r.action}, ${r.debited} debited, held by `), shortId(r.holder, 20));
        if (r.settled) {
          li.append(el("span", `settled ${r.settled.status}`, ` — settled ${r.settled.status} by ${r.settled.settled_by.slice(0, 20)}…: “${r.settled.text}”`));
        } else {
          const note = input(`settle-note-${r.receipt.slice(0, 12)}`, "why (signed with the settlement)");
          note.className = "settle-note";
          const go = (status: SettleStatus) => {
            const b = needsKey(button(`settle-${status}-${r.receipt.slice(0, 12)}`, `Settle ${status}`, "small"), unlocked);
            b.addEventListener("click", () => void this.act(async () => {
              const d = await api.stewardSettle(s.handle, r.receipt, status, note.value);
              this.notify.info(d.message);
              this.unresolvedShown = "";
            }));
            return b;
          };
          li.append(note, go("completed"), go("failed"));
        }
        ul.append(li);
      }
      box.append(ul);
      parts.push(box);
    }
    this.unresolvedPanel.replaceChildren(...parts);
  }

  private async startLive(): Promise<void> {
    await this.act(async () => {
      const r = await api.liveStart();
      this.selected = r.id;
      this.shownId = null;
      this.notify.info("Demo run started: the agent asks the console's endpoint for every action and stops at each checkpoint for you.");
    });
  }

  /** Runs an action, shows its error, and reloads the run (after a signature, the actions are rebuilt). */
  /** Runs an action; `f` returns `false` when it was refused before anything was signed. The forms are rebuilt only after something was signed: a refusal keeps what the steward typed (issue 39). */
  private async act(f: () => Promise<boolean | void>, signed = false): Promise<void> {
    let done = false;
    try {
      done = (await f()) !== false;
    } catch (e) {
      const u = e as UiError;
      if (signed) this.refusal(u, true);
      else this.notify.error(u);
    }
    this.shownRevision = -1;
    if (signed && done) this.actions.dataset.key = "";
    await this.refresh();
  }
}
