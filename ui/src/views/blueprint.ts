// Blueprint view, the developer's view (Agent Blueprint Protocol §13): the
// reconcile report of a Blueprint and its Deployment — the verdict, each step
// of the pinned order with its checks, the effective bounds and clamps, and
// everything the pass did NOT verify. A step that ran no check reads "not
// run", never passed; a consistent record is evidence, not an authorization.
import { api, type BlueprintReportView, type UiError, type WorkspaceItem } from "../ipc";
import { el, table } from "../format";

const STATUS_WORDS: Record<string, string> = {
  passed: "passed",
  partial: "passed in part",
  failed: "FAILED",
  not_run: "not run",
};

const KIND_WORDS: Record<string, string> = {
  host_owned: "host-owned",
  not_reached: "not reached",
  missing_input: "not checked",
};

export class BlueprintView {
  readonly root: HTMLElement;
  private status = el("p", "status");
  private picker = el("div", "picker");
  private report = el("div", "bp-report");
  private items: WorkspaceItem[] = [];
  private selected: number | null = null;
  private shown: number | null = null;
  private loading = false;

  constructor() {
    this.root = el("section", "view blueprint");
    this.root.id = "view-blueprint";
    const head = el("div", "view-head");
    const again = el("button", "reconcile-again", "Reconcile again");
    again.addEventListener("click", () => void this.load());
    head.append(el("h2", undefined, "Blueprint"), again);
    this.root.append(head, this.picker, this.status, this.report);
  }

  /** Shows the reconcile of workspace item `id`. */
  async open(id: number): Promise<void> {
    this.selected = id;
    this.renderPicker();
    await this.load();
  }

  async refresh(): Promise<void> {
    try {
      const all = await api.workspaceOverview();
      this.items = all.filter((i) => i.kind === "blueprint" && i.id !== null);
    } catch (e) {
      this.fail(e as UiError);
      return;
    }
    if (this.selected === null && this.items.length > 0) this.selected = this.items[0].id;
    this.renderPicker();
    if (this.items.length === 0) {
      this.status.textContent = "No blueprint in this workspace yet.";
      this.status.className = "status";
      return;
    }
    if (this.selected !== null && this.shown !== this.selected) await this.load();
  }

  private renderPicker(): void {
    this.picker.replaceChildren(
      ...this.items.map((it) => {
        const b = el("button", "pick", it.label);
        b.classList.toggle("active", it.id === this.selected);
        b.addEventListener("click", () => void this.open(it.id as number));
        return b;
      }),
    );
  }

  private fail(e: UiError): void {
    this.status.textContent = e.message;
    this.status.className = "status error";
  }

  private async load(): Promise<void> {
    const id = this.selected;
    if (id === null || this.loading) return;
    this.loading = true;
    try {
      const v = await api.blueprintReport(id);
      if (this.selected === id) {
        this.show(v);
        this.shown = id;
        this.status.textContent = "";
        this.status.className = "status";
      }
    } catch (e) {
      this.shown = id;
      this.report.replaceChildren();
      this.fail(e as UiError);
    } finally {
      this.loading = false;
    }
  }

