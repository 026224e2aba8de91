import { afterEach, describe, expect, it } from "vitest";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { Console } from "../src/main";
import { info, snapshot } from "./fixtures";

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
});
