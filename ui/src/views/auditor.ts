// Auditor's view (spec §8, §8.1, §8.2): open streams by dialog or by dropping
// them on the window, watch progress, cancel, read the verdict and every
// number the audit engine reports, export JSON or self-contained HTML.
import { api, type ActionRow, type AuditJob, type AuditReportView, type RecordPanel, type StreamRow, type UiError } from "../ipc";
import { el, formatBytes, formatCount, makeCopyable, shortId, timeCell } from "../format";
import type { Notifier } from "./energy";

export class AuditorView {
  readonly root: HTMLElement;
  private status = el("p", "status");
  private openBtn = el("button", "open-streams", "Open streams…");
  private progressBox = el("div", "progress-box");
  private bar = el("progress", "audit-progress");
  private progressText = el("span", "progress-text");
  private cancelBtn = el("button", "cancel-audit", "Cancel");
  private verdict = el("div", "verdict-box");
  private report = el("div", "report");
  private exportBox = el("div", "export-box");
  private recent = el("tbody");
  private actions = el("tbody");
  private job: AuditJob | null = null;
  private shownReport = -1;
  /** The record a finding names, opened from the findings table (issue 39). */
  private recordBox = el("div", "panel record-panel");

  constructor(private notify: Notifier) {
    this.root = el("section", "view auditor");
    this.root.id = "view-auditor";
    const head = el("div", "view-head");
    head.append(el("h2", undefined, "Auditor"), this.openBtn);
    head.append(el("span", "hint", "or drop stream files onto the window"));
    this.openBtn.addEventListener("click", () => void this.open());

    this.bar.max = 1;
    this.bar.value = 0;
    this.cancelBtn.addEventListener("click", () => void this.cancel());
    this.progressBox.append(this.bar, this.progressText, this.cancelBtn);
    this.progressBox.hidden = true;

    const jsonBtn = el("button", "export-report-json", "Export JSON");
    const htmlBtn = el("button", "export-report-html", "Export HTML");
    jsonBtn.addEventListener("click", () => void this.export("json"));
    htmlBtn.addEventListener("click", () => void this.export("html"));
    this.exportBox.append(jsonBtn, htmlBtn);
    this.exportBox.hidden = true;

    const recentBox = el("div", "panel recent-streams");
    recentBox.append(el("h3", undefined, "Streams in this workspace"));
    const t = el("table");
    t.innerHTML = "<thead><tr><th>stream</th><th>size</th><th>last verdict</th><th></th></tr></thead>";
    t.append(this.recent);
    recentBox.append(t);

    const actionsBox = el("div", "panel steward-actions");
    actionsBox.append(el("h3", undefined, "Steward's recent actions"));
    const at = el("table");
    at.innerHTML = "<thead><tr><th>when</th><th>action</th><th>on</th></tr></thead>";
    at.append(this.actions);
    actionsBox.append(at);

    this.recordBox.id = "audit-record";
    this.recordBox.hidden = true;
    this.recordBox.setAttribute("aria-live", "polite");
    // A finding's offset or an id its sentence names opens that record.
    this.report.addEventListener("click", (ev) => {
      const a = (ev.target as HTMLElement).closest<HTMLElement>("a.record-link");
      if (!a || !this.report.contains(a)) return;
      ev.preventDefault();
      const stream = Number(a.dataset.stream ?? "0");
      if (a.dataset.at !== undefined) void this.openRecord(stream, { at: Number(a.dataset.at) });
      else if (a.dataset.id) void this.openRecord(stream, { record: a.dataset.id });
    });
    this.report.addEventListener("keydown", (ev) => {
      const a = (ev.target as HTMLElement).closest<HTMLElement>("a.record-link");
      if (a && (ev.key === "Enter" || ev.key === " ")) {
        ev.preventDefault();
        a.click();
      }
    });

    this.root.append(head, this.status, this.progressBox, this.verdict, this.exportBox, this.recordBox, this.report, recentBox, actionsBox);
  }

