import { afterEach, describe, expect, it, vi } from "vitest";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { SessionsPanel } from "../src/views/sessions";
import type { SessionAnalysis } from "../src/ipc";

afterEach(() => clearMocks());

const notify = () => ({ error: vi.fn(), info: vi.fn() });

const analysis = (over: Partial<SessionAnalysis> = {}): SessionAnalysis => ({
  session: "/ws/sessions/session-1.json",
  occupancy: "idle",
  windows: 4,
  baseline: "/ws/sessions/baseline-session-0.json",
  baseline_text: "5.000 J – 5.200 J per window, declared for host vm at occupancy \"idle\" with 1000 ms windows",
  counts: { within_band: 1, explained: 0, unexplained: 1, inapplicable: 0, unresolvable: 1 },
  grades: [["HwShunt", 3], ["gap", 1]],
  rows: [
    { seq: 0, start_ms: 1000, energy: "5.100 J", provenance: "HwShunt", coverage: "Whole", look: "within-band", why: "inside the baseline's band" },
    { seq: 1, start_ms: 2000, energy: "9.000 J", provenance: "HwShunt", coverage: "Whole", look: "unexplained", why: "9.000 J outside the band 5.000 J – 5.200 J: worth a look, not a finding" },
    { seq: 2, start_ms: 3000, energy: null, provenance: null, coverage: null, look: "unresolvable", why: "a gap" },
  ],
  conservation: null,
  ...over,
});

describe("live energy sessions (§5.4, §5.5)", () => {
  it("s5_4_the_five_looks_are_counted_apart_and_a_gap_is_no_figure", () => {
    const p = new SessionsPanel(notify());
    p.show(analysis());
    const counts = [...p.root.querySelectorAll(".looks .look")].map((l) => l.textContent);
    expect(counts).toEqual(["1 within band", "0 explained", "1 unexplained", "0 inapplicable", "1 unresolvable"]);
    const rows = [...p.root.querySelectorAll(".session-windows tr.swin")];
    expect(rows[1].classList.contains("unexplained")).toBe(true);
    expect(rows[2].querySelector(".energy")?.textContent).toBe("no reading");
    expect(p.root.querySelector(".hint")?.textContent).toContain("no single score");
  });

  it("s5_5_partial_windows_are_kept_apart_and_an_unreconciled_grant_says_why", () => {
    const p = new SessionsPanel(notify());
    p.show(analysis({
      conservation: {
        grant_id: "ab12", budget: "5.000 J", debited: "657.198 mJ", allows: 12, receipts_failed: 0,
        whole: "600.000 mJ", whole_windows: 2, partial: "7 µJ", partial_windows: 1, gap_windows: 0,
        reconciled: false, unreconciled: "meter-coverage-partial", discrepancy_uj: null,
        basis: "modelled", provenance_floor: "Estimator", balanced: false, statement: "not reconciled: a Partial window",
      },
    }));
    const c = p.root.querySelector("#session-conservation")!;
    expect(c.querySelector(".partial td")?.textContent).toContain("never added to the Whole sum");
    expect(c.querySelector(".unreconciled td")?.textContent).toBe("not made: meter-coverage-partial");
    expect(c.querySelector(".balanced.no td")?.textContent).toBe("no");
  });

  it("recording starts with the declared occupancy and stopping fills the session field", async () => {
    const calls: [string, unknown][] = [];
    let recording = false;
    mockIPC((cmd, args) => {
      calls.push([cmd, args]);
      if (cmd === "energy_record_status") return { meter_running: true, recording, occupancy: recording ? "idle" : null, windows: recording ? 3 : 0, started_ms: recording ? 1000 : null, full: false };
      if (cmd === "energy_record_start") { recording = true; return null; }
      if (cmd === "energy_record_stop") { recording = false; return { path: "/ws/sessions/session-1000.json", handle: "f-s1000", windows: 3, full: false }; }
      if (cmd === "workspace_streams") return [];
      throw new Error(cmd);
    });
    const n = notify();
    const p = new SessionsPanel(n);
    await p.refresh();
    (p.root.querySelector("#session-occupancy") as HTMLInputElement).value = "idle";
    (p.root.querySelector("#session-record") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(p.root.querySelector(".rec-state")?.textContent).toContain('occupancy "idle"'));
    expect(calls.find((c) => c[0] === "energy_record_start")?.[1]).toEqual({ occupancy: "idle" });
    (p.root.querySelector("#session-record") as HTMLButtonElement).click();
    await vi.waitFor(() => expect((p.root.querySelector("#session-path") as HTMLInputElement).value).toBe("/ws/sessions/session-1000.json"));
    expect(n.info).toHaveBeenCalledWith(expect.stringContaining("Saved 3 window(s)"));
  });

  it("without a meter nothing can be recorded, in words", () => {
    const p = new SessionsPanel(notify());
    p.showRecording({ meter_running: false, recording: false, occupancy: null, windows: 0, started_ms: null, full: false });
    expect((p.root.querySelector("#session-record") as HTMLButtonElement).disabled).toBe(true);
    expect(p.root.querySelector(".rec-state")?.textContent).toContain("nothing can be recorded");
  });

  it("a refused session is said with its code", async () => {
    mockIPC(() => {
      throw { code: "energy.refused", message: "/x.json was refused (session-malformed): windows[0].energy_uj" };
    });
    const p = new SessionsPanel(notify());
    await p.analyze();
    expect(p.root.querySelector(".sessions .status.error, .status.error")?.textContent).toContain("session-malformed");
  });

  it("issue34_the_analysis_sends_the_files_by_their_handles_never_their_paths", async () => {
    const asked: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "energy_record_status") return { meter_running: true, recording: false, occupancy: null, windows: 0, started_ms: null, full: false };
      if (cmd === "workspace_streams") return [{ path: "/ws/demo/demo.jcps", handle: "f-demo", size_bytes: 1, opened_at_ms: 1, last_verdict: null }];
      if (cmd === "energy_baseline_declare") { asked.push(["declare", args]); return { path: "/ws/sessions/baseline-session-1.json", handle: "f-b1", text: "a band" }; }
      if (cmd === "energy_session_analyze") { asked.push(["analyze", args]); return analysis(); }
      throw new Error(cmd);
    });
    const p = new SessionsPanel(notify());
    await p.refresh();
    const field = (q: string) => p.root.querySelector(q) as HTMLInputElement;
    expect(field("#session-path").readOnly && field("#session-streams").readOnly).toBe(true);
    p.setFile("session", { handle: "f-s1", path: "/ws/sessions/session-1.json" });
    (p.root.querySelector("#session-declare") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(field("#session-baseline").value).toBe("/ws/sessions/baseline-session-1.json"));
    const sel = p.root.querySelector("#session-workspace-streams") as HTMLSelectElement;
    sel.value = "f-demo";
    sel.dispatchEvent(new Event("change"));
    expect(field("#session-streams").value).toBe("/ws/demo/demo.jcps");
    field("#session-grant").value = "ab".repeat(32);
    await p.analyze();
    expect(asked).toEqual([
      ["declare", { session: "f-s1" }],
      ["analyze", { form: { session: "f-s1", baseline: "f-b1", causes: null, streams: ["f-demo"], grant: "ab".repeat(32) } }],
    ]);
  });
});
