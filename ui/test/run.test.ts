import { afterEach, describe, expect, it } from "vitest";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { RunView } from "../src/views/run";
import { items, runView } from "./fixtures";

afterEach(() => clearMocks());

describe("run view (the steward's, read-only)", () => {
  it("s4_7_lists_checkpoints_with_spend_provenance_remainder_amendments_and_verdicts", async () => {
    const asked: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "workspace_overview") return items();
      if (cmd === "run_report") {
        asked.push(args);
        return runView();
      }
      throw new Error(cmd);
    });
    const v = new RunView();
    await v.refresh();
    expect(asked).toEqual([{ id: 1 }]);
    expect(v.root.querySelector("#run-verdict .value")?.textContent).toBe("clean");
    const rows = [...v.root.querySelectorAll(".checkpoints-table tbody tr.checkpoint")];
    expect(rows.map((r) => r.querySelector(".seq")?.textContent)).toEqual(["0", "3", "4"]);
    // seq 0 states no spend: "not stated", and no remainder figure — never the full budget.
    expect(rows[0].querySelector(".spent")?.textContent).toBe("not stated");
    expect(rows[0].querySelector(".remainder")?.textContent).toBe("unknown — no spend stated");
    expect(rows[0].querySelector(".remainder")?.textContent).not.toContain("3.600 MJ");
    expect(rows[0].querySelector(".at")?.textContent).toBe("2026-01-01 09:01 UTC");
    // A stated spend carries its grade.
    expect(rows[1].querySelector(".spent .amount")?.textContent).toBe("1.028 MJ (0.285 kWh)");
    expect(rows[1].querySelector(".spent .grade")?.textContent).toBe("HwShunt");
    // The amendment and its continuation.
    const am = rows[1].nextElementSibling!.querySelector(".amendment")!;
    expect(am.textContent).toContain("budget set to 1.286 MJ (0.357 kWh)");
    expect(am.querySelector(".continuation.ok")?.textContent).toContain("continuation grant verified");
    expect(rows[1].querySelector("td:nth-child(3)")?.textContent).toContain("run");
    expect(rows[2].querySelector("td:nth-child(3)")?.textContent).toContain("continuation");
    // Verdict per record, with its code.
    expect(rows[2].querySelector(".rverdict.finding")?.textContent).toContain("steer-spend-decreased");
    expect(v.root.querySelector(".findings-table .code")?.textContent).toBe("steer-spend-decreased");
    expect(v.root.querySelector(".run-summary")?.textContent).toContain("3.600 MJ (1.000 kWh)");
  });

  it("s4_7_no_active_grant_and_unknown_remainder_are_said_not_filled_in", () => {
    const v = new RunView();
    v.show(runView({ active_budget: null, remainder: { known: false, uj: null, text: "unknown — no spend stated" }, latest_spent: { uj: null, provenance: null, amount: null, text: "not stated" } }));
    const summary = v.root.querySelector(".run-summary")!.textContent!;
    expect(summary).toContain("none: no grant is active");
    expect(summary).toContain("unknown — no spend stated");
    expect(summary).toContain("not stated");
  });

  it("a run that cannot be read is said in words", async () => {
    mockIPC((cmd) => {
      if (cmd === "workspace_overview") return items();
      throw { code: "run.unreadable", message: "the run /ws/demo/demo.jcprun could not be read (cbor-truncated): record 3 is cut short" };
    });
    const v = new RunView();
    await v.refresh();
    expect(v.root.querySelector(".status.error")?.textContent).toContain("record 3 is cut short");
    expect(v.root.querySelector("#run-verdict")).toBeNull();
  });
});
