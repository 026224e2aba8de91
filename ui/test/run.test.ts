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
    // In the user's zone, said (the tests run in UTC: ui/test/setup.ts).
    expect(rows[0].querySelector(".at")?.textContent).toBe("2026-01-01 09:01 UTC+00:00");
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

describe("who stands behind the grants (§2.1, §2.2, §4.6)", () => {
  const plain = () => runView().authority;

  it("c12_a_rotated_stewards_key_log_shows_current_and_rotated_away_keys", () => {
    const v = new RunView();
    v.show(runView({
      authority: {
        ...plain(),
        issuer: "did:key:z6MkIdentity",
        issuer_kind: "rotated",
        issuer_text: "rotated identity: 2 rotation(s); its key log names did:key:z6MkK2 as the key that signs for it now",
        key_log: {
          path: "/ws/demo/authority/rotated/steward.jcpkeys",
          identity: "did:key:z6MkIdentity",
          current: "did:key:z6MkK2",
          rotations: 2,
          superseded: ["did:key:z6MkIdentity", "did:key:z6MkK1"],
          events: [
            { seq: 0, role: "inception", id: "aa01", current: "did:key:z6MkIdentity", next_hash: "h1", signature_valid: true },
            { seq: 1, role: "rotation", id: "aa02", current: "did:key:z6MkK1", next_hash: "h2", signature_valid: true },
            { seq: 2, role: "rotation", id: "aa03", current: "did:key:z6MkK2", next_hash: "h3", signature_valid: true },
          ],
          refused: null,
        },
      },
    }));
    expect(v.root.querySelector(".run-summary .chip.issuer-rotated")?.textContent).toBe("rotated identity");
    const rows = [...v.root.querySelectorAll(".key-log-table tr.key-event")];
    expect(rows.map((r) => r.querySelector(".num")?.textContent)).toEqual(["0", "1", "2"]);
    expect(rows[0].querySelector(".superseded")?.textContent).toContain("rotated away");
    expect(rows[1].querySelector(".superseded")?.textContent).toContain("rotated away");
    expect(rows[2].querySelector(".current")?.textContent).toContain("current");
    expect(v.root.querySelector(".key-log-state")?.textContent).toContain("after 2 rotation(s)");
  });

  it("c12_a_refused_key_log_says_no_key_controls_the_identity", () => {
    const v = new RunView();
    v.show(runView({
      verdict: "findings",
      authority: {
        ...plain(),
        issuer_kind: "unresolved",
        issuer_text: "no key is taken to control this identity: rotation-forked: two key logs diverge",
        key_log: { path: "/k", identity: "did:key:z6MkSteward", current: null, rotations: null, superseded: [], events: [], refused: { code: "rotation-forked", message: "rotation-forked: two key logs diverge" } },
        problems: [{ path: "/ws/fork.jcpkeys", claims: "key log", refused: { code: "rotation-forked", message: "rotation-forked: two key logs diverge" } }],
      },
    }));
    expect(v.root.querySelector(".chip.issuer-unresolved")).not.toBeNull();
    expect(v.root.querySelector(".key-log-state.refused .code")?.textContent).toBe("rotation-forked");
    expect(v.root.querySelector(".problems-table .code")?.textContent).toBe("rotation-forked");
  });

  it("s2_2_a_threshold_issuer_is_marked_k_of_n", () => {
    const v = new RunView();
    v.show(runView({
      authority: {
        ...plain(),
        issuer_text: "threshold actor, 2-of-3 (dealer): any 2 of its 3 shareholders sign together, and the aggregate verifies under the group's did:key",
        threshold: { path: "/ws/board.jcpt", group: "did:key:z6MkSteward", threshold: "2-of-3", min_signers: 2, max_signers: 3, origin: "dealer", participants: [1, 2, 3] },
      },
    }));
    expect(v.root.querySelector(".run-summary .chip.threshold")?.textContent).toBe("2-of-3 threshold");
    expect(v.root.querySelector(".threshold-group h4")?.textContent).toContain("2-of-3");
    expect(v.root.querySelector(".threshold-group")?.textContent).toContain("any 2 of its 3 shareholders (1, 2, 3)");
  });

  it("c20_a_standing_grants_ledger_shows_firings_and_minted_budget_not_as_energy", () => {
    const v = new RunView();
    v.show(runView({
      authority: {
        ...plain(),
        standing: {
          grant_id: "5t4nd1ng", grant_path: "/s/standing-grant.jcp", policy_path: "/s/mint-policy.jcp", ledger_path: "/s/mint-ledger.jcp",
          event_class: "c1a55", grant_budget: "10.000 MJ (2.777 kWh)", per_firing: "2.000 MJ (0.555 kWh)", max_firings: 5, firings: 3, firings_left: 2,
          minted: "6.000 MJ (1.666 kWh)", mintable: "4.000 MJ (1.111 kWh)", chain_ok: true, chain_text: "this run's grant chain-verifies to the standing grant (§4.2)", refused: null,
        },
      },
    }));
    expect(v.root.querySelector(".standing-table .firings td")?.textContent).toBe("3 of 5 (2 left)");
    expect(v.root.querySelector(".standing-table .minted td")?.textContent).toContain("not energy measured");
    expect(v.root.querySelector(".standing-table .chain.ok td")?.textContent).toContain("chain-verifies");
  });

  it("a plain steward shows no chip and no material", () => {
    const v = new RunView();
    v.show(runView());
    expect(v.root.querySelector(".run-summary .chip")).toBeNull();
    expect(v.root.querySelector("#run-authority .issuer-text")?.textContent).toContain("plain did:key");
    expect(v.root.querySelector(".key-log, .threshold-group, .standing, .material-problems")).toBeNull();
  });
});
