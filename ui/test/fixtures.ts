import type { AppInfo, AuditJob, AuditReportView, EnergySnapshot } from "../src/ipc";

export const info = (over: Partial<AppInfo> = {}): AppInfo => ({
  version: "0.1.0",
  workspace: "/ws",
  store: { path: "/ws/workspace.sqlite", persistent: true, error: null, window_retention: 86400 },
  meter: { available: true, reason: null },
  audit: { available: true, reason: null },
  demo_streams: [],
  ...over,
});

export const snapshot = (over: Partial<EnergySnapshot> = {}): EnergySnapshot => ({
  meter: { available: true, reason: null },
  windows: [
    { seq: 1, start_ms: 1000, end_ms: 2000, energy_uj: 1_250_000, provenance: "HwShunt", coverage: "Whole", rung: "rapl" },
    { seq: 2, start_ms: 2000, end_ms: 3000, energy_uj: null, provenance: null, coverage: null, rung: null },
    { seq: 3, start_ms: 3000, end_ms: 4000, energy_uj: 40_000, provenance: "ModelBased", coverage: "Partial", rung: "nvml" },
  ],
  chart_svg: '<svg xmlns="http://www.w3.org/2000/svg" id="svg-from-rust"><rect width="1" height="1"/></svg>',
  ladder: [
    { name: "rapl", status: "declined", provenance: "HwShunt", why: "permission denied reading energy_uj", fix: "sudo chmod o+r /sys/class/powercap/intel-rapl:0/energy_uj" },
    { name: "estimate", status: "chosen", provenance: "Estimator", why: "CPU utilisation × default power", fix: null },
  ],
  window_ms: 1000,
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
  report: { verdict: "findings", receipts: { verified: 9, failed: 1 } },
  html: '<section class="field"><h3>receipts</h3><table class="kv"><tbody><tr><th>verified</th><td class="num">9</td></tr><tr><th>failed</th><td class="num">1</td></tr></tbody></table></section>',
  ...over,
});
