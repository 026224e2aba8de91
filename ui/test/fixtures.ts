import type { AppInfo, AuditJob, AuditReportView, EnergySnapshot } from "../src/ipc";

export const info = (over: Partial<AppInfo> = {}): AppInfo => ({
  version: "0.1.0",
  workspace: "/ws",
  store: { path: "/ws/workspace.sqlite", persistent: true, error: null, window_retention: 86400 },
  meter: { available: true, reason: null },
  audit: { available: true, reason: null },
  demo_streams: [],
  open_at_start: null,
  audit_at_start: false,
  ...over,
});

export const snapshot = (over: Partial<EnergySnapshot> = {}): EnergySnapshot => ({
  meter: { available: true, reason: null },
  windows: [
    { seq: 1, start_ms: 1000, end_ms: 2000, energy_uj: 1_250_000, energy_text: "1.250 J", power_text: "1.250 W", provenance: "HwShunt", coverage: "Whole", rung: "rapl" },
    { seq: 2, start_ms: 2000, end_ms: 3000, energy_uj: null, energy_text: null, power_text: null, provenance: null, coverage: null, rung: null },
    { seq: 3, start_ms: 3000, end_ms: 4000, energy_uj: 40_000, energy_text: "40.000 mJ", power_text: "40 mW", provenance: "ModelBased", coverage: "Partial", rung: "nvml" },
  ],
  chart_svg: '<svg xmlns="http://www.w3.org/2000/svg" id="svg-from-rust"><rect width="1" height="1"/></svg>',
  ladder: [
    { name: "rapl", status: "declined", provenance: "HwShunt", why: "permission denied reading energy_uj", fix: "sudo chmod o+r /sys/class/powercap/intel-rapl:0/energy_uj" },
    { name: "estimate", status: "chosen", provenance: "Estimator", why: "CPU utilisation × default power", fix: null },
  ],
  window_ms: 1000,
  live_metered: [],
  headline: { kind: "mixed", text: "Mixed: of the last 2 windows with a reading, 1 measured, 1 modelled and 0 estimated; each window says which. 1 window covers only part of the machine (Partial)." },
  total: { text: "at least 1.290 J modelled over the last 3 windows (3 s); 1 window without a reading not in it; 1 window covers only part of the machine.", uj: 1_290_000, provenance: "ModelBased", unread: 1, partial: 1 },
  ...over,
});

export const job = (over: Partial<AuditJob> = {}): AuditJob => ({
  id: 7,
  paths: ["/ws/demo.jcps"],
  state: "running",
  progress: { bytes_done: 512, bytes_total: 2048, records: 10 },
  elapsed_ms: 300,
  verdict: null,
  error: null,
  ...over,
});

export const reportView = (over: Partial<AuditReportView> = {}): AuditReportView => ({
  id: 7,
  verdict: "findings",
  findings_by_code: [{ code: "bad-signature", count: 1 }],
  report: { verdict: "findings", receipts: { verified: 9, failed: 1 } },
  html: '<section class="field"><h3>receipts</h3><table class="kv"><tbody><tr><th>verified</th><td class="num">9</td></tr><tr><th>failed</th><td class="num">1</td></tr></tbody></table></section>',
  answer: "1 finding in 1 stream: 1 bad-signature; the first, bad-signature, at byte 4\u202f096 of stream 0. 1 of 10 receipts failed verification and count nothing.",
  ...over,
});

import type { BlueprintReportView, RunView, WorkspaceItem } from "../src/ipc";

export const items = (): WorkspaceItem[] => [
  { kind: "stream", id: null, label: "demo.jcps", path: "/ws/demo/demo.jcps", handle: "f-demo", last_status: "clean" },
  { kind: "run", id: 1, label: "demo run", path: "/ws/demo/demo.jcprun", handle: "f-run", last_status: null },
  { kind: "blueprint", id: 2, label: "summarize, its deployment", path: "/ws/demo/blueprint/summarize.deployment.json", handle: "f-bp2", last_status: "consistent" },
  { kind: "blueprint", id: 3, label: "summarize, rug-pull", path: "/ws/demo/blueprint/summarize-rugpull.deployment.json", handle: "f-bp3", last_status: null },
];

const HOST_OWNED = ["tenancy", "live_policy", "authority", "effect_ownership", "execution", "billing", "evaluation_truth"];
const STEPS = ["canonical", "digest", "negotiation", "structure", "portability", "signatures", "bind", "bounds"];

export const blueprintReport = (over: Partial<BlueprintReportView> = {}): BlueprintReportView => ({
  title: "demo.console/summarize release 3",
  blueprint_path: "/ws/demo/blueprint/summarize.blueprint.json",
  deployment_path: "/ws/demo/blueprint/summarize.deployment.json",
  inputs: [
    { name: "trusted keys", path: "/ws/demo/blueprint/keys.json" },
    { name: "host bounds", path: null },
    { name: "live tool descriptors", path: "/ws/demo/blueprint/descriptors.json" },
  ],
  verdict: "consistent",
  verdict_text: "Consistent: every check this protocol can run passed. 9 surface(s) were not verified (listed below). This is evidence, not an authorization.",
  blueprint_digest: "sha-256:abc",
  deployment_digest: "sha-256:def",
  steps: STEPS.map((step) =>
    step === "bind"
      ? {
          step,
          status: "partial",
          checks: [{ subject: "deployment → blueprint", verified: true, code: null, detail: "binds sha-256:abc", location: null }],
          not_verified: [{ surface: "binding_attestation_freshness", reason: "no `now` and maximum age supplied by the host", kind: "missing_input" }],
        }
      : { step, status: "passed", checks: [{ subject: "blueprint", verified: true, code: null, detail: "ok", location: null }], not_verified: [] },
  ),
  first_failure: null,
  effective_bounds: [{ bound: "max_cost", value: "40 EUR" }],
  clamps: [{ bound: "max_cost", protected: false, requested: "50 EUR", effective: "40 EUR" }],
  not_verified: [
    ...HOST_OWNED.map((s) => ({ surface: s, reason: "host-owned: this protocol cannot establish it", kind: "host_owned" as const })),
    { surface: "binding_attestation_freshness", reason: "no `now` and maximum age supplied by the host", kind: "missing_input" },
    { surface: "host_bounds", reason: "no host bounds supplied: the deployment's host_bounds stood in", kind: "missing_input" },
  ],
  evidence: {},
  ...over,
});

