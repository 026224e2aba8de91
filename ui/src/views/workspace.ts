// Workspace overview: what the workspace holds — receipt streams, runs and
// blueprint reconciles (the demo's on first start) — each with its last
// outcome and a button that opens it in its view.
import { api, type UiError, type WorkspaceItem } from "../ipc";
import { el, table } from "../format";

/** Opens an item in the view that shows it. */
export type Opener = (item: WorkspaceItem) => void;

const KIND_LABEL: Record<string, string> = { stream: "receipt stream", run: "run", blueprint: "blueprint reconcile" };
const KIND_VIEW: Record<string, string> = { stream: "Audit", run: "Open run", blueprint: "Reconcile" };
const NEVER: Record<string, string> = { stream: "not audited", run: "not verified yet", blueprint: "not reconciled yet" };

export class WorkspaceView {
  readonly root: HTMLElement;
  private status = el("p", "status");
  private body: HTMLTableSectionElement;
  private shown = "";

  constructor(private open: Opener) {
    this.root = el("section", "view workspace");
    this.root.id = "view-workspace";
    const head = el("div", "view-head");
    head.append(el("h2", undefined, "Workspace"));
    const intro = el(
      "p",
      "intro",
      "What this workspace holds. On first start the console writes a demo: receipt streams (one tampered), a run with checkpoints and an amendment, and a blueprint with two deployments. Open any of them.",
    );
    const [t, body] = table("items-table", ["kind", "name", "file", "last outcome", ""]);
    this.body = body;
    const panel = el("div", "panel");
    panel.append(t);
    this.root.append(head, intro, this.status, panel);
  }

  async refresh(): Promise<void> {
    try {
      this.show(await api.workspaceOverview());
      if (this.status.classList.contains("error")) {
        this.status.textContent = "";
        this.status.className = "status";
      }
    } catch (e) {
      this.status.textContent = (e as UiError).message;
      this.status.className = "status error";
    }
  }

  /** Takes `it` off the workspace (its file stays), then lists again. */
  async forget(it: WorkspaceItem, btn: HTMLButtonElement): Promise<void> {
    btn.disabled = true;
    try {
      await api.workspaceForget(it);
      this.status.textContent = `Removed ${it.label} from the workspace; the file ${it.path} is untouched.`;
      this.status.className = "status";
    } catch (e) {
      this.status.textContent = (e as UiError).message;
      this.status.className = "status error";
      btn.disabled = false;
      return;
    }
    await this.refresh();
  }

  show(items: WorkspaceItem[]): void {
    // Polled every second: rebuild only when something changed, so a click is never lost.
    const key = JSON.stringify(items);
    if (key === this.shown) return;
    this.shown = key;
    this.body.replaceChildren(
      ...items.map((it) => {
        const tr = el("tr", `item ${it.kind}`);
        const outcome = it.last_status ?? NEVER[it.kind] ?? "not opened";
        const btn = el("button", "open-item", KIND_VIEW[it.kind] ?? "Open");
        btn.addEventListener("click", () => this.open(it));
        const forget = el("button", "forget-item secondary", "Remove");
        forget.title = "Take it off this list; the file stays where it is";
        forget.addEventListener("click", () => void this.forget(it, forget));
        const act = el("td", "actions");
        act.append(btn, forget);
        tr.append(
          el("td", "kind", KIND_LABEL[it.kind] ?? it.kind),
          el("td", "label", it.label),
          el("td", "path", it.path),
          el("td", `outcome ${it.last_status ?? "none"}`, outcome),
          act,
        );
        return tr;
      }),
    );
    if (items.length === 0) {
      const tr = el("tr");
      const td = el("td", "none", "The workspace is empty (the demo is still being written, or could not be).");
      td.colSpan = 5;
      tr.append(td);
      this.body.append(tr);
    }
  }
}
