// The Blueprint view's conformance run (Agent Blueprint Protocol §15): a corpus folder (or one
// case file) run as `jcp blueprint conformance --json` runs it — green only when at least one case
// ran, none failed and every file ran (never a vacuous green); the surface × class matrix; files
// that could not run; the failed cases with what was expected and what came back.
import { api, type ConformanceView, type FileHandle, type UiError } from "../ipc";
import { el, shortId, table } from "../format";

export class ConformancePanel {
  readonly root = el("details", "panel bp-conformance");
  private input = el("input");
  /** The handle of the folder chosen (issue 34: the field only shows its path). */
  private picked: string | null = null;
  private status = el("p", "status");
  private result = el("div", "conformance-result");

  constructor(private onError: (e: UiError) => void = () => {}) {
    this.root.id = "bp-conformance";
    this.root.append(el("summary", undefined, "Run a conformance corpus (a folder of case files)…"));
    this.input.type = "text";
    this.input.readOnly = true;
    this.input.id = "bp-conformance-path";
    this.input.placeholder = "Browse… for a corpus folder (with or without index.json)";
    const browse = el("button", "browse", "Browse…");
    browse.addEventListener("click", () => void this.browse());
    const go = el("button", "primary", "Run");
    go.id = "bp-conformance-go";
    go.addEventListener("click", () => void this.run());
    const row = el("div", "bp-open-grid");
    row.append(el("label", undefined, "Corpus"), this.input, browse);
    this.root.append(row, go, this.status, this.result);
  }

  private async browse(): Promise<void> {
    try {
      const p = await api.developerPickFolder("a conformance corpus folder");
      if (p !== null) this.choose(p);
    } catch (e) {
      this.onError(e as UiError);
    }
  }

  /** A folder chosen (a picker's): its path shown, its handle kept. */
  choose(f: FileHandle): void {
    this.picked = f.handle;
    this.input.value = f.path;
  }

  /** Runs the corpus chosen and shows its report. */
  async run(): Promise<void> {
    if (this.picked === null) {
      this.status.textContent = "Choose a corpus folder first (Browse…).";
      this.status.className = "status error";
      return;
    }
    this.status.textContent = "Running…";
    this.status.className = "status";
    this.result.replaceChildren();
    try {
      const v = await api.blueprintConformance(this.picked);
      this.status.textContent = "";
      this.show(v);
    } catch (e) {
      const u = e as UiError;
      this.status.textContent = `${u.message} (${u.code})`;
      this.status.className = "status error";
    }
  }

  show(v: ConformanceView): void {
    const parts: HTMLElement[] = [];
    const verdict = el("div", `verdict ${v.green ? "clean" : "findings"}`);
    verdict.id = "conformance-verdict";
    verdict.append(el("span", "label", "Conformance: "), el("strong", "value", v.green ? "green" : "not green"));
    const why = v.green
      ? `${v.passed} case(s) passed in ${v.files_run} file(s); none failed.`
      : v.passed + v.failed === 0
        ? "No case ran: an empty run is never green."
        : `${v.failed} case(s) failed, ${v.passed} passed; ${v.file_failures.length} file(s) could not run.`;
    parts.push(verdict, el("p", "verdict-text", why));
    const facts = el("p", "hint");
    facts.append(document.createTextNode(`${v.path} · corpus digest `), v.corpus_digest ? shortId(v.corpus_digest, 16) : el("span", undefined, "none (no index.json: the files were run as found)"), document.createTextNode(" · report digest "), shortId(v.report_digest, 16));
    parts.push(facts);
    parts.push(el("p", "hint floor", v.floor));
    if (v.missing_surfaces.length) parts.push(el("p", "missing-surfaces", `Surfaces of the 16-surface floor with no case here: ${v.missing_surfaces.join(", ")}.`));
    if (v.missing_classes.length) parts.push(el("p", "missing-classes", `Classes of the 31-class floor with no case here: ${v.missing_classes.join(", ")}.`));

    // The surface × class matrix: a cell per pair that ran, "p/f" with a class for color.
    const classes = v.classes.map((c) => c.name);
    const [mt, mb] = table("conformance-matrix", ["surface", ...classes, "total"]);
    for (const s of v.surfaces) {
      const tr = el("tr", "surface");
      tr.append(el("th", "name", s.name));
      for (const c of classes) {
        const cell = v.matrix.find((m) => m.surface === s.name && m.class === c);
        const td = el("td", cell ? (cell.failed ? "cell failed" : "cell passed") : "cell none", cell ? `${cell.passed}/${cell.passed + cell.failed}` : "—");
        if (cell) td.title = `${cell.passed} passed, ${cell.failed} failed`;
        tr.append(td);
      }
      tr.append(el("td", s.failed ? "total failed" : "total passed", `${s.passed}/${s.passed + s.failed}`));
      mb.append(tr);
    }
    const matrix = el("div", "matrix-wrap");
    matrix.append(el("h4", undefined, `Surface × class (${v.surfaces.length} surfaces, ${classes.length} classes; passed/run)`), mt);
    parts.push(matrix);

    if (v.file_failures.length) {
      const [ft, fb] = table("conformance-file-failures", ["file", "code", "why it did not run"]);
      for (const f of v.file_failures) {
        const tr = el("tr", "file-failure");
        tr.append(el("td", "path", f.file), el("td", "code", f.code), el("td", undefined, f.detail));
        fb.append(tr);
      }
      const box = el("div");
      box.append(el("h4", undefined, `Files that did not run (${v.file_failures.length})`), ft);
      parts.push(box);
    }
    const failed = v.cases.filter((c) => !c.passed);
    if (failed.length) {
      const [ct, cb] = table("conformance-failed-cases", ["file", "case", "surface", "class", "expected", "got"]);
      for (const c of failed) {
        const tr = el("tr", "case failed");
        tr.append(el("td", "path", c.file), el("td", undefined, c.id), el("td", undefined, c.surface), el("td", undefined, c.class), el("td", "code", c.expected), el("td", "code", c.got));
        cb.append(tr);
      }
      const box = el("div");
      box.append(el("h4", undefined, `Failed cases (${failed.length})`), ct);
      parts.push(box);
    }
    this.result.replaceChildren(...parts);
  }
}