  show(v: BlueprintReportView): void {
    const parts: HTMLElement[] = [];
    parts.push(el("h3", "bp-title", v.title));

    // Verdict: consistent is never shown without what was not verified.
    const verdict = el("div", `verdict ${v.verdict}`);
    verdict.id = "blueprint-verdict";
    const open = v.not_verified.length;
    verdict.append(
      el("span", "label", "Verdict: "),
      el("strong", "value", v.verdict),
      el("span", "open", ` — ${open} surface(s) not verified`),
    );
    parts.push(verdict, el("p", "verdict-text", v.verdict_text));

    // What was read.
    const [ft, fb] = table("bp-files", ["what", "file"]);
    const row = (what: string, file: string | null) => {
      const tr = el("tr");
      tr.append(el("td", undefined, what), file ? el("td", "path", file) : el("td", "none", "not supplied"));
      fb.append(tr);
    };
    row("blueprint", v.blueprint_path);
    row("deployment", v.deployment_path);
    for (const i of v.inputs) row(i.name, i.path);
    const digests = el("p", "digests");
    digests.append(
      el("span", undefined, "blueprint digest: "),
      el("code", undefined, v.blueprint_digest ?? "not established"),
      el("br"),
      el("span", undefined, "deployment digest: "),
      el("code", undefined, v.deployment_digest ?? "not established"),
    );
    const files = el("div", "panel");
    files.append(el("h3", undefined, "What was read"), ft, digests);

    // Each step of the pinned order.
    const [st, sb] = table("steps-table", ["#", "step", "outcome", "checks", "not verified here"]);
    v.steps.forEach((s, i) => {
      const tr = el("tr", `step ${s.status}`);
      const checks = el("td", "checks");
      if (s.checks.length === 0) checks.append(el("span", "none", "no check ran"));
      for (const c of s.checks) {
        const line = el("div", c.verified ? "check ok" : "check fail");
        line.append(el("span", "mark", c.verified ? "ok" : "FAIL"), el("span", "subject", ` ${c.subject}`));
        if (c.code) line.append(el("code", "code", c.code));
        line.append(el("span", "detail", ` ${c.detail}`));
        checks.append(line);
      }
      const nv = el("td", "step-open");
      for (const n of s.not_verified) nv.append(el("div", undefined, `${n.surface}: ${n.reason}`));
      tr.append(el("td", "num", String(i + 1)), el("td", "name", s.step), el("td", "outcome", STATUS_WORDS[s.status] ?? s.status), checks, nv);
      sb.append(tr);
    });
    const steps = el("div", "panel");
    steps.append(el("h3", undefined, "Steps, in the protocol's pinned order"), st);

    // Bounds and clamps (only when the bounds step ran).
    const lower = el("div", "lower");
    const bounds = el("div", "panel");
    bounds.append(el("h3", undefined, "Effective bounds"));
    if (v.effective_bounds.length === 0) bounds.append(el("p", "none", "Not computed: the bounds step did not run."));
    else {
      const [bt, bb] = table("bounds-table", ["bound", "effective"]);
      for (const b of v.effective_bounds) {
        const tr = el("tr");
        tr.append(el("td", undefined, b.bound), el("td", "value", b.value));
        bb.append(tr);
      }
      bounds.append(bt);
    }
    const clamps = el("div", "panel");
    clamps.append(el("h3", undefined, "Clamps (narrowed bounds)"));
    if (v.effective_bounds.length === 0) clamps.append(el("p", "none", "Not computed: the bounds step did not run."));
    else if (v.clamps.length === 0) clamps.append(el("p", "none", "None: every requested bound is in effect as requested."));
    else {
      const [ct, cb] = table("clamps-table", ["bound", "requested", "effective"]);
      for (const c of v.clamps) {
        const tr = el("tr", "clamp");
        tr.append(el("td", undefined, c.protected ? `${c.bound} (protected, acknowledged)` : c.bound), el("td", "value", c.requested), el("td", "value", c.effective));
        cb.append(tr);
      }
      clamps.append(ct);
    }
    lower.append(bounds, clamps);

    // What was NOT verified: always there (ABP §13).
    const nvBox = el("div", "panel not-verified");
    nvBox.append(
      el("h3", undefined, `Not verified (${open})`),
      el("p", "hint", "This record is evidence, not a decision: the host still owns everything below."),
    );
    const [nt, nb] = table("not-verified-table", ["surface", "why not", "reason"]);
    for (const n of v.not_verified) {
      const tr = el("tr", `nv ${n.kind}`);
      tr.append(el("td", "surface", n.surface), el("td", "kind", KIND_WORDS[n.kind] ?? n.kind), el("td", "reason", n.reason));
      nb.append(tr);
    }
    nvBox.append(nt);

    // Verdict, then how each step went and what was not verified, then the detail.
    parts.push(steps, nvBox, lower, files);
    this.report.replaceChildren(...parts);
  }
}
