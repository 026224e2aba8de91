import { afterEach, describe, expect, it } from "vitest";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { BlueprintView } from "../src/views/blueprint";
import { blueprintReport, items, rugPullReport } from "./fixtures";
import type { ConformanceView } from "../src/ipc";

afterEach(() => clearMocks());

const cells = (root: HTMLElement, css: string) => [...root.querySelectorAll(css)].map((e) => e.textContent);

describe("blueprint view (the developer's)", () => {
  it("abp_13_consistent_report_shows_each_step_and_what_was_not_verified", async () => {
    const asked: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "workspace_overview") return items();
      if (cmd === "blueprint_report") {
        asked.push(args);
        return blueprintReport();
      }
      throw new Error(cmd);
    });
    const v = new BlueprintView();
    await v.refresh();
    await v.refresh();
    expect(asked).toEqual([{ id: 2 }]); // the first blueprint, reconciled once, not on every poll
    expect(v.root.querySelector("#blueprint-verdict .value")?.textContent).toBe("consistent");
    // Consistent is never shown without its gaps.
    expect(v.root.querySelector("#blueprint-verdict")?.textContent).toContain("9 surface(s) not verified");
    expect(cells(v.root, ".steps-table tbody td.name")).toEqual(["canonical", "digest", "negotiation", "structure", "portability", "signatures", "bind", "bounds"]);
    const bind = v.root.querySelector(".steps-table tr.step.partial")!;
    expect(bind.querySelector(".outcome")?.textContent).toBe("passed in part");
    expect(bind.querySelector(".step-open")?.textContent).toContain("binding_attestation_freshness");
    const nv = cells(v.root, ".not-verified-table td.surface");
    for (const s of ["tenancy", "live_policy", "authority", "effect_ownership", "execution", "billing", "evaluation_truth", "host_bounds"]) expect(nv).toContain(s);
    expect(cells(v.root, ".not-verified-table tr.host_owned td.kind")[0]).toBe("host-owned");
    expect(cells(v.root, ".clamps-table td.value")).toEqual(["50 EUR", "40 EUR"]);
    // An input the host did not supply is said, not left blank.
    expect(v.root.querySelector(".bp-files")?.textContent).toContain("not supplied");
  });

  it("abp_13_a_step_never_reached_reads_not_run_and_bounds_not_computed", async () => {
    mockIPC((cmd) => (cmd === "workspace_overview" ? items() : rugPullReport()));
    const v = new BlueprintView();
    await v.open(3);
    expect(v.root.querySelector("#blueprint-verdict .value")?.textContent).toBe("inconsistent");
    const bounds = v.root.querySelector(".steps-table tr.step.not_run")!;
    expect(bounds.querySelector(".outcome")?.textContent).toBe("not run");
    expect(bounds.querySelector(".checks")?.textContent).toBe("no check ran");
    expect(v.root.querySelector(".steps-table tr.step.failed .check.fail .code")?.textContent).toBe("binding_descriptor_mismatch");
    expect(v.root.querySelector(".verdict-text")?.textContent).toContain("binding_descriptor_mismatch at /tool_bindings/0");
    expect(v.root.querySelector("#blueprint-verdict")?.textContent).toContain("8 surface(s) not verified");
    expect(v.root.querySelector(".bounds-table")).toBeNull();
    expect(v.root.textContent).toContain("Not computed: the bounds step did not run.");
    expect(v.root.querySelector(".not-verified-table tr.not_reached td.kind")?.textContent).toBe("not reached");
  });

  it("the picker switches between the workspace's blueprints", async () => {
    const asked: number[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "workspace_overview") return items();
      asked.push((args as { id: number }).id);
      return (args as { id: number }).id === 3 ? rugPullReport() : blueprintReport();
    });
    const v = new BlueprintView();
    await v.refresh();
    const picks = [...v.root.querySelectorAll<HTMLButtonElement>(".picker .pick")];
    expect(picks.map((p) => p.textContent)).toEqual(["summarize, its deployment", "summarize, rug-pull"]);
    picks[1].click();
    await new Promise((r) => setTimeout(r, 0));
    expect(asked).toEqual([2, 3]);
    expect(v.root.querySelector(".picker .pick.active")?.textContent).toBe("summarize, rug-pull");
    expect(v.root.querySelector("#blueprint-verdict .value")?.textContent).toBe("inconsistent");
  });

  it("an error reaches the person in words and no stale report stays", async () => {
    let fail = false;
    mockIPC((cmd) => {
      if (cmd === "workspace_overview") return items();
      if (fail) throw { code: "view.unreadable", message: "cannot read /ws/demo/blueprint/summarize.blueprint.json: No such file or directory" };
      return blueprintReport();
    });
    const v = new BlueprintView();
    await v.refresh();
    fail = true;
    (v.root.querySelector(".reconcile-again") as HTMLButtonElement).click();
    await new Promise((r) => setTimeout(r, 0));
    expect(v.root.querySelector(".status.error")?.textContent).toContain("cannot read /ws/demo/blueprint/summarize.blueprint.json");
    expect(v.root.querySelector("#blueprint-verdict")).toBeNull();
  });

  it("abp_a_pair_opened_from_disk_is_reconciled_and_its_decode_error_shows_line_column_and_text", async () => {
    const asked: [string, unknown][] = [];
    const broken = rugPullReport();
    broken.first_failure = {
      code: "invalid_syntax",
      subject: "byte 18",
      detail: "unexpected character ','",
      location: { artifact: "blueprint", file: "/tmp/bp.json", byte: 18, line: 2, column: 10, pointer: null, excerpt: ' "b": [1,, 2]}', caret: 9, text: "bp.json line 2, column 10 (byte 18)" },
    };
    mockIPC((cmd, args) => {
      asked.push([cmd, args]);
      if (cmd === "workspace_overview") return items();
      if (cmd === "blueprint_open") return 9;
      if (cmd === "blueprint_report") return broken;
      throw new Error(cmd);
    });
    const v = new BlueprintView();
    // Issue 34: the fields show what the pickers chose and cannot be typed in; the handles go back.
    expect((v.root.querySelector("#bp-open-blueprint") as HTMLInputElement).readOnly).toBe(true);
    v.choose("blueprint", { handle: "f-bp", path: "/tmp/bp.json" });
    v.choose("deployment", { handle: "f-dep", path: "/tmp/dep.json" });
    expect((v.root.querySelector("#bp-open-blueprint") as HTMLInputElement).value).toBe("/tmp/bp.json");
    await v.openForm();
    expect(asked[0]).toEqual(["blueprint_open", { form: { blueprint: "f-bp", deployment: "f-dep", keys: null, host_bounds: null, descriptors: null } }]);
    expect(asked).toContainEqual(["blueprint_report", { id: 9 }]);
    const at = v.root.querySelector("#blueprint-first-failure-location")!;
    expect(at.textContent).toContain("at bp.json line 2, column 10 (byte 18)");
    expect(at.querySelector("pre")?.textContent).toBe(' "b": [1,, 2]}\n         ^');
  });

  it("abp_opening_a_missing_file_says_which_and_shows_no_report", async () => {
    mockIPC((cmd) => {
      if (cmd === "blueprint_open") throw { code: "blueprint.missing_file", message: "the blueprint /tmp/none.json is not a readable file" };
      throw new Error(cmd);
    });
    const v = new BlueprintView();
    await v.openForm();
    expect(v.root.querySelector(".bp-open .status.error")?.textContent).toContain("/tmp/none.json");
  });
});

