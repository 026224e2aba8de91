import { afterEach, describe, expect, it } from "vitest";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { StewardView } from "../src/views/steward";
import type { KeyStatus, StewardOverview, StewardRunView } from "../src/ipc";
import type { MeteredCall } from "../src/gen/MeteredCall";
import type { GatewayView } from "../src/gen/GatewayView";
import { runView } from "./fixtures";

afterEach(() => clearMocks());

const ME = "did:key:z6MkSteward";
const key = (over: Partial<KeyStatus> = {}): KeyStatus => ({ path: "/ws/steward.key", exists: true, did: ME, unlocked: true, error: null, idle_lock_s: 900, ...over });
const overview = (over: Partial<StewardOverview> = {}): StewardOverview => ({
  revision: 1,
  awaiting: 1,
  runs: [{ id: 7, label: "run live-1", path: "/ws/runs/live-1.jcprun", live: "running", awaiting: true, status: "awaiting", mine: true, checkpoints: 3, verdict: "clean", error: null }],
  key: key(),
  ...over,
});
const run = (over: Partial<StewardRunView> = {}): StewardRunView => ({
  id: 7,
  run: runView({ path: "/ws/runs/live-1.jcprun" }),
  awaiting: true,
  revoked: [],
  revocable: ["18663457bbbbbbbbbbbb"],
  history: [{ at_ms: 1_767_258_000_000, action: "amend", signed_by: ME, text: "amended at checkpoint 3" }],
  live: {
    state: "running",
    endpoint: "unix:/ws/live/1/endpoint.sock",
    stream: "/ws/live/1/record.jcps",
    stream_handle: "f-record",
    agent: "did:key:z6MkAgent",
    grant: "18663457bbbbbbbbbbbb",
    allowed: 5,
    denied: 0,
    spent: "500 µJ",
    metered: [],
    metered_note: null,
    events: [{ event: "checkpoint", text: "checkpoint seq 4 after step 5: spent 500 µJ (Estimator); waiting for the steward" }],
    events_first: 1,
    ended: null,
    stderr: null,
  },
  gateway: null,
  spend: {
    svg: '<svg xmlns="http://www.w3.org/2000/svg" id="spend-svg-from-rust"><text>amended</text></svg>',
    text: "Spent 500 µJ of 1.000 mJ in force at checkpoint 4; at the rate between the last two checkpoints (50 mW) the remainder lasts about 10 s more.",
  },
  ...over,
});
const noop = { error: () => {}, info: () => {} };
const tick = () => new Promise((r) => setTimeout(r, 0));

function mock(handlers: Record<string, (args: Record<string, unknown>) => unknown>, calls: [string, unknown][] = []) {
  mockIPC((cmd, args) => {
    calls.push([cmd, args]);
    const h = handlers[cmd];
    if (!h) throw new Error(`unexpected ${cmd}`);
    return h(args as Record<string, unknown>);
  });
  return calls;
}