  setAvailability(available: boolean, reason: string | null): void {
    this.openBtn.disabled = !available;
    if (!available) {
      this.status.textContent = `Auditing is not available yet: ${reason ?? "no reason given"}`;
      this.status.className = "status unavailable";
    } else if (this.status.classList.contains("unavailable")) {
      this.status.textContent = "";
      this.status.className = "status";
    }
  }

  async open(): Promise<void> {
    try {
      const picked = await api.auditPickStreams();
      if (picked.length === 0) return;
      await this.start(picked.map((f) => f.handle));
    } catch (e) {
      this.notify.error(e as UiError);
    }
  }

  /** Audits the streams behind `handles` (a picker's or the workspace list's). */
  async start(handles: string[]): Promise<void> {
    try {
      this.showJob(await api.auditStart(handles));
    } catch (e) {
      this.notify.error(e as UiError);
    }
  }

  private async cancel(): Promise<void> {
    if (!this.job) return;
    try {
      this.showJob(await api.auditCancel(this.job.id));
    } catch (e) {
      this.notify.error(e as UiError);
    }
  }

  private async export(format: "json" | "html"): Promise<void> {
    if (!this.job) return;
    try {
      const r = await api.auditExport(this.job.id, format);
      if (r.path) this.notify.info(`Exported ${r.bytes} bytes to ${r.path}`);
    } catch (e) {
      this.notify.error(e as UiError);
    }
  }

  /** True while an audit runs (the app polls faster then). */
  get running(): boolean {
    return this.job?.state === "running";
  }

  async refresh(): Promise<void> {
    try {
      const [job, streams, actions] = await Promise.all([api.auditStatus(), api.workspaceStreams(), api.stewardActions(10)]);
      if (job) this.showJob(job);
      this.showStreams(streams);
      this.showActions(actions);
      if (job && job.state === "done" && this.shownReport !== job.id) {
        this.showReport(await api.auditReport(job.id));
      }
    } catch (e) {
      this.status.textContent = (e as UiError).message;
      this.status.className = "status error";
    }
  }

  showJob(job: AuditJob): void {
    if (this.job && this.job.id !== job.id) {
      this.report.replaceChildren();
      this.verdict.replaceChildren();
      this.exportBox.hidden = true;
      this.recordBox.hidden = true;
      this.recordBox.replaceChildren();
      this.shownReport = -1;
    }
    this.job = job;
    const p = job.progress;
    const frac = p.bytes_total > 0 ? Math.min(1, p.bytes_done / p.bytes_total) : 0;
    this.progressBox.hidden = false;
    this.bar.value = job.state === "done" ? 1 : frac;
    this.cancelBtn.disabled = job.state !== "running";
    const secs = (job.elapsed_ms / 1000).toFixed(1);
    const what = `${formatBytes(p.bytes_done)} of ${formatBytes(p.bytes_total)}, ${p.records} records, ${secs} s`;
    const state: Record<string, string> = { running: "Auditing", done: "Audited", cancelled: "Cancelled", failed: "Failed" };
    this.progressText.textContent = `${state[job.state] ?? job.state}: ${what}`;
    if (job.state === "failed" && job.error) {
      this.verdict.replaceChildren(el("p", "verdict failed", `The audit could not finish: ${job.error.message}`));
    } else if (job.state === "cancelled") {
      this.verdict.replaceChildren(el("p", "verdict cancelled", "The audit was cancelled; no verdict."));
    }
  }

  showReport(view: AuditReportView): void {
    this.shownReport = view.id;
    const v = el("p", `verdict ${view.verdict}`);
    v.id = "audit-verdict";
    v.append(el("span", "label", "Verdict: "), el("strong", "value", view.verdict));
    // The answer first: what was found, counted, and where the first one is.
    const answer = el("p", "answer", view.answer);
    answer.id = "audit-answer";
    this.verdict.replaceChildren(v, answer);
    // HTML rendered by the shell from the engine's report; every value escaped there, no script.
    this.report.innerHTML = view.html;
    // Its shortened ids carry the whole in their title: a click copies it.
    for (const c of this.report.querySelectorAll<HTMLElement>("code.id[title]")) makeCopyable(c, c.title);
    // Its record links are reached by keyboard too.
    for (const a of this.report.querySelectorAll<HTMLElement>("a.record-link")) {
      a.tabIndex = 0;
      a.setAttribute("role", "link");
    }
    this.exportBox.hidden = false;
  }