describe("conformance run (ABP §15)", () => {
  const view = (over: Partial<ConformanceView> = {}): ConformanceView => ({
    path: "/corpus",
    green: false,
    passed: 3,
    failed: 1,
    files_run: 2,
    corpus_digest: null,
    report_digest: "sha-256:abcdef0123456789abcdef",
    missing_surfaces: ["portability.scan"],
    missing_classes: ["terminal_equivocation"],
    floor: "Floor: 16 surfaces × 31 classes (90 required cells), the reference corpus sha-256:vMy (96 cases).",
    surfaces: [
      { name: "digest.compute", passed: 2, failed: 0 },
      { name: "signature.verify", passed: 1, failed: 1 },
    ],
    classes: [
      { name: "valid", passed: 2, failed: 0 },
      { name: "signature_invalid", passed: 1, failed: 1 },
    ],
    matrix: [
      { surface: "digest.compute", class: "valid", passed: 2, failed: 0 },
      { surface: "signature.verify", class: "signature_invalid", passed: 1, failed: 1 },
    ],
    file_failures: [{ file: "/corpus/federation.json", code: "corpus_surface_unknown", detail: "unknown surface \"federation.carrier\"" }],
    cases: [
      { file: "/corpus/sig.json", id: "sig-2", surface: "signature.verify", class: "signature_invalid", passed: false, expected: "signature_invalid", got: "valid" },
      { file: "/corpus/sig.json", id: "sig-1", surface: "signature.verify", class: "signature_invalid", passed: true, expected: "signature_invalid", got: "signature_invalid" },
    ],
    ...over,
  });

  it("s15_a_corpus_run_shows_the_matrix_failed_files_and_cases", async () => {
    const asked: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "blueprint_conformance") {
        asked.push(args);
        return view();
      }
      throw new Error(cmd);
    });
    const v = new BlueprintView();
    await v.conformance.run();
    expect(asked).toEqual([]); // nothing chosen, nothing run
    expect(v.root.querySelector(".bp-conformance .status.error")?.textContent).toContain("Choose a corpus folder");
    v.conformance.choose({ handle: "f-corpus", path: "/corpus" });
    await v.conformance.run();
    expect(asked).toEqual([{ handle: "f-corpus" }]);
    expect(v.root.querySelector("#conformance-verdict .value")?.textContent).toBe("not green");
    const rows = [...v.root.querySelectorAll(".conformance-matrix tr.surface")];
    expect(rows.map((r) => r.querySelector(".name")?.textContent)).toEqual(["digest.compute", "signature.verify"]);
    expect([...rows[0].querySelectorAll("td")].map((t) => t.textContent)).toEqual(["2/2", "—", "2/2"]);
    expect(rows[1].querySelector("td.cell.failed")?.textContent).toBe("1/2");
    expect(v.root.querySelector(".conformance-file-failures .code")?.textContent).toBe("corpus_surface_unknown");
    expect(v.root.querySelectorAll(".conformance-failed-cases tr.case").length).toBe(1);
    expect(v.root.querySelector(".missing-surfaces")?.textContent).toContain("portability.scan");
    expect(v.root.querySelector(".missing-classes")?.textContent).toContain("terminal_equivocation");
    expect(v.root.querySelector(".floor")?.textContent).toContain("16 surfaces × 31 classes");
  });

  it("s15_an_empty_run_is_never_green_in_words", () => {
    const v = new BlueprintView();
    v.conformance.show(view({ passed: 0, failed: 0, files_run: 0, surfaces: [], classes: [], matrix: [], file_failures: [], cases: [] }));
    expect(v.root.querySelector("#conformance-verdict .value")?.textContent).toBe("not green");
    expect(v.root.querySelector(".conformance-result .verdict-text")?.textContent).toContain("never green");
  });

  it("a corpus that cannot be run is said with its code", async () => {
    mockIPC(() => {
      throw { code: "blueprint.corpus_refused", message: "the corpus index /c/index.json is refused" };
    });
    const v = new BlueprintView();
    v.conformance.choose({ handle: "f-c", path: "/c" });
    await v.conformance.run();
    expect(v.root.querySelector(".bp-conformance .status.error")?.textContent).toContain("blueprint.corpus_refused");
  });
});
