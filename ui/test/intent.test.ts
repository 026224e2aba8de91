import { afterEach, describe, expect, it } from "vitest";
import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { IntentPanel } from "../src/views/intent";
import type { IntentComparison, IntentView } from "../src/ipc";

afterEach(() => clearMocks());

const noop = { error: () => {}, info: () => {} };
const HASH = "sha256:5f1c0e6b7d0f4a2f9f5a7c1e3b8d2a4c6e8f0a1b3c5d7e9f1a3b5c7d9e1f3a5b";
const accepted = (over: Partial<IntentView> = {}): IntentView => ({
  source: "pasted",
  kind: "binding",
  canonical_json: '{"a":1}',
  canonical_hex: "7b2261223a317d",
  canonical_len: 7,
  intent_hash: HASH,
  refusal: null,
  ...over,
});

describe("intent panel (the developer's, Agent-Safe Intent v1)", () => {
  it("asi_5_shows_canonical_bytes_as_text_and_hex_and_the_hash", async () => {
    const asked: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "intent_inspect") {
        asked.push(args);
        return accepted();
      }
      throw new Error(cmd);
    });
    const p = new IntentPanel(noop);
    p.paste("a", '{ "a" : 1 }');
    await p.inspect("a");
    expect(asked).toEqual([{ source: { kind: "text", text: '{ "a" : 1 }' } }]);
    expect(p.root.querySelector("#intent-hash-a")?.textContent).toBe(HASH);
    expect(p.root.querySelector("#intent-canonical-a")?.textContent).toBe('{"a":1}');
    expect(p.root.querySelector("#intent-hex-a")?.textContent).toBe("7b2261223a317d");
    expect(p.root.querySelector("#intent-out-a")?.textContent).toContain("7 bytes");
  });

  it("asi_3_a_refused_binding_shows_its_code_and_rule_and_never_a_hash", async () => {
    mockIPC((cmd) => {
      if (cmd === "intent_inspect")
        return accepted({
          canonical_json: null,
          canonical_hex: null,
          canonical_len: null,
          intent_hash: null,
          refusal: { code: "BINDING_UNKNOWN_KEY", rule: "§3: an object with a fixed key set MUST NOT carry any other key", message: "key approved_by is not allowed in $ (its key set is fixed)" },
        });
      throw new Error(cmd);
    });
    const p = new IntentPanel(noop);
    p.paste("b", "{}");
    await p.inspect("b");
    const r = p.root.querySelector("#intent-refusal-b")!;
    expect(r.textContent).toContain("BINDING_UNKNOWN_KEY");
    expect(r.textContent).toContain("Rule: §3");
    expect(p.root.querySelector("#intent-hash-b")).toBeNull();
    expect(p.root.querySelector("#intent-out-b")?.textContent).toContain("never hashed");
  });

  it("asi_6_compare_names_each_property_that_makes_another_intent", async () => {
    const c: IntentComparison = {
      first: accepted(),
      second: accepted({ intent_hash: HASH.replace("5f", "60") }),
      compared: true,
      refusal: null,
      same_intent: false,
      hashes: [HASH, HASH.replace("5f", "60")],
      differences: [
        { path: "$.action.parameters.replicas", change: "changed", first: "3", second: "30" },
        { path: "$.context.ticket", change: "added", first: null, second: '"CHG-1"' },
      ],
    };
    const asked: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "intent_compare") {
        asked.push(args);
        return c;
      }
      throw new Error(cmd);
    });
    const p = new IntentPanel(noop);
    p.paste("a", "A");
    p.paste("b", "B");
    await p.compare();
    expect(asked).toEqual([{ first: { kind: "text", text: "A" }, second: { kind: "text", text: "B" } }]);
    expect(p.root.querySelector("#intent-verdict")?.textContent).toContain("Different intents: 2 properties differ");
    const rows = [...p.root.querySelectorAll(".intent-diff tbody tr")].map((r) => [...r.querySelectorAll("td")].map((t) => t.textContent));
    expect(rows).toEqual([
      ["$.action.parameters.replicas", "changed", "3", "30"],
      ["$.context.ticket", "only in B", "(absent)", '"CHG-1"'],
    ]);
    // Editing a binding takes the stale comparison away.
    p.paste("b", "C");
    expect(p.root.querySelector("#intent-verdict")).toBeNull();
  });

  it("asi_4_a_document_that_does_not_decode_is_not_compared_and_says_which", async () => {
    mockIPC(() => ({
      first: accepted(),
      second: accepted({ kind: null, canonical_json: null, canonical_hex: null, canonical_len: null, intent_hash: null, refusal: { code: "JSON_SYNTAX", rule: "the binding is one JSON text (RFC 8259)", message: "invalid JSON at byte 3: x" } }),
      compared: false,
      refusal: { code: "JSON_SYNTAX", rule: "the binding is one JSON text (RFC 8259)", message: "the second does not decode: invalid JSON at byte 3: x" },
      same_intent: null,
      hashes: null,
      differences: [],
    }));
    const p = new IntentPanel(noop);
    await p.compare();
    expect(p.root.querySelector("#intent-comparison")?.textContent).toContain("Not compared: the second does not decode");
    expect(p.root.querySelector("#intent-verdict")).toBeNull();
  });

  it("issue34_a_file_chosen_in_the_dialog_is_sent_by_its_handle", async () => {
    const asked: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "developer_pick_file") return { handle: "f-bind", path: "/ws/binding.json" };
      if (cmd === "intent_inspect") {
        asked.push(args);
        return accepted();
      }
      throw new Error(cmd);
    });
    const p = new IntentPanel(noop);
    await p.pick("a");
    expect(asked).toEqual([{ source: { kind: "file", handle: "f-bind" } }]);
    expect(p.root.textContent).toContain("/ws/binding.json");
  });
});
