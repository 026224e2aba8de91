// Live energy view (spec §5, §5.1, §5.2): the plotters chart rendered by the
// shell, the ladder panel, the recent windows table, CSV/JSON export.
import { api, type EnergySnapshot, type UiError } from "../ipc";
import { el, GRADE_MEANING, timeCell } from "../format";
import { SessionsPanel } from "./sessions";

export const CHART_WINDOWS = 60;

export interface Notifier {
  error(e: UiError): void;
  info(text: string): void;
}

function gradeCell(provenance: string | null, earned = true): HTMLTableCellElement {
  const td = el("td", "rgrade");
  if (provenance && !earned) {
    // A rung not chosen gives no figure: its grade is what it would give, not one earned.
    const t = el("span", "grade-unearned", `would give ${provenance}`);
    t.title = `not earned: this rung does not meter (${GRADE_MEANING[provenance] ?? provenance})`;
    td.append(t);
  } else if (provenance) {
    const chip = el("span", `grade grade-${provenance}`, provenance);
    chip.title = GRADE_MEANING[provenance] ?? "";
    td.append(chip);
  } else {
    td.textContent = "—";
  }
  return td;
}

export class EnergyView {
  readonly root: HTMLElement;
  private status = el("p", "status");
  private total = el("p", "energy-total");
  private chart = el("div", "chart");
  private ladder = el("tbody");
  private windows = el("tbody");
  /** Beside the machine's windows: each live run's latest call, metered by its endpoint (§11). */
  private liveMetered = el("ul", "live-metered-lines");
  private lastSeq = -1;
  readonly sessions: SessionsPanel;

  constructor(private notify: Notifier) {
    this.root = el("section", "view energy");
    this.root.id = "view-energy";
    const head = el("div", "view-head");
    head.append(el("h2", undefined, "Live energy"));
    const csv = el("button", "export-csv", "Export CSV");
    const json = el("button", "export-json", "Export JSON");
    csv.addEventListener("click", () => void this.export("csv"));
    json.addEventListener("click", () => void this.export("json"));
    head.append(csv, json);

    this.chart.id = "energy-chart";
    const ladderBox = el("div", "panel ladder");
    ladderBox.append(el("h3", undefined, "Metering ladder (§5.1)"));
    const lt = el("table", "ladder-table");
    lt.innerHTML = "<thead><tr><th>rung</th><th>status</th><th>grade</th><th>why</th><th>fix</th></tr></thead>";
    lt.append(this.ladder);
    ladderBox.append(lt);

    const winBox = el("div", "panel windows");
    winBox.append(el("h3", undefined, "Recent windows"));
    const wt = el("table", "windows-table");
    wt.innerHTML =
      "<thead><tr><th>#</th><th>start</th><th>end</th><th>energy</th><th>power</th><th>provenance</th><th>coverage</th><th>rung</th></tr></thead>";
    wt.append(this.windows);
    winBox.append(wt);
    this.liveMetered.id = "energy-live-metered";
    this.liveMetered.title = "Each live run's latest call, metered per call by its endpoint (not a window of this machine's meter)";

    const lower = el("div", "lower");
    lower.append(ladderBox, winBox);
    this.sessions = new SessionsPanel(notify);
    this.status.id = "energy-headline";
    this.total.id = "energy-total";
    this.root.append(head, this.status, this.total, this.liveMetered, this.chart, lower, this.sessions.root);
  }

  async refresh(): Promise<void> {
    let snap: EnergySnapshot;
    try {
      snap = await api.energySnapshot(CHART_WINDOWS);
      await this.sessions.refresh();
    } catch (e) {
      this.status.textContent = (e as UiError).message;
      this.status.className = "status error";
      return;
    }
    this.show(snap);
  }

  show(snap: EnergySnapshot): void {
    // Said first: what the figures are (measured, modelled, estimated) and why.
    this.status.textContent = snap.headline.text;
    this.status.className = `status headline-${snap.headline.kind}`;
    this.total.textContent = snap.windows.length ? `${snap.window_ms / 1000} s windows. Shown: ${snap.total.text}` : "";
    this.total.hidden = snap.windows.length === 0;
    const newest = snap.windows.length ? snap.windows[snap.windows.length - 1].seq : -1;
    if (newest !== this.lastSeq || this.chart.childElementCount === 0) {
      // SVG produced by plotters in the shell from numbers only; no script.
      this.chart.innerHTML = snap.chart_svg;
      this.lastSeq = newest;
    }
    this.ladder.replaceChildren(
      ...snap.ladder.map((r) => {
        const tr = el("tr", `rung ${r.status}`);
        tr.append(el("td", "name", r.name), el("td", "rstatus", r.status), gradeCell(r.provenance, r.status === "chosen"), el("td", "why", r.why), el("td", "fix", r.fix ?? ""));
        return tr;
      }),
    );
    if (snap.ladder.length === 0) {
      const tr = el("tr");
      const td = el("td", "none", snap.meter.available ? "No probe yet." : "No ladder: the meter is not available in this build.");
      td.colSpan = 5;
      tr.append(td);
      this.ladder.append(tr);
    }
    const rows = [...snap.windows].reverse().slice(0, 30);
    this.windows.replaceChildren(
      ...rows.map((w) => {
        const tr = el("tr", w.energy_uj === null ? "window gap" : "window");
        const energy = w.energy_uj === null ? el("td", "energy none", "no reading") : el("td", "energy num", w.energy_text ?? "no reading");
        if (w.energy_uj !== null) energy.title = `${w.energy_uj} µJ exactly`;
        const power = el("td", "power num", w.power_text ?? "—");
        const prov = gradeCell(w.provenance);
        prov.classList.add("provenance");
        const cov = el("td", w.coverage === "Partial" ? "coverage partial" : "coverage", w.coverage ?? "—");
        tr.append(el("td", "num", String(w.seq)), timeCell(w.start_ms), timeCell(w.end_ms), energy, power, prov, cov, el("td", "rung", w.rung ?? "—"));
        return tr;
      }),
    );
    this.liveMetered.replaceChildren(...snap.live_metered.map((line) => el("li", undefined, line)));
    this.liveMetered.hidden = snap.live_metered.length === 0;
    if (rows.length === 0) {
      const tr = el("tr");
      const td = el("td", "none", "No windows recorded yet.");
      td.colSpan = 8;
      tr.append(td);
      this.windows.append(tr);
    }
  }

  private async export(format: "csv" | "json"): Promise<void> {
    try {
      const r = await api.energyExport(format);
      if (r.path) this.notify.info(`Exported ${r.bytes} bytes to ${r.path}`);
    } catch (e) {
      this.notify.error(e as UiError);
    }
  }
}
