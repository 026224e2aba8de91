import { afterEach, describe, expect, it, vi } from "vitest";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { EnergyView } from "../src/views/energy";
import { snapshot } from "./fixtures";

afterEach(() => clearMocks());
const notify = () => ({ error: vi.fn(), info: vi.fn() });

describe("live energy view", () => {
  it("s5_shows_each_window_with_provenance_and_a_gap_as_no_reading", async () => {
    mockIPC((cmd, args) => {
      expect(cmd).toBe("energy_snapshot");
      expect(args).toEqual({ limit: 60 });
      return snapshot();
    });
    const v = new EnergyView(notify());
    await v.refresh();
    const rows = [...v.root.querySelectorAll(".windows-table tbody tr")];
    expect(rows).toHaveLength(3);
    // newest first
    expect(rows[0].querySelector(".provenance")?.textContent).toBe("ModelBased");
    expect(rows[0].querySelector(".coverage")?.textContent).toBe("Partial");
    expect(rows[0].querySelector(".coverage")?.classList.contains("partial")).toBe(true);
    expect(rows[1].classList.contains("gap")).toBe(true);
    expect(rows[1].querySelector(".energy")?.textContent).toBe("no reading");
    expect(rows[1].textContent).not.toContain("0 µJ");
    expect(rows[2].querySelector(".energy")?.textContent).toBe("1.250 J");
    expect(rows[2].querySelector(".grade")?.getAttribute("title")).toContain("hardware reading");
    expect(v.root.querySelector("#energy-chart svg#svg-from-rust")).not.toBeNull();
  });

  it("s11_a_live_runs_latest_metered_call_is_shown_under_the_windows", async () => {
    const line = "live-17, step 5: 325.000 mJ (Estimator, Partial — part of the call's work; gaps: not-declared-self-contained), metered by its endpoint behind the gate";
    mockIPC(() => snapshot({ live_metered: [line] }));
    const v = new EnergyView(notify());
    await v.refresh();
    const list = v.root.querySelector("#energy-live-metered") as HTMLElement;
    expect(list.hidden).toBe(false);
    expect([...list.querySelectorAll("li")].map((li) => li.textContent)).toEqual([line]);
    // No live run: nothing shown.
    mockIPC(() => snapshot());
    await v.refresh();
    expect(list.hidden).toBe(true);
  });

  it("issue39_the_headline_says_what_the_figures_are_the_total_is_at_least_and_power_is_in_watts", async () => {
    mockIPC(() => snapshot());
    const v = new EnergyView(notify());
    await v.refresh();
    const headline = v.root.querySelector("#energy-headline")!;
    expect(headline.textContent).toMatch(/^Mixed: /);
    expect(headline.classList.contains("headline-mixed")).toBe(true);
    expect(headline.textContent).not.toContain("Metering live");
    expect(v.root.querySelector("#energy-total")!.textContent).toBe(
      "1 s windows. Shown: at least 1.290 J modelled over the last 3 windows (3 s); 1 window without a reading not in it; 1 window covers only part of the machine.",
    );
    const rows = [...v.root.querySelectorAll(".windows-table tbody tr")];
    expect(rows.map((r) => r.querySelector(".power")?.textContent)).toEqual(["40 mW", "—", "1.250 W"]);
    expect(rows[2].querySelector(".energy")?.getAttribute("title")).toBe("1250000 µJ exactly");
  });

  it("s5_1_a_declined_rung_shows_the_grade_it_would_give_never_a_chip_as_if_earned", async () => {
    mockIPC(() => snapshot());
    const v = new EnergyView(notify());
    await v.refresh();
    const [rapl, estimate] = [...v.root.querySelectorAll(".ladder-table tbody tr")];
    expect(rapl.querySelector(".grade")).toBeNull();
    expect(rapl.querySelector(".grade-unearned")?.textContent).toBe("would give HwShunt");
    expect(estimate.querySelector(".grade")?.textContent).toBe("Estimator");
  });

  it("s5_1_ladder_panel_lists_every_rung_with_why_and_fix", async () => {
    mockIPC(() => snapshot());
    const v = new EnergyView(notify());
    await v.refresh();
    const rungs = [...v.root.querySelectorAll(".ladder-table tbody tr")];
    expect(rungs.map((r) => r.querySelector(".name")?.textContent)).toEqual(["rapl", "estimate"]);
    expect(rungs[0].classList.contains("declined")).toBe(true);
    expect(rungs[0].querySelector(".fix")?.textContent).toContain("chmod");
    expect(rungs[1].classList.contains("chosen")).toBe(true);
  });

  it("says honestly that metering is not available instead of showing data", async () => {
    mockIPC(() =>
      snapshot({
        meter: { available: false, reason: "crates/jcp-meter is not in this build" },
        windows: [],
        ladder: [],
        headline: { kind: "unavailable", text: "Live metering is not available: crates/jcp-meter is not in this build." },
      }),
    );
    const v = new EnergyView(notify());
    await v.refresh();
    const status = v.root.querySelector(".status")!;
    expect(status.textContent).toContain("not available");
    expect((v.root.querySelector("#energy-total") as HTMLElement).hidden).toBe(true);
    expect(status.textContent).toContain("crates/jcp-meter");
    expect(v.root.querySelector(".windows-table tbody")?.textContent).toContain("No windows recorded yet.");
  });

  it("shows a failed snapshot's message in words", async () => {
    mockIPC(() => {
      throw { code: "store.corrupt", message: "the workspace store /ws/x is damaged" };
    });
    const v = new EnergyView(notify());
    await v.refresh();
    expect(v.root.querySelector(".status.error")?.textContent).toBe("the workspace store /ws/x is damaged");
  });

  it("exports through the shell and reports where the file went", async () => {
    const n = notify();
    mockIPC((cmd, args) => {
      expect(cmd).toBe("energy_export");
      return { path: `/tmp/e.${(args as { format: string }).format}`, bytes: 42 };
    });
    const v = new EnergyView(n);
    (v.root.querySelector(".export-json") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(n.info).toHaveBeenCalledWith("Exported 42 bytes to /tmp/e.json"));
  });
});
