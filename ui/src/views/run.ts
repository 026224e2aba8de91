// Run view (JCP §4.7), read-only verification (the Steward view signs): a run's checkpoints
// in order — sequence, declared spend with its provenance or "not stated",
// what is left (or "unknown": never the full budget when no spend is stated),
// amendments with their continuation grants, and the verdict on each record.
import { api, type RunView as Run } from "../ipc";
import { el, formatUnixLocal, GRADE_MEANING, shortId, table } from "../format";
import { ItemView } from "./item";
import { issuerChips, renderAuthority } from "./authority";

export class RunView extends ItemView<Run> {
  constructor() {
    const note = el("p", "hint", "Verification of a run file, read-only here: approve, amend or revoke in the Steward view (headless: ");
    note.append(el("code", undefined, "jcp run amend"), document.createTextNode(", "), el("code", undefined, "jcp grant revoke"), document.createTextNode(")."));
    super(
      {
        kind: "run",
        name: "run",
        title: "Run",
        again: ["verify-again", "Verify again"],
        empty: "No run in this workspace yet.",
        reportClass: "run-report",
      },
      note,
    );
  }

  protected fetch(id: number): Promise<Run> {
    return api.runReport(id);
  }

  show(v: Run): void {
    this.report.replaceChildren(...renderRun(v));
  }
}

/** A verified run as the Run and Steward views show it: verdict, summary,
 *  every checkpoint with its amendments, grants and findings. */
export function renderRun(v: Run): HTMLElement[] {
  {
    const parts: HTMLElement[] = [];
    const verdict = el("div", `verdict ${v.verdict}`);
    verdict.id = "run-verdict";
    verdict.append(el("span", "label", "Verdict: "), el("strong", "value", v.verdict));
    parts.push(verdict, el("p", "verdict-text", v.verdict_text));

    // The run at a glance.
    const [st, sb] = table("run-summary", ["", ""]);
    st.querySelector("thead")?.remove();
    const kv = (k: string, val: string | HTMLElement, cls?: string) => {
      const tr = el("tr");
      const td = el("td", cls);
      if (typeof val === "string") td.textContent = val;
      else td.append(val);
      tr.append(el("th", undefined, k), td);
      sb.append(tr);
    };
    kv("file", v.path, "path");
    const steward = el("span");
    steward.append(shortId(v.issuer, 24), ...issuerChips(v.authority));
    kv("steward (issuer)", steward);
    kv("agent", shortId(v.agent, 24));
    kv("budget issued", v.issued_budget);
    kv("budget in force", v.active_budget ?? "none: no grant is active (an amendment's continuation is missing or refused)");
    kv("latest stated spend", v.latest_spent.text, v.latest_spent.uj === null ? "none" : undefined);
    kv("coverage of the spend claim", v.latest_spent.uj === null ? "—" : "not stated: a checkpoint states a figure and its provenance only (§4.7); it is the agent's claim, not a measurement", "none");
    kv("remainder of the budget in force", v.remainder.text, v.remainder.known ? "remainder" : "remainder unknown");
    kv("records", String(v.records));
    const summary = el("div", "panel");
    summary.append(st);
    parts.push(summary);

    // Every checkpoint.
    const roles = new Map(v.grants.map((g) => [g.id, g.role]));
    const [ct, cb] = table("checkpoints-table", ["seq", "at", "under grant", "spent (cumulative)", "remainder", "most an amendment may set", "verdict"]);
    for (const c of v.checkpoints) {
      const tr = el("tr", `checkpoint ${c.verdict}`);
      const grant = el("td");
      grant.append(el("span", undefined, `${roles.get(c.grant_id) ?? "unknown"} `), shortId(c.grant_id, 8));
      const spent = el("td", c.spent.uj === null ? "spent none" : "spent");
      if (c.spent.uj === null) spent.textContent = "not stated";
      else {
        spent.append(el("span", "amount", c.spent.amount ?? ""), el("span", "sep", " "));
        const chip = el("span", `grade grade-${c.spent.provenance}`, c.spent.provenance ?? "");
        chip.title = GRADE_MEANING[c.spent.provenance ?? ""] ?? "";
        spent.append(chip);
      }
      const rem = el("td", c.remainder.known ? "remainder" : "remainder unknown", c.remainder.text);
      const ceiling = el("td", c.amend_ceiling ? "ceiling" : "ceiling none", c.amend_ceiling ?? "—");
      // Amendments made here: a row of their own under the checkpoint.
      const amRows = c.amendments.map((a) => {
        const atr = el("tr", "amendment-row");
        const td = el("td", "amendment");
        td.colSpan = 7;
        td.append(el("strong", undefined, `Amendment (record ${a.index}) by the steward: `), el("span", undefined, `budget set to ${a.budget}, at most ${a.ceiling}`));
        if (a.expiry !== null) td.append(el("span", undefined, `; expires ${formatUnixLocal(a.expiry)}`));
        if (a.instructions) td.append(el("span", undefined, "; new instructions "), shortId(a.instructions, 8));
        const cont = el("span", a.continuation_verified ? "continuation ok" : "continuation fail");
        cont.append(document.createTextNode(a.continuation_verified ? "; continuation grant verified " : "; continuation grant NOT verified "), shortId(a.continuation, 8));
        td.append(cont);
        atr.append(td);
        return atr;
      });
      const vd = el("td", `rverdict ${c.verdict}`, c.verdict);
      if (c.codes.length) vd.append(el("div", "codes", c.codes.join(", ")));
      tr.append(el("td", "num seq", String(c.seq)), el("td", "at", formatUnixLocal(c.at)), grant, spent, rem, ceiling, vd);
      cb.append(tr, ...amRows);
    }
    const cps = el("div", "panel");
    cps.append(el("h3", undefined, `Checkpoints (${v.checkpoints.length})`), ct);
    parts.push(cps);

    // Grants and findings.
    const lower = el("div", "lower");
    const [gt, gb] = table("grants-table", ["record", "role", "grant", "budget", "expires", "verdict"]);
    for (const g of v.grants) {
      const tr = el("tr", `grant ${g.verdict}`);
      const id = el("td");
      id.append(shortId(g.id, 8));
      tr.append(el("td", "num", String(g.index)), el("td", undefined, g.role), id, el("td", undefined, g.budget), el("td", undefined, formatUnixLocal(g.expiry)), el("td", `rverdict ${g.verdict}`, g.verdict));
      gb.append(tr);
    }
    const grants = el("div", "panel");
    grants.append(el("h3", undefined, "Grants"), gt);
    const findings = el("div", "panel findings");
    findings.append(el("h3", undefined, `Findings (${v.findings.length})`));
    if (v.findings.length === 0) findings.append(el("p", "none", "None: every record verified."));
    else {
      const [ft, fb] = table("findings-table", ["record", "kind", "code", "what", "admitted"]);
      for (const f of v.findings) {
        const tr = el("tr", "finding");
        tr.append(el("td", "num", String(f.index)), el("td", undefined, f.kind), el("td", "code", f.code), el("td", undefined, f.message), el("td", undefined, f.admitted ? "yes" : "no"));
        fb.append(tr);
      }
      findings.append(ft);
    }
    if (v.unattached_amendments.length) findings.append(el("p", "unattached", `Refused amendments not at the latest checkpoint: records ${v.unattached_amendments.join(", ")}`));
    lower.append(grants, findings);
    parts.push(lower, renderAuthority(v.authority));

    return parts;
  }
}
