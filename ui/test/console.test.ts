import { afterEach, describe, expect, it, vi } from "vitest";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { Console } from "../src/main";
import { info, job, snapshot } from "./fixtures";

afterEach(() => clearMocks());

describe("console shell", () => {
  it("a store that could not be opened is said plainly, with no silent loss", async () => {
    mockIPC((cmd) => {
      if (cmd === "app_info")
        return info({ store: { path: "/ws/workspace.sqlite", persistent: false, error: { code: "store.corrupt", message: "the workspace store /ws/workspace.sqlite is damaged" }, window_retention: 10 } });
      return snapshot();
    });
    const root = document.createElement("div");
    const c = new Console(root);
    await c.start();
    c.stop();
    const banner = root.querySelector(".banner.error")!;
    expect(banner.textContent).toContain("is damaged");
    expect(banner.textContent).toContain("nothing will be saved");
  });

  it("opened with streams (`jcp-console S.jcps`), it lands on the Auditor, not the Workspace", async () => {
    mockIPC((cmd) => {
      if (cmd === "app_info") return info({ audit_at_start: true });
      if (cmd === "audit_status") return job({ state: "running", verdict: null, progress: { bytes_done: 1, bytes_total: 10, records: 1 } });
      if (cmd === "workspace_streams" || cmd === "steward_actions" || cmd === "workspace_overview") return [];
      return snapshot();
    });
    const root = document.createElement("div");
    const c = new Console(root);
    await c.start();
    c.stop();
    expect((root.querySelector("#view-auditor") as HTMLElement).hidden).toBe(false);
    expect(root.querySelector("#tab-auditor")!.classList.contains("active")).toBe(true);
  });

  it("issue39_a_first_run_guide_names_the_view_for_each_person_and_stays_hidden_once_dismissed", async () => {
    localStorage.clear();
    mockIPC((cmd) => (cmd === "app_info" ? info() : cmd === "energy_snapshot" ? snapshot() : []));
    const root = document.createElement("div");
    const c = new Console(root);
    c.stop();
    const guide = root.querySelector("#first-run-guide") as HTMLElement;
    expect(guide.hidden).toBe(false);
    const people = [...guide.querySelectorAll(".guide-go")].map((b) => b.textContent);
    expect(people).toEqual(["A steward", "An auditor", "A developer", "Everyone"]);
    (guide.querySelectorAll(".guide-go")[1] as HTMLButtonElement).click();
    expect((root.querySelector("#view-auditor") as HTMLElement).hidden).toBe(false);
    c.stop();
    (guide.querySelector(".guide-dismiss") as HTMLButtonElement).click();
    expect(guide.hidden).toBe(true);
    // A later start remembers it.
    const again = document.createElement("div");
    new Console(again).stop();
    expect((again.querySelector("#first-run-guide") as HTMLElement).hidden).toBe(true);
    localStorage.clear();
  });

  it("tabs switch views and only the visible one is polled", async () => {
    const seen: string[] = [];
    mockIPC((cmd) => {
      seen.push(cmd);
      if (cmd === "app_info") return info();
      if (cmd === "energy_snapshot") return snapshot();
      if (cmd === "audit_status") return null;
      if (cmd === "workspace_streams") return [];
      if (cmd === "steward_actions") return [];
      throw new Error(cmd);
    });
    const root = document.createElement("div");
    const c = new Console(root);
    expect((root.querySelector("#view-auditor") as HTMLElement).hidden).toBe(true);
    seen.length = 0;
    (root.querySelector("#tab-auditor") as HTMLButtonElement).click();
    await new Promise((r) => setTimeout(r, 0));
    expect((root.querySelector("#view-energy") as HTMLElement).hidden).toBe(true);
    expect(seen).toContain("audit_status");
    expect(seen).not.toContain("energy_snapshot");
    c.stop();
  });

  it("back on a running audit, progress is polled at its 200 ms pace at once, not after the other tab's 1 s timer", async () => {
    vi.useFakeTimers();
    try {
      const polls: number[] = [];
      mockIPC((cmd) => {
        if (cmd === "app_info") return info();
        if (cmd === "energy_snapshot") return snapshot();
        if (cmd === "audit_status") {
          polls.push(Date.now());
          return job({ state: "running", verdict: null, progress: { bytes_done: 1, bytes_total: 10, records: 1 } });
        }
        if (cmd === "workspace_streams" || cmd === "steward_actions") return [];
        if (cmd === "workspace_overview") return [];
        throw new Error(cmd);
      });
      const root = document.createElement("div");
      const c = new Console(root);
      (root.querySelector("#tab-auditor") as HTMLButtonElement).click();
      await vi.advanceTimersByTimeAsync(1000);
      (root.querySelector("#tab-energy") as HTMLButtonElement).click();
      await vi.advanceTimersByTimeAsync(50);
      (root.querySelector("#tab-auditor") as HTMLButtonElement).click();
      polls.length = 0;
      await vi.advanceTimersByTimeAsync(1000);
      // About five polls a second (never one, as with the energy view's 1 s timer left running).
      expect(polls.length).toBeGreaterThanOrEqual(4);
      const gaps = polls.slice(1).map((t, i) => t - polls[i]);
      expect(Math.max(...gaps)).toBeLessThanOrEqual(250);
      // And only one loop runs: never more than one poll per 200 ms.
      expect(polls.length).toBeLessThanOrEqual(6);
      c.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it("issue39_info_notices_dismiss_themselves_errors_stay_and_say_their_code_once", async () => {
    vi.useFakeTimers();
    try {
      mockIPC((cmd) => {
        if (cmd === "app_info") return info();
        if (cmd === "energy_snapshot") return snapshot();
        return [];
      });
      const root = document.createElement("div");
      const c = new Console(root);
      c.notice("Key created and unlocked.", "info");
      c.notice("key-exists: /ws/steward.key: a file is already there", "error", "key-exists");
      expect(root.querySelectorAll(".notice")).toHaveLength(2);
      expect(root.querySelector(".notice.error .text")?.textContent).toBe("/ws/steward.key: a file is already there");
      vi.advanceTimersByTime(6500);
      expect(root.querySelectorAll(".notice.info")).toHaveLength(0);
      expect(root.querySelectorAll(".notice.error")).toHaveLength(1);
      for (let i = 0; i < 8; i++) c.notice(`e${i}`, "error", "x");
      expect(root.querySelectorAll(".notice")).toHaveLength(5);
      expect(root.querySelector(".notice .text")?.textContent).toBe("e3");
      c.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});
