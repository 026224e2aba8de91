// The Live energy view's sessions (JCP §5.4, §5.5): record the machine's own windows to a session
// file with a declared occupancy; declare a baseline from a session; read a session against a
// baseline with the five looks counted apart (within band, explained, unexplained, inapplicable,
// unresolvable: never one score); and reconcile a grant's spend in receipt streams against the
// session's windows, where a Partial window or a gap leaves it unreconciled, never summed.
import { api, type FileHandle, type RecordingStatus, type SessionAnalysis, type StreamRow, type UiError } from "../ipc";
import type { Notifier } from "./energy";
import { el, formatTime, kvTable, shortId, table, timeCell } from "../format";

const LOOKS: [keyof SessionAnalysis["counts"], string, string][] = [
  ["within_band", "within band", "inside the baseline's band"],
  ["explained", "explained", "outside it, with an evidenced cause"],
  ["unexplained", "unexplained", "outside it, nothing explains it: worth a look, not a finding"],
  ["inapplicable", "inapplicable", "no yardstick applies here"],
  ["unresolvable", "unresolvable", "the window could not have seen it (a gap)"],
];

function field(id: string, placeholder: string, readOnly = false): HTMLInputElement {
  const i = el("input");
  i.type = "text";
  i.id = id;
  i.placeholder = placeholder;
  i.readOnly = readOnly;
  return i;
}

/** The session's files: each shown by its path, sent by its handle (issue 34). */
type FileSlot = "session" | "baseline" | "causes";

export class SessionsPanel {
  readonly root = el("div", "panel sessions");
  private occupancy = field("session-occupancy", "occupancy you declare, e.g. idle or one-model-serving");
  private recordBtn = el("button", "primary", "Start recording");
  private recState = el("p", "rec-state");
  private session = field("session-path", "record one, or Browse… for a session file (jcp-meter-session/1)", true);
  private baseline = field("session-baseline", "optional: declare one, or Browse… for a baseline (jcp-meter-baseline/1)", true);
  private causes = field("session-causes", "optional: Browse… for evidenced causes (jcp-meter-causes/1)", true);
  private streams = field("session-streams", "optional: receipt stream(s): Browse… or pick from the workspace", true);
  private workspaceStreams = el("select", "workspace-streams");
  private files: Record<FileSlot, FileHandle | null> = { session: null, baseline: null, causes: null };
  private streamFiles: FileHandle[] = [];
  private grant = field("session-grant", "optional: the grant id whose spend they hold");
  private status = el("p", "status");
  private result = el("div", "session-result");
  private rec: RecordingStatus | null = null;

  constructor(private notify: Notifier) {
    this.root.id = "energy-sessions";
    this.root.append(el("h3", undefined, "Sessions: baseline and conservation (§5.4, §5.5)"));
    this.recordBtn.id = "session-record";
    this.recordBtn.addEventListener("click", () => void this.toggle());
    const rec = el("div", "session-grid");
    rec.append(el("label", undefined, "Occupancy"), this.occupancy, this.recordBtn);
    this.root.append(rec, this.recState);

    const grid = el("div", "session-grid");
    const row = (label: string, input: HTMLInputElement, browse?: () => Promise<void>) => {
      const b = el("button", "browse", "Browse…");
      if (browse) b.addEventListener("click", () => void browse());
      else b.hidden = true;
      grid.append(el("label", undefined, label), input, b);
    };
    const pick = (slot: FileSlot, what: string) => async () => {
      try {
        const p = await api.developerPickFile(what);
        if (p !== null) this.setFile(slot, p);
      } catch (e) {
        this.notify.error(e as UiError);
      }
    };
    row("Session", this.session, pick("session", "a recorded session"));
    row("Baseline", this.baseline, pick("baseline", "a baseline"));
    row("Causes", this.causes, pick("causes", "evidenced causes"));
    row("Streams", this.streams, async () => {
      try {
        const ps = await api.auditPickStreams();
        if (ps.length) this.setStreams(ps);
      } catch (e) {
        this.notify.error(e as UiError);
      }
    });
    this.workspaceStreams.id = "session-workspace-streams";
    this.workspaceStreams.addEventListener("change", () => {
      const h = this.workspaceStreams.value;
      const o = this.workspaceStreams.selectedOptions[0];
      if (h && o) this.setStreams([...this.streamFiles.filter((f) => f.handle !== h), { handle: h, path: o.title }]);
      this.workspaceStreams.value = "";
    });
    grid.append(el("span"), this.workspaceStreams, el("span"));
    row("Grant", this.grant);
    const analyze = el("button", "primary", "Analyse");
    analyze.id = "session-analyze";
    analyze.addEventListener("click", () => void this.analyze());
    const declare = el("button", undefined, "Declare a baseline from this session");
    declare.id = "session-declare";
    declare.addEventListener("click", () => void this.declare());
    const actions = el("div", "session-actions");
    actions.append(analyze, declare);
    this.root.append(grid, actions, this.status, this.result);
  }

