import { afterEach, describe, expect, it, vi } from "vitest";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { WorkspaceView } from "../src/views/workspace";
import { Console } from "../src/main";
import { blueprintReport, info, items, job } from "./fixtures";

afterEach(() => clearMocks());

describe("workspace overview", () => {
  it("issue7_lists_streams_runs_and_blueprints_each_with_its_outcome_and_an_open_button", async () => {
    mockIPC(() => items());
    const open = vi.fn();
    const v = new WorkspaceView(open);
    await v.refresh();
    const rows = [...v.root.querySelectorAll(".items-table tbody tr")];
    expect(rows.map((r) => r.querySelector(".kind")?.textContent)).toEqual(["receipt stream", "run", "blueprint reconcile", "blueprint reconcile"]);
    expect(rows.map((r) => r.querySelector(".outcome")?.textContent)).toEqual(["clean", "not verified yet", "consistent", "not reconciled yet"]);
    (rows[2].querySelector(".open-item") as HTMLButtonElement).click();
    expect(open).toHaveBeenCalledWith(items()[2]);
  });

  it("an item is removed from the workspace with its Remove button, its file named as untouched", async () => {
    let listed = items();
    const seen: Array<[string, unknown]> = [];
    mockIPC((cmd, args) => {
      seen.push([cmd, args]);
      if (cmd === "workspace_forget") {
        listed = listed.filter((i) => i.handle !== (args as { handle: string }).handle);
        return null;
      }
      return listed;
    });
    const v = new WorkspaceView(vi.fn());
    await v.refresh();
    const first = items()[0];
    (v.root.querySelector(".items-table tbody tr .forget-item") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(v.root.querySelectorAll(".items-table tbody tr").length).toBe(3));
    expect(seen).toContainEqual(["workspace_forget", { kind: first.kind, id: first.id, handle: first.kind === "stream" ? first.handle : null }]);
    expect(v.root.querySelector(".status")!.textContent).toContain("untouched");
  });

  it("opening a blueprint from the overview shows the blueprint view with its reconcile", async () => {
    const seen: Array<[string, unknown]> = [];
    mockIPC((cmd, args) => {
      seen.push([cmd, args]);
      if (cmd === "app_info") return info();
      if (cmd === "workspace_overview") return items();
      if (cmd === "blueprint_report") return blueprintReport();
      if (cmd === "audit_start") return job({ paths: ["/ws/demo/demo.jcps"] });
      if (cmd === "audit_status") return null;
      if (cmd === "workspace_streams" || cmd === "steward_actions") return [];
      throw new Error(cmd);
    });
    const root = document.createElement("div");
    const c = new Console(root);
    expect((root.querySelector("#view-workspace") as HTMLElement).hidden).toBe(false);
    await c.workspace.refresh();
    (root.querySelectorAll<HTMLButtonElement>("#view-workspace .open-item")[3]).click();
    await vi.waitFor(() => expect(root.querySelector("#blueprint-verdict")).not.toBeNull());
    expect((root.querySelector("#view-blueprint") as HTMLElement).hidden).toBe(false);
    expect((root.querySelector("#view-workspace") as HTMLElement).hidden).toBe(true);
    expect(seen).toContainEqual(["blueprint_report", { id: 3 }]);
    // A stream opens in the auditor and is audited.
    (root.querySelectorAll<HTMLButtonElement>("#view-workspace .open-item")[0]).click();
    await vi.waitFor(() => expect(seen).toContainEqual(["audit_start", { handles: ["f-demo"] }]));
    expect((root.querySelector("#view-auditor") as HTMLElement).hidden).toBe(false);
    c.stop();
  });
});
