// The console's front end: seven views (workspace overview, steward, live
// energy, auditor, run, blueprint, intent), a banner for the workspace store's
// state, and one notice area. Everything it shows comes from the shell.
import "./style.css";
import { api, type AppInfo, type UiError } from "./ipc";
import { el } from "./format";
import { EnergyView, type Notifier } from "./views/energy";
import { AuditorView } from "./views/auditor";
import { WorkspaceView } from "./views/workspace";
import { BlueprintView } from "./views/blueprint";
import { RunView } from "./views/run";
import { StewardView } from "./views/steward";
import { IntentPanel } from "./views/intent";
import type { WorkspaceItem } from "./ipc";

export type ViewName = "workspace" | "steward" | "energy" | "auditor" | "run" | "blueprint" | "intent";

/** How long an info notice stays (an error stays until dismissed). */
export const INFO_NOTICE_MS = 6000;
/** Where the first-run guide's dismissal is kept. */
const GUIDE_DISMISSED = "jcp.first-run-guide.dismissed";

/** The most notices shown at once. */
export const MAX_NOTICES = 5;

export class Console {
  readonly root: HTMLElement;
  private notices = el("div", "notices");
  private banner = el("div", "banner");
  private footer = el("footer");
  readonly energy: EnergyView;
  readonly auditor: AuditorView;
  readonly workspace: WorkspaceView;
  readonly blueprint: BlueprintView;
  readonly run: RunView;
  readonly steward: StewardView;
  readonly intent: IntentPanel;
  private badge = el("span", "badge");
  private current: ViewName = "workspace";
  private tabs: Record<string, HTMLButtonElement> = {};
  private timer: ReturnType<typeof setTimeout> | null = null;
  private loopToken = 0;

  constructor(root: HTMLElement) {
    this.root = root;
    const notify: Notifier = {
      error: (e: UiError) => this.notice(e.message, "error", e.code),
      info: (t: string) => this.notice(t, "info"),
    };
    this.energy = new EnergyView(notify);
    this.auditor = new AuditorView(notify);
    this.workspace = new WorkspaceView((item) => void this.openItem(item));
    this.blueprint = new BlueprintView(notify.error);
    this.intent = new IntentPanel(notify);
    this.run = new RunView();
    this.steward = new StewardView(notify);
    this.steward.onAwaiting = (n) => this.setAwaiting(n);
    this.steward.onAudit = (handle) => {
      this.select("auditor");
      void this.auditor.start([handle]);
    };
    const nav = el("nav");
    nav.append(el("span", "brand", "JCP Console"));
    for (const [id, label] of [
      ["workspace", "Workspace"],
      ["steward", "Steward"],
      ["energy", "Live energy"],
      ["auditor", "Auditor"],
      ["run", "Run"],
      ["blueprint", "Blueprint"],
      ["intent", "Intent"],
    ] as const) {
      const b = el("button", "tab", label);
      b.id = `tab-${id}`;
      b.addEventListener("click", () => this.select(id));
      this.tabs[id] = b;
      nav.append(b);
    }
    this.banner.hidden = true;
    const main = el("main");
    this.badge.id = "steward-badge";
    this.badge.hidden = true;
    this.tabs.steward.append(this.badge);
    main.append(this.workspace.root, this.steward.root, this.energy.root, this.auditor.root, this.run.root, this.blueprint.root, this.intent.root);
    root.replaceChildren(nav, this.banner, this.guide(), this.notices, main, this.footer);
    this.select("workspace");
  }

  private views(): Record<ViewName, { root: HTMLElement; refresh(): Promise<void> }> {
    return { workspace: this.workspace, steward: this.steward, energy: this.energy, auditor: this.auditor, run: this.run, blueprint: this.blueprint, intent: this.intent };
  }

  /** Opens a workspace item in its view: a stream is audited, a run verified, a blueprint reconciled. */
  async openItem(item: WorkspaceItem): Promise<void> {
    if (item.kind === "stream") {
      this.select("auditor");
      await this.auditor.start([item.handle]);
    } else if (item.kind === "run" && item.id !== null) {
      this.select("run");
      await this.run.open(item.id);
    } else if (item.kind === "blueprint" && item.id !== null) {
      this.select("blueprint");
      await this.blueprint.open(item.id);
    }
  }

  /** The Steward tab's badge and the window title say how many checkpoints
   *  await the steward; a new one while the window is in the background is
   *  also announced by the shell as a desktop notification. */
  setAwaiting(n: number): void {
    this.badge.hidden = n === 0;
    this.badge.textContent = String(n);
    this.badge.title = `${n} checkpoint(s) await your decision`;
    this.tabs.steward.classList.toggle("attention", n > 0);
    document.title = n > 0 ? `(${n}) JCP Console — a checkpoint awaits you` : "JCP Console";
  }