  /** Polls the recording's state (the Live energy view calls this with its own refresh). */
  async refresh(): Promise<void> {
    try {
      const [rec, streams] = await Promise.all([api.energyRecordStatus(), api.workspaceStreams()]);
      this.showRecording(rec);
      this.showWorkspaceStreams(streams);
    } catch (e) {
      this.recState.textContent = (e as UiError).message;
    }
  }

  /** A file chosen for `slot` (a picker's, a recording's, a baseline just declared). */
  setFile(slot: FileSlot, f: FileHandle | null): void {
    this.files[slot] = f;
    ({ session: this.session, baseline: this.baseline, causes: this.causes })[slot].value = f?.path ?? "";
  }

  /** The streams whose spend is reconciled. */
  setStreams(fs: FileHandle[]): void {
    this.streamFiles = fs;
    this.streams.value = fs.map((f) => f.path).join("; ");
  }

  /** The workspace's streams, to add one to the reconcile without a dialog. */
  showWorkspaceStreams(rows: StreamRow[]): void {
    if (this.workspaceStreams.options.length === rows.length + 1 && rows.every((r, i) => this.workspaceStreams.options[i + 1]?.value === r.handle)) return;
    const first = el("option", undefined, rows.length ? "add a stream of this workspace…" : "no stream in this workspace");
    first.value = "";
    this.workspaceStreams.replaceChildren(
      first,
      ...rows.map((r) => {
        const o = el("option", undefined, r.path.split("/").pop() ?? r.path);
        o.value = r.handle;
        o.title = r.path;
        return o;
      }),
    );
  }

  showRecording(r: RecordingStatus): void {
    this.rec = r;
    this.recordBtn.textContent = r.recording ? "Stop and save" : "Start recording";
    this.recordBtn.disabled = !r.meter_running;
    this.occupancy.disabled = r.recording;
    if (!r.meter_running) this.recState.textContent = "The meter is not running: nothing can be recorded.";
    else if (r.recording) {
      const occ = r.occupancy ? `occupancy "${r.occupancy}"` : "no occupancy declared (no baseline will apply to it)";
      this.recState.textContent = `Recording since ${formatTime(r.started_ms ?? 0)}: ${r.windows} window(s), ${occ}${r.full ? "; FULL: later windows are not in it" : ""}.`;
    } else this.recState.textContent = "Not recording.";
    this.recState.className = `rec-state ${r.recording ? "on" : "off"}`;
  }

  private async toggle(): Promise<void> {
    try {
      if (this.rec?.recording) {
        const done = await api.energyRecordStop();
        this.setFile("session", { handle: done.handle, path: done.path });
        this.notify.info(`Saved ${done.windows} window(s) to ${done.path}`);
      } else {
        await api.energyRecordStart(this.occupancy.value);
      }
    } catch (e) {
      this.notify.error(e as UiError);
    }
    await this.refresh();
  }

  private async declare(): Promise<void> {
    try {
      const s = this.files.session;
      if (s === null) {
        this.notify.error({ code: "energy.no_session", message: "Record a session, or Browse… for one, first." });
        return;
      }
      const b = await api.energyBaselineDeclare(s.handle);
      this.setFile("baseline", { handle: b.handle, path: b.path });
      this.notify.info(`Baseline declared: ${b.text} (${b.path})`);
    } catch (e) {
      this.notify.error(e as UiError);
    }
  }