  /** Opens the record a finding names (by the audit's stream index, never a path). */
  async openRecord(stream: number, which: { at: number } | { record: string }): Promise<void> {
    if (!this.job) return;
    try {
      this.showRecord(await api.auditRecord(this.job.id, stream, which));
    } catch (e) {
      this.notify.error(e as UiError);
    }
  }

  showRecord(r: RecordPanel): void {
    const box = this.recordBox;
    const head = el("div", "record-head");
    const kind = r.kind === "fault" ? "Not a record" : r.kind.charAt(0).toUpperCase() + r.kind.slice(1);
    head.append(el("h3", undefined, `${kind} #${r.number} at byte ${formatCount(r.offset)}`));
    const nav = el("span", "record-nav");
    const prev = el("button", "record-prev", "← Previous record");
    const next = el("button", "record-next", "Next record →");
    const close = el("button", "record-close", "Close");
    prev.disabled = r.prev === null;
    next.disabled = r.next === null;
    if (r.prev !== null) { const at = r.prev; prev.addEventListener("click", () => void this.openRecord(r.stream_index, { at })); }
    if (r.next !== null) { const at = r.next; next.addEventListener("click", () => void this.openRecord(r.stream_index, { at })); }
    close.addEventListener("click", () => { box.hidden = true; box.replaceChildren(); });
    nav.append(prev, next, close);
    head.append(nav);
    const facts = el("dl", "record-facts");
    const fact = (name: string, value: Node | string) => {
      const dd = el("dd");
      dd.append(value);
      facts.append(el("dt", undefined, name), dd);
    };
    fact("stream", r.stream);
    fact("bytes", `${formatCount(r.offset)} to ${formatCount(r.end)} (${formatBytes(r.end - r.offset)})`);
    if (r.id) fact("id", shortId(r.id, 16));
    if (r.signer) fact("signed by", shortId(r.signer, 24));
    const check = el("p", `record-check ${r.check}`);
    const words: Record<string, string> = { verified: "Verified", refused: "Refused", "not-a-record": "Not a record" };
    check.append(el("strong", undefined, `${words[r.check] ?? r.check}${r.check_code ? ` (${r.check_code})` : ""}: `), r.check_message);
    const body = el("div", "record-body");
    // HTML rendered by the shell from the record; every value escaped there, no script.
    body.innerHTML = r.html;
    for (const c of body.querySelectorAll<HTMLElement>("code.id[title]")) makeCopyable(c, c.title);
    box.replaceChildren(head, check, facts, body);
    box.dataset.offset = String(r.offset);
    box.hidden = false;
    box.scrollIntoView?.({ block: "nearest" });
  }

  showStreams(streams: StreamRow[]): void {
    this.recent.replaceChildren(
      ...streams.map((s) => {
        const tr = el("tr");
        const again = el("button", "audit-again", "Audit");
        again.addEventListener("click", () => void this.start([s.handle]));
        again.disabled = this.openBtn.disabled;
        const td = el("td");
        td.append(again);
        tr.append(el("td", "path", s.path), el("td", "num", formatBytes(s.size_bytes)), el("td", `last-verdict ${s.last_verdict ?? ""}`, s.last_verdict ?? "not audited"), td);
        return tr;
      }),
    );
    if (streams.length === 0) {
      const tr = el("tr");
      const td = el("td", "none", "No streams opened yet.");
      td.colSpan = 4;
      tr.append(td);
      this.recent.append(tr);
    }
  }

  showActions(actions: ActionRow[]): void {
    this.actions.replaceChildren(
      ...actions.map((a) => {
        const tr = el("tr", "action");
        tr.append(timeCell(a.at_ms), el("td", "what", a.action.replaceAll("_", " ")), el("td", "path", a.subject));
        return tr;
      }),
    );
  }
}
