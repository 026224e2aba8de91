// The shell shared by the views that show one workspace item at a time (the
// Run view, the Blueprint view): a picker of the workspace's items of one
// kind, a "do it again" button, a status line, and loading the selected
// item's report once (again only when asked), errors shown in words.
import { api, type UiError, type WorkspaceItem } from "../ipc";
import { el } from "../format";

export interface ItemViewSpec {
  /** Workspace item kind this view shows. */
  kind: WorkspaceItem["kind"];
  /** The view's name (`view-<name>`, heading). */
  name: string;
  title: string;
  /** The button that loads the selected item again. */
  again: [cls: string, label: string];
  /** Said when the workspace holds no item of this kind. */
  empty: string;
  reportClass: string;
}

export abstract class ItemView<V> {
  readonly root: HTMLElement;
  protected status = el("p", "status");
  protected picker = el("div", "picker");
  protected report: HTMLElement;
  private items: WorkspaceItem[] = [];
  private selected: number | null = null;
  private shown: number | null = null;
  private loading = false;

  protected constructor(private spec: ItemViewSpec, ...between: Node[]) {
    this.root = el("section", `view ${spec.name}`);
    this.root.id = `view-${spec.name}`;
    this.report = el("div", spec.reportClass);
    const head = el("div", "view-head");
    const again = el("button", spec.again[0], spec.again[1]);
    again.addEventListener("click", () => void this.load());
    head.append(el("h2", undefined, spec.title), again);
    this.root.append(head, ...between, this.picker, this.status, this.report);
  }

  /** The report of workspace item `id` (one IPC call). */
  protected abstract fetch(id: number): Promise<V>;

  abstract show(v: V): void;

  /** Shows workspace item `id`. */
  async open(id: number): Promise<void> {
    this.selected = id;
    this.renderPicker();
    await this.load();
  }

  async refresh(): Promise<void> {
    try {
      const all = await api.workspaceOverview();
      this.items = all.filter((i) => i.kind === this.spec.kind && i.id !== null);
    } catch (e) {
      this.fail(e as UiError);
      return;
    }
    if (this.selected === null && this.items.length > 0) this.selected = this.items[0].id;
    this.renderPicker();
    if (this.items.length === 0) {
      this.status.textContent = this.spec.empty;
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
      const v = await this.fetch(id);
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
}