  /** Reads the session in the form against its baseline (and the grant, when given). */
  async analyze(): Promise<void> {
    const grant = this.grant.value.trim() === "" ? null : this.grant.value.trim();
    const handle = (slot: FileSlot) => this.files[slot]?.handle ?? null;
    this.status.textContent = "Analysing…";
    this.status.className = "status";
    try {
      const a = await api.energySessionAnalyze({ session: handle("session") ?? "", baseline: handle("baseline"), causes: handle("causes"), streams: this.streamFiles.map((f) => f.handle), grant });
      this.status.textContent = "";
      this.show(a);
    } catch (e) {
      const u = e as UiError;
      this.status.textContent = `${u.message} (${u.code})`;
      this.status.className = "status error";
      this.result.replaceChildren();
    }
  }

  show(a: SessionAnalysis): void {
    const parts: HTMLElement[] = [];
    parts.push(el("p", "session-facts", `${a.session}: ${a.windows} window(s); occupancy ${a.occupancy ? `"${a.occupancy}"` : "not declared"}. Baseline: ${a.baseline_text}.`));
    const looks = el("div", "looks");
    for (const [k, word, meaning] of LOOKS) {
      const box = el("div", `look look-${word.replace(" ", "-")}`);
      box.title = meaning;
      box.append(el("strong", "n", String(a.counts[k])), el("span", undefined, ` ${word}`));
      looks.append(box);
    }
    parts.push(looks, el("p", "hint", `Grades: ${a.grades.map(([g, n]) => `${g} ${n}`).join(", ") || "none"}. The five are counted apart; there is no single score.`));
    if (a.conservation) {
      const c = a.conservation;
      const box = el("div", `conservation ${c.balanced ? "balanced" : "unbalanced"}`);
      box.id = "session-conservation";
      box.append(el("h4", undefined, "Conservation of the grant's spend against the windows (§5.5)"));
      const [t, kv] = kvTable("conservation-table");
      kv("grant", shortId(c.grant_id, 12));
      kv("budget", c.budget);
      kv("debited (verified allows)", `${c.debited} in ${c.allows} allow(s)${c.receipts_failed ? `; ${c.receipts_failed} receipt(s) failed verification, in no figure` : ""}`, "debited");
      kv("metered, Whole windows", `${c.whole} in ${c.whole_windows} window(s)`, "whole");
      kv("metered, Partial windows", `${c.partial} in ${c.partial_windows} window(s) — kept apart, never added to the Whole sum`, "partial");
      kv("gaps", `${c.gap_windows} (unmetered, not zero)`, "gaps");
      kv("comparison", c.reconciled ? `exact: discrepancy ${c.discrepancy_uj ?? ""}` : `not made: ${c.unreconciled ?? ""}`, c.reconciled ? "reconciled" : "unreconciled");
      kv("floor rests on", `${c.basis} figures (worst grade ${c.provenance_floor})`, "basis");
      kv("balanced", c.balanced ? "yes" : "no", c.balanced ? "balanced yes" : "balanced no");
      box.append(t, el("p", "statement", c.statement));
      parts.push(box);
    }
    const [wt, wb] = table("session-windows", ["#", "start", "energy", "provenance", "coverage", "look", "why"]);
    for (const r of a.rows) {
      const tr = el("tr", `swin ${r.look}`);
      tr.append(
        el("td", "num", String(r.seq)),
        timeCell(r.start_ms),
        el("td", r.energy === null ? "energy none" : "energy", r.energy ?? "no reading"),
        el("td", undefined, r.provenance ?? "—"),
        el("td", r.coverage === "Partial" ? "coverage partial" : "coverage", r.coverage ?? "—"),
        el("td", "look", r.look),
        el("td", "why", r.why),
      );
      wb.append(tr);
    }
    parts.push(wt);
    this.result.replaceChildren(...parts);
  }
}
