import { afterEach, describe, expect, it, vi } from "vitest";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { AuditorView } from "../src/views/auditor";
import { job, reportView } from "./fixtures";

afterEach(() => clearMocks());
const notify = () => ({ error: vi.fn(), info: vi.fn() });

describe("auditor view", () => {
  it("opens streams from the native dialog and starts one audit over all of them", async () => {
    const calls: string[] = [];
    mockIPC((cmd, args) => {
      calls.push(cmd);
      if (cmd === "audit_pick_streams") return ["/a.jcps", "/b.jcps"];
      if (cmd === "audit_start") {
        expect(args).toEqual({ paths: ["/a.jcps", "/b.jcps"] });
        return job({ paths: ["/a.jcps", "/b.jcps"] });
      }
      throw new Error(cmd);
    });
    const v = new AuditorView(notify());
    await v.open();
    expect(calls).toEqual(["audit_pick_streams", "audit_start"]);
    expect(v.running).toBe(true);
    expect((v.root.querySelector(".audit-progress") as HTMLProgressElement).value).toBeCloseTo(0.25);
    expect(v.root.querySelector(".progress-text")?.textContent).toContain("10 records");
  });

  it("a cancelled dialog starts nothing", async () => {
    const calls: string[] = [];
    mockIPC((cmd) => {
      calls.push(cmd);
      return [];
    });
    await new AuditorView(notify()).open();
    expect(calls).toEqual(["audit_pick_streams"]);
  });

  it("cancel sends the job id and the view stops offering cancel", async () => {
    mockIPC((cmd, args) => {
      if (cmd === "audit_cancel") {
        expect(args).toEqual({ id: 7 });
        return job({ state: "cancelled" });
      }
      return job();
    });
    const v = new AuditorView(notify());
    v.showJob(job());
    const cancel = v.root.querySelector(".cancel-audit") as HTMLButtonElement;
    expect(cancel.disabled).toBe(false);
    cancel.click();
    await vi.waitFor(() => expect(v.root.querySelector(".verdict.cancelled")).not.toBeNull());
    expect(cancel.disabled).toBe(true);
    expect(v.running).toBe(false);
  });

  it("s8_2_done_audit_shows_verdict_and_the_engine_report_once", async () => {
    let reports = 0;
    mockIPC((cmd) => {
      if (cmd === "audit_status") return job({ state: "done", verdict: "findings", progress: { bytes_done: 2048, bytes_total: 2048, records: 10 } });
      if (cmd === "workspace_streams") return [{ path: "/ws/demo.jcps", size_bytes: 2048, opened_at_ms: 1, last_verdict: "findings" }];
      if (cmd === "steward_actions") return [{ at_ms: 5, action: "export_report", subject: "/tmp/r.html" }];
      if (cmd === "audit_report") {
        reports++;
        return reportView();
      }
      throw new Error(cmd);
    });
    const v = new AuditorView(notify());
    await v.refresh();
    await v.refresh();
    expect(reports).toBe(1);
    expect(v.root.querySelector("#audit-verdict .value")?.textContent).toBe("findings");
    // The answer first: what was found, counted, and where (issue 39).
    expect(v.root.querySelector("#audit-answer")?.textContent).toMatch(/^1 finding in 1 stream: 1 bad-signature; the first, bad-signature, at byte 4.096 of stream 0\./);
    expect(v.root.querySelector(".report td.num")?.textContent).toBe("9");
    expect((v.root.querySelector(".export-box") as HTMLElement).hidden).toBe(false);
    expect(v.root.querySelector(".recent-streams .last-verdict")?.textContent).toBe("findings");
    expect(v.root.querySelector(".steward-actions .what")?.textContent).toBe("export report");
  });

  it("a failed audit shows the engine's words, not a verdict", () => {
    const v = new AuditorView(notify());
    v.showJob(job({ state: "failed", error: { code: "audit.unreadable", message: "cannot read /a.jcps: permission denied" } }));
    expect(v.root.querySelector(".verdict.failed")?.textContent).toContain("permission denied");
    expect(v.root.querySelector("#audit-verdict")).toBeNull();
  });

  it("without the audit engine the open button is disabled and the reason shown", () => {
    const v = new AuditorView(notify());
    v.setAvailability(false, "crates/jcp-audit is not in this build yet");
    expect((v.root.querySelector(".open-streams") as HTMLButtonElement).disabled).toBe(true);
    expect(v.root.querySelector(".status")?.textContent).toContain("not available yet");
  });

  it("a start error reaches the person as words", async () => {
    const n = notify();
    mockIPC(() => {
      throw { code: "audit.unavailable", message: "The audit engine is not in this build yet." };
    });
    await new AuditorView(n).start(["/x"]);
    expect(n.error).toHaveBeenCalledWith({ code: "audit.unavailable", message: "The audit engine is not in this build yet." });
  });
});