describe("steward view (issue 17)", () => {
  it("s4_7_an_awaiting_checkpoint_is_unmistakable_and_counts_on_the_badge", async () => {
    mock({ steward_overview: () => overview(), steward_run: () => run() });
    const v = new StewardView(noop);
    let badge = -1;
    v.onAwaiting = (n) => (badge = n);
    await v.refresh();
    expect(badge).toBe(1);
    const banner = v.root.querySelector("#awaiting-banner") as HTMLElement;
    expect(banner.hidden).toBe(false);
    expect(banner.textContent).toContain("Checkpoint 4 awaits your decision");
    expect(v.root.querySelector(".run-pick .chip.awaiting")?.textContent).toBe("awaits you");
    expect(v.root.querySelector("#live-state")?.textContent).toBe("running");
    expect(v.root.querySelector("#history")?.textContent).toContain(ME.slice(0, 20));
    expect(v.root.querySelector("#key-state")?.textContent).toBe("Unlocked for this session");
    expect(v.root.querySelector("#key-did")?.textContent).toBe(ME);
  });

  it("s4_7_a_run_of_another_steward_awaits_them_not_you", async () => {
    mock({
      steward_overview: () => overview({ awaiting: 0, runs: [{ ...overview().runs[0], mine: false, live: null }] }),
      steward_run: () => run({ live: null, run: runView({ issuer: "did:key:z6MkSomeoneElse" }) }),
    });
    const v = new StewardView(noop);
    await v.refresh();
    expect(v.root.querySelector("#awaiting-banner")?.textContent).toContain("awaits its steward did:key:z6MkSomeoneElse");
    expect(v.root.querySelector(".run-pick .chip.awaiting")).toBeNull();
    // Issue 39: no live-looking actions where your key cannot act.
    expect(v.root.querySelector("#approve")).toBeNull();
    expect(v.root.querySelector("#amend-sign")).toBeNull();
    expect(v.root.querySelector("#revoke-plan")).toBeNull();
    expect(v.root.querySelector(".not-yours")?.textContent).toContain("only its issuer did:key:z6MkSomeoneElse");
  });

  it("issue39_your_runs_are_listed_apart_from_others_and_the_view_opens_on_what_awaits_you", async () => {
    const base = overview().runs[0];
    mock({
      steward_overview: () =>
        overview({
          runs: [
            { ...base, id: 1, label: "theirs-1", mine: false, awaiting: true, live: null },
            { ...base, id: 7, label: "mine-awaiting", mine: true, awaiting: true },
            { ...base, id: 3, label: "theirs-2", mine: false, awaiting: true, live: null },
            { ...base, id: 4, label: "mine-done", mine: true, awaiting: false, status: "idle", live: null },
          ],
        }),
      steward_run: () => run(),
    });
    const v = new StewardView(noop);
    await v.refresh();
    const status = (label: string) =>
      [...v.root.querySelectorAll(".run-pick")].find((b) => b.querySelector(".label")?.textContent === label)?.querySelector(".chip.status")?.textContent;
    expect([status("mine-awaiting"), status("mine-done"), status("theirs-1")]).toEqual(["awaits you", "not running here", "awaits its steward (not your key)"]);
    const heads = [...v.root.querySelectorAll(".runs-group")].map((h) => h.textContent);
    expect(heads).toEqual(["Your runs (2)", "Others' runs: their issuer steers them (2)"]);
    const labels = [...v.root.querySelectorAll(".run-pick .label")].map((l) => l.textContent);
    expect(labels).toEqual(["mine-awaiting", "mine-done", "theirs-1", "theirs-2"]);
    expect(v.root.querySelector(".run-pick.active .label")?.textContent).toBe("mine-awaiting");
    expect(v.root.querySelector("#approve")).not.toBeNull();
  });

  it("s4_7_a_widening_is_refused_before_anything_is_signed", async () => {
    const calls = mock({
      steward_overview: () => overview(),
      steward_run: () => run(),
      steward_preview: () => {
        throw { code: "steer-above-remainder", message: "refused before signing (steer-above-remainder): steer-above-remainder: amended budget 4501 µJ exceeds the remainder 4500 µJ" };
      },
      steward_amend: () => {
        throw new Error("must not be called");
      },
    });
    const v = new StewardView(noop);
    await v.refresh();
    (v.root.querySelector("#amend-budget") as HTMLInputElement).value = "4501 µJ";
    (v.root.querySelector("#amend-sign") as HTMLButtonElement).click();
    await tick();
    await tick();
    const refused = v.root.querySelector("#action-result .result.refused");
    expect(refused?.textContent).toContain("Refused before signing (steer-above-remainder)");
    // Issue 39: the code is said once, and what the steward typed is kept.
    expect(refused?.textContent?.split("steer-above-remainder").length).toBe(2);
    expect(refused?.textContent).toContain("amended budget 4501 µJ exceeds the remainder 4500 µJ");
    for (let i = 0; i < 4; i++) await tick();
    expect((v.root.querySelector("#amend-budget") as HTMLInputElement).value).toBe("4501 µJ");
    expect(calls.map((c) => c[0])).not.toContain("steward_amend");
    expect(calls.find((c) => c[0] === "steward_preview")?.[1]).toEqual({ id: 7, form: { budget_uj: 4501, expiry: null, instructions: null, add_caveats: [] } });
  });

  it("s5_a_budget_is_typed_with_its_unit_and_a_text_that_is_not_an_energy_is_refused_before_anything_is_sent", async () => {
    const calls = mock({ steward_overview: () => overview(), steward_run: () => run(), steward_preview: () => ({}) });
    const v = new StewardView(noop);
    await v.refresh();
    const budget = v.root.querySelector("#amend-budget") as HTMLInputElement;
    budget.value = "2.5 W";
    (v.root.querySelector("#amend-check") as HTMLButtonElement).click();
    for (let i = 0; i < 5; i++) await tick();
    expect(calls.some((c) => c[0] === "steward_preview")).toBe(false);
    expect(v.root.querySelector("#action-result")?.textContent).toContain("not an energy unit");
    expect(budget.value).toBe("2.5 W");
    budget.value = "1.5 kWh";
    (v.root.querySelector("#amend-check") as HTMLButtonElement).click();
    for (let i = 0; i < 5; i++) await tick();
    expect(calls.find((c) => c[0] === "steward_preview")?.[1]).toMatchObject({ form: { budget_uj: 5_400_000_000_000 } });
  });

  it("s4_7_amend_sends_budget_expiry_instructions_and_caveats_and_shows_who_signed", async () => {
    const calls = mock({
      steward_overview: () => overview(),
      steward_run: () => run(),
      steward_preview: () => ({}),
      steward_amend: () => ({ action: "amend", signed_by: ME, signed: ["am1", "cont1"], files: ["/ws/runs/live-1.jcprun"], message: "amended at checkpoint 4: continuation grant cont1 with 800 µJ" }),
    });
    const v = new StewardView(noop);
    await v.refresh();
    (v.root.querySelector("#amend-budget") as HTMLInputElement).value = "800 µJ";
    // Times are picked as dates and times in the user's zone (the tests run in UTC), never typed as Unix seconds.
    const expiry = v.root.querySelector("#amend-expiry") as HTMLInputElement;
    expect(expiry.type).toBe("datetime-local");
    expiry.value = "2026-01-01T12:20";
    (v.root.querySelector("#amend-instructions") as HTMLInputElement).value = "top 12 sources only";
    const kind = v.root.querySelector("#caveat-kind") as HTMLSelectElement;
    const cval = v.root.querySelector("#caveat-value") as HTMLInputElement;
    kind.value = "MaxCostUj";
    kind.dispatchEvent(new Event("change"));
    cval.value = "150 µJ";
    (v.root.querySelector("#caveat-add") as HTMLButtonElement).click();
    kind.value = "NotAfter";
    kind.dispatchEvent(new Event("change"));
    expect(cval.type).toBe("datetime-local");
    cval.value = "2026-01-02T00:00";
    (v.root.querySelector("#caveat-add") as HTMLButtonElement).click();
    expect([...v.root.querySelectorAll("#caveat-list li")].map((li) => li.textContent)).toEqual(["MaxCostUj 150 µJ", "NotAfter 2026-01-02 00:00 UTC+00:00"]);
    (v.root.querySelector("#amend-sign") as HTMLButtonElement).click();
    for (let i = 0; i < 5; i++) await tick();
    const amend = calls.find((c) => c[0] === "steward_amend");
    expect(amend?.[1]).toEqual({
      id: 7,
      form: {
        budget_uj: 800,
        expiry: 1767270000,
        instructions: "top 12 sources only",
        add_caveats: [
          { kind: "MaxCostUj", value: "150" },
          { kind: "NotAfter", value: "1767312000" },
        ],
      },
    });
    expect(v.root.querySelector("#action-result .result.ok")?.textContent).toContain(`signed by ${ME}`);
  });

  it("s4_7_approve_previews_the_remainder_then_signs_with_no_budget", async () => {
    const calls = mock({
      steward_overview: () => overview(),
      steward_run: () => run(),
      steward_preview: () => ({ checkpoint: "ca06ffff", steered: "x", budget_uj: 300, budget: "300 µJ", ceiling_uj: 300, ceiling: "300 µJ", remainder: { known: true, uj: 300, text: "300 µJ" }, continuation: "c", expiry: 0, caveats: [], instructions: null }),
      steward_amend: () => ({ action: "approve", signed_by: ME, signed: ["a", "c"], files: [], message: "approved at checkpoint 4" }),
    });
    const v = new StewardView(noop);
    await v.refresh();
    (v.root.querySelector("#approve") as HTMLButtonElement).click();
    for (let i = 0; i < 4; i++) await tick();
    expect(v.root.querySelector("#action-result .result.preview")?.textContent).toContain("a continuation grant of 300 µJ (the remainder)");
    (v.root.querySelector("#approve-sign") as HTMLButtonElement).click();
    for (let i = 0; i < 4; i++) await tick();
    expect(calls.find((c) => c[0] === "steward_amend")?.[1]).toEqual({ id: 7, form: { budget_uj: null, expiry: null, instructions: null, add_caveats: [] } });
  });

  it("s4_3_revoke_names_every_grant_that_dies_before_it_is_signed", async () => {
    const calls = mock({
      steward_overview: () => overview(),
      steward_run: () => run(),
      steward_revoke_plan: () => ({
        target: "18663457bbbbbbbbbbbb",
        dies: [
          { id: "18663457bbbbbbbbbbbb", subject: "did:key:z6MkAgent", budget: "800 µJ", why: "revoked" },
          { id: "77777777cccccccccccc", subject: "did:key:z6MkSubAgent", budget: "100 µJ", why: "below" },
        ],
      }),
      steward_revoke: () => ({ action: "revoke", signed_by: ME, signed: ["r"], files: ["/ws/runs/live-1.jcprun.revocations/18663457.jcp"], message: "revoked grant 18663457; 2 grant(s) die with it" }),
    });
    const v = new StewardView(noop);
    await v.refresh();
    expect((v.root.querySelector("#revoke-grant") as HTMLSelectElement).value).toBe("18663457bbbbbbbbbbbb");
    (v.root.querySelector("#revoke-plan") as HTMLButtonElement).click();
    for (let i = 0; i < 4; i++) await tick();
    expect(calls.map((c) => c[0])).not.toContain("steward_revoke");
    const dies = [...v.root.querySelectorAll("#revoke-confirm li.dies")].map((l) => l.textContent);
    expect(dies).toHaveLength(2);
    expect(dies[1]).toContain("delegated below it");
    (v.root.querySelector("#revoke-sign") as HTMLButtonElement).click();
    for (let i = 0; i < 4; i++) await tick();
    expect(calls.find((c) => c[0] === "steward_revoke")?.[1]).toEqual({ id: 7, grant: "18663457bbbbbbbbbbbb" });
  });

  it("s2_a_locked_key_signs_nothing_and_a_crashed_agent_is_shown", async () => {
    mock({
      steward_overview: () => overview({ key: key({ unlocked: false }) }),
      steward_run: () => run({ live: { ...run().live!, state: "crashed", ended: "the agent ended without saying why (killed by signal 9): it crashed or was killed", stderr: "thread main panicked" } }),
    });
    const v = new StewardView(noop);
    await v.refresh();
    expect(v.root.querySelector("#key-state")?.textContent).toBe("Locked");
    expect(v.root.querySelector("#key-unlock")).not.toBeNull();
    expect((v.root.querySelector("#amend-sign") as HTMLButtonElement).disabled).toBe(true);
    expect((v.root.querySelector("#approve") as HTMLButtonElement).disabled).toBe(true);
    expect(v.root.querySelector("#live-state")?.textContent).toBe("crashed");
    expect(v.root.querySelector("#live-ended")?.textContent).toContain("crashed or was killed");
    expect(v.root.querySelector(".live-stderr")?.textContent).toContain("panicked");
  });

  it("issue39_the_decision_panel_follows_the_key_at_once_when_it_is_unlocked_and_locked", async () => {
    let unlocked = false;
    mock({
      steward_overview: () => overview({ key: key({ unlocked }) }),
      steward_run: () => run(),
      key_unlock_now: () => { unlocked = true; return key({ unlocked: true }); },
      key_lock_now: () => { unlocked = false; return key({ unlocked: false }); },
    });
    const v = new StewardView(noop);
    await v.refresh();
    const disabled = () => ["#approve", "#amend-sign", "#revoke-plan"].map((q) => (v.root.querySelector(q) as HTMLButtonElement).disabled);
    expect(disabled()).toEqual([true, true, true]);
    expect((v.root.querySelector(".key-hint") as HTMLElement).hidden).toBe(false);
    (v.root.querySelector("#key-pass") as HTMLInputElement).value = "correct horse";
    (v.root.querySelector("#key-unlock") as HTMLButtonElement).click();
    for (let i = 0; i < 6; i++) await tick();
    expect(disabled()).toEqual([false, false, false]);
    expect((v.root.querySelector(".key-hint") as HTMLElement).hidden).toBe(true);
    (v.root.querySelector("#key-lock") as HTMLButtonElement).click();
    for (let i = 0; i < 6; i++) await tick();
    expect(disabled()).toEqual([true, true, true]);
  });

  it("issue34_a_key_that_locked_itself_while_idle_is_shown_locked_on_the_next_poll", async () => {
    let unlocked = true;
    mock({
      steward_overview: () => overview({ key: key({ unlocked, idle_lock_s: 600 }) }),
      steward_run: () => run(),
    });
    const v = new StewardView(noop);
    await v.refresh();
    expect(v.root.querySelector("#key-idle-lock")?.textContent).toBe("Locks itself after 10 minutes without a signature.");
    expect((v.root.querySelector("#approve") as HTMLButtonElement).disabled).toBe(false);
    unlocked = false; // the console locked it: idle past its time
    await v.refresh();
    expect(v.root.querySelector("#key-state")?.textContent).toBe("Locked");
    expect((v.root.querySelector("#approve") as HTMLButtonElement).disabled).toBe(true);
  });

  it("issue39_a_revoked_run_offers_nothing_to_revoke", async () => {
    mock({
      steward_overview: () => overview(),
      steward_run: () => run({ awaiting: false, revoked: ["18663457bbbbbbbbbbbb"], revocable: [] }),
    });
    const v = new StewardView(noop);
    await v.refresh();
    expect(v.root.querySelector("#revoke-grant")).toBeNull();
    expect(v.root.textContent).toContain("Revoked: nothing awaits you on this run.");
  });

  it("s2_key_creation_needs_the_passphrase_twice_and_never_sends_a_key", async () => {
    const calls = mock({
      steward_overview: () => overview({ runs: [], awaiting: 0, key: key({ exists: false, did: null, unlocked: false }) }),
      key_create_new: () => key(),
    });
    const errors: string[] = [];
    const v = new StewardView({ error: (e) => errors.push(e.code), info: () => {} });
    await v.refresh();
    (v.root.querySelector("#key-pass") as HTMLInputElement).value = "a";
    (v.root.querySelector("#key-pass2") as HTMLInputElement).value = "b";
    (v.root.querySelector("#key-create") as HTMLButtonElement).click();
    expect(errors).toEqual(["key.mismatch"]);
    expect(calls.map((c) => c[0])).not.toContain("key_create_new");
    (v.root.querySelector("#key-pass2") as HTMLInputElement).value = "a";
    (v.root.querySelector("#key-create") as HTMLButtonElement).click();
    // Issue 39: creation takes about a second by design, and says so while it runs.
    expect(v.root.querySelector("#key-busy")?.textContent).toContain("about a second");
    expect((v.root.querySelector("#key-create") as HTMLButtonElement).disabled).toBe(true);
    await tick();
    expect(calls.find((c) => c[0] === "key_create_new")?.[1]).toEqual({ passphrase: "a" });
  });

  it("s4_11_unresolved_decisions_are_listed_with_their_holder_and_settled_with_a_signed_note", async () => {
    const unresolved = [
      {
        stream: "/ws/live/1/record.jcps",
        handle: "f-record",
        audited_at_ms: 1_767_258_000_000,
        changed_since: false,
        total: 2,
        rows: [
          { receipt: "aaaaaaaaaaaaaaaaaaaa", offset: 120, holder: "did:key:z6MkAgent", recorded_by: ME, grant: "g1", action: "tool:fetch", debited: "100 µJ", settled: null },
          {
            receipt: "bbbbbbbbbbbbbbbbbbbb",
            offset: 480,
            holder: "did:key:z6MkAgent",
            recorded_by: ME,
            grant: "g1",
            action: "tool:write",
            debited: "250 µJ",
            settled: { status: "completed" as const, settled_by: ME, at: 1_767_258_100_000, text: "the write is in the log" },
          },
        ],
      },
    ];
    const calls = mock({
      steward_overview: () => overview(),
      steward_run: () => run(),
      steward_unresolved: () => unresolved,
      steward_settle: () => ({ kind: "settle", file: "/ws/live/1/record.jcps.settlements/x.jcpnote", id: "x", message: "settled aaaaaaaaaa as failed" }),
    });
    const v = new StewardView(noop);
    await v.refresh();
    const panel = v.root.querySelector("#unresolved-panel") as HTMLElement;
    expect(panel.textContent).toContain("2 unresolved");
    expect(panel.textContent).toContain("energy stays debited");
    const open = panel.querySelector('li.unresolved-row.open[data-receipt="aaaaaaaaaaaaaaaaaaaa"]') as HTMLElement;
    expect(open.textContent).toContain("100 µJ debited, held by");
    const settled = panel.querySelector("li.unresolved-row.settled") as HTMLElement;
    expect(settled.textContent).toContain("settled completed");
    expect(settled.querySelector("button")).toBeNull(); // settled once: no second settlement offered
    (panel.querySelector("#settle-note-aaaaaaaaaaaa") as HTMLInputElement).value = "the tool timed out; no effect";
    (panel.querySelector("#settle-failed-aaaaaaaaaaaa") as HTMLButtonElement).click();
    await tick();
    await tick();
    const settle = calls.find(([c]) => c === "steward_settle");
    // Issue 34: the stream by the handle its list gave, never its path.
    expect(settle?.[1]).toEqual({ stream: "f-record", receipt: "aaaaaaaaaaaaaaaaaaaa", status: "failed", note: "the tool timed out; no effect" });
    expect(calls.filter(([c]) => c.startsWith("live_run") || c === "audit_start")).toEqual([]); // never retried, never re-run
  });

  it("s4_11_settling_needs_the_unlocked_key", async () => {
    mock({
      steward_overview: () => overview({ key: key({ unlocked: false }) }),
      steward_run: () => run(),
      steward_unresolved: () => [
        { stream: "/ws/s.jcps", audited_at_ms: 1, changed_since: true, total: 1, rows: [{ receipt: "cccccccccccccccccccc", offset: 1, holder: "did:key:z6MkAgent", recorded_by: ME, grant: "g", action: "a", debited: "1 µJ", settled: null }] },
      ],
    });
    const v = new StewardView(noop);
    await v.refresh();
    expect((v.root.querySelector("#settle-completed-cccccccccccc") as HTMLButtonElement).disabled).toBe(true);
    expect(v.root.querySelector("#unresolved-panel")?.textContent).toContain("audit it again");
  });

  it("issue39_the_runs_course_is_charted_spend_against_ceiling_with_when_the_remainder_runs_out", async () => {
    mock({ steward_overview: () => overview(), steward_run: () => run() });
    const v = new StewardView(noop);
    await v.refresh();
    expect(v.root.querySelector("#spend-text")?.textContent).toContain("the remainder lasts about 10 s more");
    expect(v.root.querySelector("#spend-panel svg#spend-svg-from-rust")).not.toBeNull();
    // Too few checkpoints: the words say so, no empty chart.
    mock({ steward_overview: () => overview(), steward_run: () => run({ spend: { svg: null, text: "No checkpoint states its spend yet: nothing to chart." } }) });
    const w = new StewardView(noop);
    await w.refresh();
    expect((w.root.querySelector("#spend-panel .spend-chart") as HTMLElement).hidden).toBe(true);
    expect(w.root.querySelector("#spend-text")?.textContent).toBe("No checkpoint states its spend yet: nothing to chart.");
  });

  it("issue39_each_run_shows_one_status_from_its_record_a_revoked_one_reads_revoked", async () => {
    const base = overview().runs[0];
    mock({
      steward_overview: () =>
        overview({
          awaiting: 0,
          runs: [
            { ...base, id: 7, label: "revoked-run", awaiting: false, status: "revoked", live: "stopped" },
            { ...base, id: 8, label: "stopped-run", awaiting: false, status: "stopped", live: "stopped" },
            { ...base, id: 9, label: "crashed-run", awaiting: false, status: "crashed", live: "crashed" },
          ],
        }),
      steward_run: () => run({ awaiting: false }),
    });
    const v = new StewardView(noop);
    await v.refresh();
    const chips = [...v.root.querySelectorAll(".run-pick .chip.status")].map((c) => [c.getAttribute("data-status"), c.textContent]);
    expect(chips).toEqual([
      ["revoked", "revoked"],
      ["stopped", "stopped"],
      ["crashed", "crashed"],
    ]);
    // Nothing awaits: no "awaits you" anywhere in the list.
    expect(v.root.querySelector(".run-pick .chip.awaiting")).toBeNull();
  });

  it("s4_7_a_crashed_agent_is_shown_and_the_banner_does_not_say_it_waits", async () => {
    mock({
      steward_overview: () => overview({ runs: [{ ...overview().runs[0], live: "crashed" }] }),
      steward_run: () => run({ live: { ...run().live!, state: "crashed", ended: "the agent ended without saying why (killed by signal 9): it crashed or was killed" } }),
    });
    const v = new StewardView(noop);
    await v.refresh();
    expect(v.root.querySelector("#live-state")?.textContent).toBe("crashed");
    expect(v.root.querySelector("#live-ended")?.textContent).toContain("crashed or was killed");
    const banner = v.root.querySelector("#awaiting-banner")?.textContent ?? "";
    expect(banner).toContain("Its agent is not running (crashed)");
    expect(banner).not.toContain("The agent waits");
  });
  it("s11_each_metered_call_of_a_live_run_is_listed_with_its_grade_coverage_and_gaps", async () => {
    const call = (step: number, over: Partial<MeteredCall> = {}): MeteredCall => ({
      step, state: "done", energy_uj: 189_000, energy_text: "189.000 mJ", provenance: "Estimator", coverage: "Whole",
      rung: "estimate", cpu_ms: 21, gaps: [], charged: "189.000 mJ", breach: null, ...over,
    });
    const metered = [
      call(1),
      call(2, { coverage: "Partial", gaps: [{ code: "not-declared-self-contained", detail: "the operator did not declare the tree self-contained" }] }),
      call(3, { state: "lost", charged: null, coverage: "Partial" }),
    ];
    const note = "3 calls metered behind the gate; 2 of them Partial, so their sum (567.000 mJ) covers only part of the work and is not its total";
    mock({ steward_overview: () => overview(), steward_run: () => run({ live: { ...run().live!, metered, metered_note: note } }) });
    const v = new StewardView(noop);
    await v.refresh();
    const rows = [...v.root.querySelectorAll("#live-metered tr.metered-call")];
    expect(rows.map((r) => r.querySelector("td")?.textContent)).toEqual(["3", "2", "1"]); // newest first
    const cells = (r: Element) => [...r.querySelectorAll("td")].map((td) => td.textContent);
    expect(cells(rows[2])).toEqual(["1", "189.000 mJ", "Estimator", "Whole", "none named", "189.000 mJ"]);
    // A Partial figure says it is part of the work, never a total (§5.2); its gap is named, with what was seen.
    const partial = rows[1].querySelector("td.coverage.partial") as HTMLElement;
    expect([partial.textContent, partial.title]).toEqual(["Partial", "covers only part of the call's work: not its total (§5.2)"]);
    const gap = rows[1].querySelector("code.gap") as HTMLElement;
    expect([gap.textContent, gap.title]).toEqual(["not-declared-self-contained", "the operator did not declare the tree self-contained"]);
    expect(rows[1].querySelector(".grade-Estimator")?.getAttribute("title")).toContain("nothing calibrated");
    // A lost call: its figure is shown, nothing was charged (§4.11).
    expect(rows[0].querySelector("td.charged")?.textContent).toBe("nothing (lost: unresolved)");
    expect(v.root.querySelector("#live-metered .metered-note")?.textContent).toBe(note);
    expect(v.root.querySelector("#live-metered")?.textContent).not.toMatch(/in all|total:/);
  });

  it("s11_a_live_run_with_no_metered_call_yet_says_so", async () => {
    mock({ steward_overview: () => overview(), steward_run: () => run() });
    const v = new StewardView(noop);
    await v.refresh();
    expect(v.root.querySelector("#live-metered table")).toBeNull();
    expect(v.root.querySelector("#live-metered .none")?.textContent).toContain("No call has been metered yet");
  });

  it("s11_asi_s8_a_gateway_run_lists_each_tool_call_with_its_intent_hash_verdict_and_figure", async () => {
    const gateway: GatewayView = {
      log: "/ws/runs/g.jcprun.events.jsonl", upstream: "npx @modelcontextprotocol/server-everything", client: "claude-ai",
      holder: "did:key:z6MkAgent", stream: "/ws/runs/g.jcps", stream_handle: "f-g", closed: false, held_at: "cafe0123456789abcdef",
      allowed: 1, denied: 1, refused: 1, lost: 0, unreadable_lines: 0,
      metered_note: "1 call metered by the gateway behind its gate; 1 of them Partial, so their sum (5.000 mJ) covers only part of the work and is not its total",
      calls: [
        { n: 1, tool: "echo", action: "echo", intent_hash: "sha256:1d2a24a308ef217dab76d5f1ce5e0a74", verdict: "allow", reason: null, receipt: "482a88cde953634e53d9", state: "done", why: null,
          metered: { step: 1, state: "done", energy_uj: 5000, energy_text: "5.000 mJ", provenance: "Estimator", coverage: "Partial", rung: "estimate", cpu_ms: 1,
            gaps: [{ code: "not-declared-self-contained", detail: "x" }], charged: "5.000 mJ", breach: null } },
        { n: 2, tool: "get-env", action: "env", intent_hash: "sha256:0bb142bf885cabc880dc", verdict: "deny", reason: "action-not-granted", receipt: "2a6500a58eacb97dc89c", state: null, why: null, metered: null },
        { n: 3, tool: "get-tiny-image", action: null, intent_hash: null, verdict: "refused", reason: "tool-unbound", receipt: null, state: null, why: null, metered: null },
        { n: 4, tool: "echo", action: "echo", intent_hash: "sha256:77", verdict: "allow", reason: null, receipt: "9a6500a58eacb97dc89c", state: "failed",
          why: "not run: the call never reached the upstream: the upstream read nothing of its input for 60 s", metered: null },
      ],
    };
    mock({ steward_overview: () => overview(), steward_run: () => run({ live: null, gateway }) });
    const v = new StewardView(noop);
    const audited: string[] = [];
    v.onAudit = (p) => audited.push(p);
    await v.refresh();
    expect(v.root.querySelector<HTMLElement>("#gateway-panel")?.hidden).toBe(false);
    expect(v.root.querySelector("#gateway-state")?.textContent).toBe("held");
    expect(v.root.querySelector("#gateway-held")?.textContent).toContain("held at checkpoint cafe01234567");
    expect(v.root.querySelector("#gateway-client")?.textContent).toBe("claude-ai");
    const rows = [...v.root.querySelectorAll("#gateway-calls tr.gateway-call")];
    const cells = (r: Element) => [...r.querySelectorAll("td")].map((td) => td.textContent);
    // Newest first; a call that did not run says why; a refusal before the
    // gate has no receipt, a deny names its reason.
    expect(rows[0].querySelector(".call-why")?.textContent).toContain("never reached the upstream");
    expect(cells(rows[0])[3]).toBe("allow — failednot run: the call never reached the upstream: the upstream read nothing of its input for 60 s");
    expect(cells(rows[1])).toEqual(["3", "get-tiny-image", "—", "refused (tool-unbound)", "—", "", "—", "none (not decided)"]);
    expect(rows[1].querySelector(".call-why")).toBeNull();
    expect(cells(rows[2])[3]).toBe("deny (action-not-granted)");
    expect(cells(rows[3]).slice(0, 7)).toEqual(["1", "echo", "1d2a24a308ef…", "allow — done", "5.000 mJ", "Estimator", "Partial"]);
    expect((rows[3].querySelector("td.hash") as HTMLElement).title).toBe("sha256:1d2a24a308ef217dab76d5f1ce5e0a74");
    expect((rows[3].querySelector("td.coverage.partial") as HTMLElement).title).toContain("not its total");
    expect(v.root.querySelector("#gateway-panel .metered-note")?.textContent).toContain("not its total");
    (v.root.querySelector("#gateway-audit") as HTMLButtonElement).click();
    expect(audited).toEqual(["f-g"]); // its record, by its handle
  });

  it("s11_a_run_without_a_gateway_log_shows_no_gateway_panel", async () => {
    mock({ steward_overview: () => overview(), steward_run: () => run() });
    const v = new StewardView(noop);
    await v.refresh();
    expect(v.root.querySelector<HTMLElement>("#gateway-panel")?.hidden).toBe(true);
  });

  it("s11_the_steward_sets_up_a_gateway_run_and_gets_the_line_to_paste", async () => {
    const prepared = { id: 9, run: "/ws/runs/gateway-1.jcprun", grant: "23713e1467288a48ecd6", agent: "did:key:z6MkAgent",
      command: "/opt/jcp", args: ["gateway", "--chain", "/ws/gateway/1/root.jcp"], line: "/opt/jcp gateway --chain /ws/gateway/1/root.jcp -- npx server",
      mcp_config: '{"mcpServers": {"files": {"command": "/opt/jcp"}}}' };
    const calls = mock({ steward_overview: () => overview(), steward_run: () => run(), gateway_run_prepare: () => prepared });
    const v = new StewardView(noop);
    await v.refresh();
    const panel = v.root.querySelector<HTMLElement>("#gateway-start-panel")!;
    expect(panel.hidden).toBe(true);
    (v.root.querySelector("#gateway-start") as HTMLButtonElement).click();
    expect(panel.hidden).toBe(false);
    const set = (id: string, val: string) => { (v.root.querySelector(`#${id}`) as HTMLInputElement).value = val; };
    set("gw-name", "files");
    set("gw-upstream", "npx -y  @modelcontextprotocol/server-filesystem /home/me");
    set("gw-resource", "text:files");
    set("gw-actions", "read, list");
    set("gw-budget", "2.5 J");
    set("gw-every", "10");
    (v.root.querySelector("#gw-prepare") as HTMLButtonElement).click();
    await tick(); await tick();
    const sent = calls.find(([c]) => c === "gateway_run_prepare")![1] as { form: Record<string, unknown> };
    expect(sent.form).toMatchObject({ name: "files", upstream: ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me"],
      resource: "text:files", actions: ["read", "list"], budget_uj: 2_500_000, checkpoint_every: 10 });
    expect(String(sent.form.bindings)).toContain("read_text_file");
    expect(v.root.querySelector("#gateway-config")?.textContent).toBe(prepared.mcp_config);
    expect(v.root.querySelector("#gateway-line")?.textContent).toBe(prepared.line);
  });

  it("issue39_history_actions_read_as_words", async () => {
    mock({
      steward_overview: () => overview(),
      steward_run: () =>
        run({
          history: [
            { at_ms: 1_767_258_000_000, action: "live_start", signed_by: ME, text: "demo run started" },
            { at_ms: 1_767_258_060_000, action: "amend", signed_by: ME, text: "amended at checkpoint 3" },
            { at_ms: 1_767_258_120_000, action: "some_new_thing", signed_by: "", text: "x" },
          ],
        }),
    });
    const v = new StewardView(noop);
    await v.refresh();
    const what = [...v.root.querySelectorAll(".history-list li .what")].map((w) => w.textContent?.trim());
    expect(what).toEqual(["Started the demo run", "Amended", "some new thing"]);
    expect(v.root.querySelector(".history-list li.amend")).not.toBeNull();
  });

  it("issue39_the_live_events_keep_the_runs_own_numbering", async () => {
    const events = Array.from({ length: 20 }, (_, i) => ({ event: "decision", text: `step ${i + 41}` }));
    mock({
      steward_overview: () => overview(),
      steward_run: () => run({ live: { ...run().live!, events, events_first: 41 } }),
    });
    const v = new StewardView(noop);
    await v.refresh();
    const ol = v.root.querySelector("#live-events") as HTMLOListElement;
    // 20 kept from event 41 on; the last 14 are shown, numbered from 47.
    expect(ol.children).toHaveLength(14);
    expect(ol.start).toBe(47);
    expect(ol.firstElementChild?.textContent).toBe("step 47");
  });
});
