// Blueprint view, the developer's view (Agent Blueprint Protocol §13): the
// reconcile report of a Blueprint and its Deployment — the verdict, each step
// of the pinned order with its checks, the effective bounds and clamps, and
// everything the pass did NOT verify. A step that ran no check reads "not
// run", never passed; a consistent record is evidence, not an authorization.
import { api, type BlueprintOpenForm, type BlueprintReportView, type FileHandle, type JsonLocation, type UiError } from "../ipc";
import { el, table } from "../format";
import { ItemView } from "./item";
import { ConformancePanel } from "./conformance";

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

/** Where a failure points: the file, line and column with the line's text and a caret, or the JSON pointer. */
export function locationBox(l: JsonLocation): HTMLElement {
  const box = el("div", "location");
  box.append(el("span", "where", `at ${l.text}`));
  if (l.excerpt !== null && l.caret !== null) {
    box.append(el("pre", "excerpt", `${l.excerpt}\n${" ".repeat(l.caret)}^`));
  }
  return box;
}

const FIELDS: [keyof BlueprintOpenForm, string, boolean][] = [
  ["blueprint", "Blueprint", true],
  ["deployment", "Deployment", true],
  ["keys", "Trusted keys", false],
  ["host_bounds", "Host bounds", false],
  ["descriptors", "Tool descriptors", false],
];

export class BlueprintView extends ItemView<BlueprintReportView> {
  private inputs = {} as Record<keyof BlueprintOpenForm, HTMLInputElement>;
  /** The handle of each file chosen (issue 34: the fields only show their paths). */
  private picked: Partial<Record<keyof BlueprintOpenForm, string>> = {};
  private openStatus = el("p", "status");

  readonly conformance: ConformancePanel;

  constructor(private onError: (e: UiError) => void = () => {}) {
    const form = el("details", "panel bp-open");
    const conformance = new ConformancePanel(onError);
    super(
      {
        kind: "blueprint",
        name: "blueprint",
        title: "Blueprint",
        again: ["reconcile-again", "Reconcile again"],
        empty: "No blueprint in this workspace yet.",
        reportClass: "bp-report",
      },
      form,
      conformance.root,
    );
    this.conformance = conformance;
    form.id = "bp-open";
    form.append(el("summary", undefined, "Open a Blueprint and Deployment from disk…"));
    const grid = el("div", "bp-open-grid");
    for (const [key, label, required] of FIELDS) {
      const input = el("input");
      input.type = "text";
      input.readOnly = true;
      input.id = `bp-open-${key}`;
      input.placeholder = required ? "required: Browse… for a .json file" : "optional";
      this.inputs[key] = input;
      const browse = el("button", "browse", "Browse…");
      browse.addEventListener("click", () => void this.browse(key, label));
      grid.append(el("label", undefined, label), input, browse);
    }
    const go = el("button", "primary", "Open and reconcile");
    go.id = "bp-open-go";
    go.addEventListener("click", () => void this.openForm());
    form.append(grid, go, this.openStatus);
  }

  private async browse(key: keyof BlueprintOpenForm, label: string): Promise<void> {
    try {
      const p = await api.developerPickFile(label.toLowerCase());
      if (p !== null) this.choose(key, p);
    } catch (e) {
      this.onError(e as UiError);
    }
  }

  /** A file chosen for `key` (a picker's): its path shown, its handle kept. */
  choose(key: keyof BlueprintOpenForm, f: FileHandle): void {
    this.picked[key] = f.handle;
    this.inputs[key].value = f.path;
  }

  /** Adds the files in the form to the workspace and shows their reconcile. */
  async openForm(): Promise<void> {
    const v = (k: keyof BlueprintOpenForm) => this.picked[k] ?? "";
    const opt = (k: keyof BlueprintOpenForm) => this.picked[k] ?? null;
    const form: BlueprintOpenForm = { blueprint: v("blueprint"), deployment: v("deployment"), keys: opt("keys"), host_bounds: opt("host_bounds"), descriptors: opt("descriptors") };
    try {
      const id = await api.blueprintOpen(form);
      this.openStatus.textContent = "";
      this.openStatus.className = "status";
      await this.open(id);
    } catch (e) {
      const u = e as UiError;
      this.openStatus.textContent = u.message;
      this.openStatus.className = "status error";
    }
  }

  protected fetch(id: number): Promise<BlueprintReportView> {
    return api.blueprintReport(id);
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
    if (v.first_failure?.location) {
      const at = locationBox(v.first_failure.location);
      at.id = "blueprint-first-failure-location";
      parts.push(at);
    }

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
        if (c.location) line.append(locationBox(c.location));
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
