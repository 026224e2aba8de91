import { afterEach, describe, expect, it } from "vitest";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { api, toUiError } from "../src/ipc";

afterEach(() => clearMocks());

describe("ipc", () => {
  it("passes command names and arguments exactly as the shell declares them", async () => {
    const seen: Array<[string, unknown]> = [];
    mockIPC((cmd, args) => {
      seen.push([cmd, args]);
      return cmd === "audit_pick_streams" ? [{ handle: "f-a", path: "/a" }] : { path: null, bytes: 0 };
    });
    await api.energyExport("csv");
    await api.auditPickStreams();
    await api.auditExport(3, "html");
    expect(seen).toEqual([
      ["energy_export", { format: "csv" }],
      ["audit_pick_streams", {}],
      ["audit_export", { id: 3, format: "html" }],
    ]);
  });

  it("the workspace, run and blueprint commands carry the item id as the shell declares it", async () => {
    const seen: Array<[string, unknown]> = [];
    mockIPC((cmd, args) => {
      seen.push([cmd, args]);
      return cmd === "workspace_overview" ? [] : {};
    });
    await api.workspaceOverview();
    await api.runReport(4);
    await api.blueprintReport(5);
    expect(seen).toEqual([
      ["workspace_overview", {}],
      ["run_report", { id: 4 }],
      ["blueprint_report", { id: 5 }],
    ]);
  });

  it("turns a rejected command into {code, message}", async () => {
    mockIPC(() => {
      throw { code: "store.locked", message: "the workspace store is locked" };
    });
    await expect(api.appInfo()).rejects.toEqual({ code: "store.locked", message: "the workspace store is locked" });
  });

  it("names an answer it cannot read instead of showing nothing", () => {
    expect(toUiError(undefined)).toEqual({ code: "ipc.failed", message: "The console's back end did not answer as expected." });
    expect(toUiError("boom")).toEqual({ code: "ipc.failed", message: "boom" });
  });
});
