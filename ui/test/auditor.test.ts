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
      if (cmd === "audit_pick_streams") return [{ handle: "f-a", path: "/a.jcps" }, { handle: "f-b", path: "/b.jcps" }];
      if (cmd === "audit_start") {
        // Issue 34: the picked files go back by their handles, never their paths.
        expect(args).toEqual({ handles: ["f-a", "f-b"] });
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

  it("s8_2_a_finding_opens_the_record_it_names_and_walks_the_log", async () => {
    const id = "e72760628aa366ae0a27ef8982e9f38edeed36ee65f1afd8a29e87ec0c14dda6";
    const html =
      '<section class="field findings"><h3>findings</h3><table class="rows findings-table"><tbody><tr class="finding">' +
      '<td class="num"><a class="record-link" data-stream="0" data-at="26884">26884</a></td>' +
      `<td>on <a class="record-link id-link" data-stream="0" data-id="${id}">e7276062…</a></td></tr></tbody></table></section>`;
    const asked: unknown[] = [];
    const panel = (offset: number, over = {}) => ({
      stream_index: 0, stream: "/ws/t.jcps", offset, end: offset + 998, number: 50, kind: "receipt",
      id: "00".repeat(32), signer: "did:key:z6MkgbqunT42sQK9j5k3JUdmv8hPJgEAYZxtHcKkfLtykaRH",
      check: "refused", check_code: "bad-signature", check_message: "the signature does not verify under did:key:z6Mkg…",
      prev: 26524, next: 27882, html: '<table class="kv"><tbody><tr><th>cost</th><td class="num energy" data-exact="6028">6.028 mJ</td></tr></tbody></table>',
      ...over,
    });
    mockIPC((cmd, args) => {
      if (cmd === "audit_record") {
        asked.push(args);
        const a = args as { at?: number; record?: string };
        if (a.record) return panel(10051, { kind: "grant", id, check: "verified", check_code: null, check_message: "the issuer's signature over the grant verifies", prev: 9598, next: 10499 });
        if (a.at === 27882) return panel(27882, { next: null, check: "verified", check_code: null, check_message: "ok" });
        return panel(a.at ?? 0);
      }
      throw new Error(cmd);
    });
    const v = new AuditorView(notify());
    v.showJob(job({ state: "done" }));
    v.showReport(reportView({ html }));
    const box = v.root.querySelector("#audit-record") as HTMLElement;
    expect(box.hidden).toBe(true);
    (v.root.querySelector('a.record-link[data-at="26884"]') as HTMLElement).click();
    await vi.waitFor(() => expect(box.hidden).toBe(false));
    expect(asked[0]).toEqual({ id: 7, stream: 0, at: 26884 });
    expect(box.querySelector("h3")?.textContent).toBe("Receipt #50 at byte 26\u202f884");
    expect(box.querySelector(".record-check.refused")?.textContent).toContain("Refused (bad-signature): the signature does not verify");
    expect(box.querySelector(".record-body td.energy")?.getAttribute("data-exact")).toBe("6028");
    // The next record, then the end of the log: no next to offer.
    (box.querySelector(".record-next") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(box.dataset.offset).toBe("27882"));
    expect((box.querySelector(".record-next") as HTMLButtonElement).disabled).toBe(true);
    expect((box.querySelector(".record-prev") as HTMLButtonElement).disabled).toBe(false);
    // An id a finding names opens its record by id, never by a path.
    (v.root.querySelector("a.id-link") as HTMLElement).click();
    await vi.waitFor(() => expect(box.dataset.offset).toBe("10051"));
    expect(asked[2]).toEqual({ id: 7, stream: 0, record: id });
    expect(box.querySelector(".record-check.verified")).not.toBeNull();
    (box.querySelector(".record-close") as HTMLButtonElement).click();
    expect(box.hidden).toBe(true);
  });

  it("a record that cannot be opened is said once, the panel unchanged", async () => {
    const n = notify();
    mockIPC(() => {
      throw { code: "audit.no-record-at", message: "no-record-at: t.jcps: nothing starts at byte 9 (records start at 8 and 388)" };
    });
    const v = new AuditorView(n);
    v.showJob(job({ state: "done" }));
    await v.openRecord(0, { at: 9 });
    expect(n.error).toHaveBeenCalledTimes(1);
    expect((v.root.querySelector("#audit-record") as HTMLElement).hidden).toBe(true);
  });
});