/** The rug-pull reconcile: bind fails, bounds is never reached. */
export const rugPullReport = (): BlueprintReportView => {
  const base = blueprintReport();
  return {
    ...base,
    verdict: "inconsistent",
    verdict_text: "Inconsistent: binding_descriptor_mismatch at /tool_bindings/0: live descriptor differs",
    steps: base.steps.map((s) =>
      s.step === "bind"
        ? { ...s, status: "failed", checks: [{ subject: "deployment → blueprint /tool_bindings/0", verified: false, code: "binding_descriptor_mismatch", detail: "live descriptor differs", location: null }], not_verified: [] }
        : s.step === "bounds"
          ? { ...s, status: "not_run", checks: [], not_verified: [{ surface: "bounds", reason: "not reached: an earlier step denied", kind: "not_reached" }] }
          : s,
    ),
    first_failure: { code: "binding_descriptor_mismatch", subject: "/tool_bindings/0", detail: "live descriptor differs", location: null },
    effective_bounds: [],
    clamps: [],
    not_verified: [...base.not_verified.filter((n) => n.kind === "host_owned"), { surface: "bounds", reason: "not reached: an earlier step denied", kind: "not_reached" }],
  };
};

const BUDGET = "3.600 MJ (1.000 kWh)";

export const runView = (over: Partial<RunView> = {}): RunView => ({
  path: "/ws/demo/demo.jcprun",
  verdict: "clean",
  verdict_text: "Clean: every record verified.",
  run_grant: "9f8f3235",
  issuer: "did:key:z6MkSteward",
  agent: "did:key:z6MkAgent",
  issued_budget: BUDGET,
  active_budget: "1.286 MJ (0.357 kWh)",
  latest_spent: { uj: 1_769_786_037_992, provenance: "HwShunt", amount: "1.769 MJ (0.491 kWh)", text: "1.769 MJ (0.491 kWh), HwShunt" },
  remainder: { known: true, uj: 544_319_340_812, text: "544.319 kJ" },
  records: 10,
  grants: [
    { index: 0, id: "9f8f3235aaaaaaaaaaaa", role: "run", budget: BUDGET, expiry: 1767279600, verdict: "ok" },
    { index: 6, id: "18663457bbbbbbbbbbbb", role: "continuation", budget: "1.286 MJ (0.357 kWh)", expiry: 1767272400, verdict: "ok" },
  ],
  checkpoints: [
    {
      index: 1, seq: 0, id: "957e", grant_id: "9f8f3235aaaaaaaaaaaa", at: 1767258060,
      spent: { uj: null, provenance: null, amount: null, text: "not stated" },
      remainder: { known: false, uj: null, text: "unknown — no spend stated" },
      amend_ceiling: BUDGET, amendments: [], verdict: "ok", codes: [],
    },
    {
      index: 4, seq: 3, id: "23b5", grant_id: "9f8f3235aaaaaaaaaaaa", at: 1767261660,
      spent: { uj: 1_028_210_757_609, provenance: "HwShunt", amount: "1.028 MJ (0.285 kWh)", text: "1.028 MJ (0.286 kWh), HwShunt" },
      remainder: { known: true, uj: 2_571_789_242_391, text: "2.571 MJ (0.714 kWh)" },
      amend_ceiling: "2.571 MJ (0.714 kWh)",
      amendments: [{ index: 5, id: "970a", amended_by: "did:key:z6MkSteward", budget: "1.286 MJ (0.357 kWh)", ceiling: "2.571 MJ (0.714 kWh)", expiry: 1767272400, instructions: "21fba371", continuation: "18663457bbbbbbbbbbbb", continuation_verified: true }],
      verdict: "ok", codes: [],
    },
    {
      index: 7, seq: 4, id: "ca06", grant_id: "18663457bbbbbbbbbbbb", at: 1767262860,
      spent: { uj: 1_253_382_650_490, provenance: "ModelBased", amount: "1.253 MJ (0.348 kWh)", text: "1.253 MJ (0.348 kWh), ModelBased" },
      remainder: { known: false, uj: null, text: "unknown — the spend when this grant began was not stated" },
      amend_ceiling: null, amendments: [], verdict: "finding", codes: ["steer-spend-decreased"],
    },
  ],
  findings: [{ index: 7, kind: "checkpoint", code: "steer-spend-decreased", message: "the declared spend went down", admitted: false }],
  unattached_amendments: [],
  report: {},
  authority: { issuer: "did:key:z6MkSteward", issuer_kind: "key", issuer_text: "plain did:key: its own key signs", key_log: null, threshold: null, standing: null, problems: [] },
  ...over,
});