  /** A notice (issue 39): an info notice dismisses itself after {@link INFO_NOTICE_MS}; an error stays until dismissed and says its
   * code once (a message that opens with it again is shown without it); at most {@link MAX_NOTICES} are shown, the oldest going first. */
  notice(text: string, kind: "error" | "info", code?: string): void {
    const n = el("div", `notice ${kind}`);
    const shown = code && text.startsWith(`${code}: `) ? text.slice(code.length + 2) : text;
    n.append(el("span", "text", shown));
    if (code) n.append(el("code", "code", code));
    const close = el("button", "close", "×");
    close.title = "Dismiss";
    close.addEventListener("click", () => n.remove());
    n.append(close);
    this.notices.append(n);
    while (this.notices.children.length > MAX_NOTICES) this.notices.firstElementChild?.remove();
    if (kind === "info") setTimeout(() => n.remove(), INFO_NOTICE_MS);
  }

  /** The first-run guide: which view serves whom, one click to each; shown
   *  until dismissed (remembered in the window's local storage). */
  guide(): HTMLElement {
    const g = el("aside", "first-run");
    g.id = "first-run-guide";
    const store = (globalThis as { localStorage?: Storage }).localStorage;
    g.hidden = store?.getItem(GUIDE_DISMISSED) === "1";
    g.append(el("h3", undefined, "Where to start"));
    const list = el("ul");
    for (const [view, who, what] of [
      ["steward", "A steward", "reviews the signed checkpoints of agent runs awaiting them, then approves, amends (only ever tighter) or revokes; MCP gateway runs are set up here too."],
      ["auditor", "An auditor", "opens receipt streams and gets a verdict that checks every signature, replays every budget and counts every finding."],
      ["blueprint", "A developer", "reads the reconcile report of a Blueprint and its Deployment (and, under Intent, an intent's hash and a comparison)."],
      ["energy", "Everyone", "sees this machine's own energy, each window labelled with how it was measured and how much it covers."],
    ] as const) {
      const li = el("li");
      const go = el("button", "guide-go small", who);
      go.addEventListener("click", () => this.select(view));
      li.append(go, el("span", undefined, ` ${what}`));
      list.append(li);
    }
    const close = el("button", "guide-dismiss small", "Got it, hide this");
    close.addEventListener("click", () => {
      g.hidden = true;
      store?.setItem(GUIDE_DISMISSED, "1");
    });
    g.append(
      el("p", undefined, "The Workspace below holds a demo written on first start: receipt streams (one tampered), runs with checkpoints, a blueprint with two deployments."),
      list,
      close,
    );
    return g;
  }

  select(view: ViewName): void {
    this.current = view;
    for (const [name, v] of Object.entries(this.views())) v.root.hidden = name !== view;
    for (const [id, b] of Object.entries(this.tabs)) b.classList.toggle("active", id === view);
    // Restart the poll loop for the new view at once, at its own pace: the
    // timer left by the old view (1 s for an idle one) would otherwise hold
    // back a running audit's progress after a visit to another tab.
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    void this.tick(true);
  }

  showInfo(info: AppInfo): void {
    if (!info.store.persistent) {
      this.banner.hidden = false;
      this.banner.className = "banner error";
      this.banner.textContent = `${info.store.error?.message ?? "The workspace store could not be opened."} This session keeps its data in memory only; nothing will be saved.`;
    }
    this.auditor.setAvailability(info.audit.available, info.audit.reason);
    this.footer.textContent = `JCP Console ${info.version} · workspace ${info.workspace} · store ${info.store.path}`;
  }

  async start(): Promise<void> {
    try {
      const info = await api.appInfo();
      this.showInfo(info);
      // `jcp-console --blueprint F --deployment F` opens that reconcile at once.
      if (info.open_at_start !== null) {
        this.select("blueprint");
        await this.blueprint.open(info.open_at_start);
      } else if (info.audit_at_start) {
        // `jcp-console S.jcps…` opens on those streams' audit.
        this.select("auditor");
      }
    } catch (e) {
      const u = e as UiError;
      this.notice(u.message, "error", u.code);
    }
    await this.tick(true);
  }

  /** One poll of the visible view; reschedules itself when `loop` (only the
   *  newest loop does, so switching views never leaves two loops running). */
  async tick(loop: boolean): Promise<void> {
    const token = loop ? ++this.loopToken : this.loopToken;
    await this.views()[this.current].refresh();
    // The badge is kept current from every view.
    if (this.current !== "steward") await this.steward.poll();
    if (loop && token === this.loopToken) {
      const delay = this.current === "auditor" && this.auditor.running ? 200 : 1000;
      this.timer = setTimeout(() => void this.tick(true), delay);
    }
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
  }
}

const mount = document.getElementById("app");
if (mount && !(globalThis as { __JCP_TEST__?: boolean }).__JCP_TEST__) {
  void new Console(mount).start();
}
