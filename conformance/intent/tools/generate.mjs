// Generates this project's Agent-Safe Intent vectors with the reference
// algorithm on its own platform (Node's JSON.parse, Array.prototype.sort,
// JSON.stringify, node:crypto sha256): the differential oracle the Rust
// implementation is held to. Run from the repository root:
//
//     node conformance/intent/tools/generate.mjs
//
// Inputs are written as JSON *text* and embedded verbatim in each vector,
// so number lexemes and escapes reach both implementations unchanged.
// Deterministic: the random suite uses a fixed-seed generator.
import { createHash } from "node:crypto";
import { writeFileSync, mkdirSync } from "node:fs";

const root = "conformance/intent";

// §4 as the profile defines it: sort every object's keys with the default
// sort, re-insert into a fresh object, JSON.stringify.
function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v === null || typeof v !== "object") return v;
  const out = {};
  for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k]);
  return out;
}
const canonical = (v) => JSON.stringify(sortKeys(v));
const hash = (s) => "sha256:" + createHash("sha256").update(s, "utf8").digest("hex");

function vectorText(description, bindingText, extra = "") {
  const v = JSON.parse(bindingText);
  const c = canonical(v);
  return `{\n  "description": ${JSON.stringify(description)},\n  "binding": ${bindingText},\n  "canonical_json": ${JSON.stringify(c)},\n  "intent_hash": ${JSON.stringify(hash(c))}${extra}\n}\n`;
}

function write(path, text) {
  JSON.parse(text); // every file is JSON
  writeFileSync(`${root}/${path}`, text);
}

// ---- §4 canonicalization cases ------------------------------------------
const cases = {
  "array-index-keys": [
    "§4.1 + reinsertion: an ECMAScript object enumerates array-index keys (canonical integers 0..2^32-2) first, numerically; then the others in sorted (insertion) order. 4294967295, 01, -1 and 1.5 are not array indices.",
    `{"b": 1, "10": 2, "9": 3, "a": 4, "4294967294": 5, "4294967295": 6, "01": 7, "-1": 8, "0": 9, "1.5": 10, "": 11}`,
  ],
  "utf16-astral-vs-bmp": [
    "§4.1: U+1F680 (units D83D DE80) sorts before U+E000 and U+FF5E by UTF-16 code unit, although it is the larger code point; U+00E9 before U+0100.",
    `{"\\uff5e": 1, "\\ud83d\\ude80": 2, "\\ue000": 3, "z": 4, "\\u00e9": 5, "\\u0100": 6, "Z": 7}`,
  ],
  "lone-surrogates": [
    "§4.3: a lone surrogate (key or value) is written as a lowercase \\uXXXX escape; a reversed pair is two lone surrogates; a proper pair is the astral character itself.",
    `{"a": "\\ud800", "b": "x\\udfffy", "c": "\\ude80\\ud83d", "d": "\\ud83D\\uDE80", "\\udbff": 1, "e": "\\uD83Dz"}`,
  ],
  "string-escapes": [
    "§4.3: \" and \\ escaped; U+0008/09/0A/0C/0D as \\b \\t \\n \\f \\r; other controls as \\u00xx (lowercase); '/', U+007F, U+2028, U+2029 verbatim.",
    `{"q": "\\"quoted\\" \\\\ back", "c": "\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u000e\\u001f", "s": "a\\/b", "u": "\\u007f\\u0080\\u2028\\u2029\\ufeff", "upper": "\\u00C9\\u00e9"}`,
  ],
  "number-forms": [
    "§4.4: numbers as ECMAScript Number::toString: -0 is 0, exponent form at >=1e21 and <1e-6, shortest round-trip digits, lexemes rounded to the nearest double as JSON.parse does.",
    `{"n": [-0, -0.0, 0e10, -0e-5, 1.5, 1e21, 1E21, 999999999999999900000, 1e-7, 0.000001, 0.0000001, 123456789012345680000, 5e-324, 2.5e-324, 1e-400, 1.7976931348623157e308, 100, 1E2, 1.0, -1.5e-10, 0.1, 0.30000000000000004, 9007199254740993, 12345678901234567890123, 1.0000000000000002, 4.35, 0.000001234, 1e+0, 2e-7, 1.2e+21, 123e-20]}`,
  ],
  "negative-zero-nested": [
    "§4.4: -0 becomes 0 at every depth, in arrays and as object values.",
    `{"a": [-0, [-0.0, {"z": -0}]], "b": {"c": -0E3}}`,
  ],
  "composed-vs-decomposed-keys": [
    "§4.3 + §4.1: NFC and NFD forms of the same text are different keys (no normalization); U+0065 U+0301 sorts before U+00E9.",
    `{"caf\\u00e9": "nfc", "cafe\\u0301": "nfd", "CAF\\u00c9": "upper"}`,
  ],
  "empty-and-literals": [
    "§4.2, §4.5: empty containers, empty strings, null, true, false, no whitespace; arrays keep their order.",
    `{"z": [], "y": {}, "x": [{}, [], [[]]], "w": "", "v": null, "u": [true, false, null], "t": [3, 1, 2]}`,
  ],
  "whitespace-and-order-ignored": [
    "§4.2: insignificant whitespace in the input and member order never reach the canonical form.",
    `{ "b" :\t[ 1 ,\n 2 ] ,\r\n "a" : { "d" : 1 , "c" : 2 } }`,
  ],
  "depth-at-bound": [
    "§3: nesting depth 20 is accepted (the root is depth 0; the innermost value here is at depth 20).",
    `{"d":` + "[".repeat(19) + `"deepest"` + "]".repeat(19) + `}`,
  ],
};
mkdirSync(`${root}/vectors`, { recursive: true });
for (const [name, [description, text]] of Object.entries(cases)) {
  write(`vectors/${name}.json`, vectorText(description, text));
}

// ---- whole bindings -----------------------------------------------------
const fullBinding = {
  protocol_version: "agent-safe.intent/1",
  tenant_id: "7a1c1d4e-2b3f-4c5d-8e9f-0a1b2c3d4e5f",
  intent_id: "0f0e0d0c-0b0a-4909-a808-070605040302",
  captured_at: "2026-10-01T08:30:00.000Z",
  expires_at: "2026-10-01T08:35:00.5Z",
  actor: { id: "synthetic-treasury-agent", type: "AI_AGENT", runtime: "jcp-console", trust_level: "supervised" },
  action: {
    type: "payment.transfer",
    resource: "bank:account:GB00SYNTH0000000001",
    parameters: { amountMinor: 125000, currency: "EUR", destination: "DE00SYNTH0000000002", memo: "Rechnung \u2116 7 \u2014 caf\u00e9 \u{1F9FE}", split: [0.25, 0.75], urgent: false, "2": "index-like key" },
  },
  context: { source: "jcp-conformance", approval_role: "TREASURY", idempotency_key: "transfer-synthetic-7-v1", ticket: null },
  downstream_target: { system: "core-banking", operation: "transfers/create", environment: "production", endpoint: "POST /v2/transfers" },
  expected_effect_digest: "sha256:" + "0123456789abcdef".repeat(4),
};
write(
  "vectors/binding-all-properties.json",
  vectorText(
    "§3, §9: a whole binding carrying every optional property, expected_effect_digest included (added within /1; absent by default).",
    JSON.stringify(fullBinding, null, 2).replace(/\n/g, "\n  "),
  ),
);
const minimal = structuredClone(fullBinding);
delete minimal.expected_effect_digest;
delete minimal.actor.runtime;
delete minimal.actor.trust_level;
delete minimal.downstream_target.environment;
delete minimal.downstream_target.endpoint;
minimal.action.parameters = {};
minimal.context = { idempotency_key: "k" };
write(
  "vectors/binding-minimal.json",
  vectorText("§3: a whole binding with only the required properties; empty parameters.", JSON.stringify(minimal, null, 2).replace(/\n/g, "\n  ")),
);

// ---- §6 compromised principal: a base and single-property mutations -----
const base = structuredClone(fullBinding);
delete base.expected_effect_digest;
const set = (obj, path, value) => {
  const keys = path.split(".");
  let cur = obj;
  for (const k of keys.slice(0, -1)) cur = cur[k];
  cur[keys.at(-1)] = value;
};
const mutations = [
  ["action.parameters.amountMinor", 1250000, "the amount, ten times what was authorized"],
  ["action.parameters.amountMinor", 125001, "the amount, one minor unit more"],
  ["action.parameters.currency", "USD", "the currency"],
  ["action.parameters.destination", "DE00SYNTH0000000003", "the destination account"],
  ["action.parameters.split", [0.75, 0.25], "array order: the same elements in another order"],
  ["action.parameters.urgent", true, "a boolean flag"],
  ["action.parameters.memo", "Rechnung \u2116 7 \u2014 cafe\u0301 \u{1F9FE}", "the memo in NFD: the same text to a reader, another intent"],
  ["action.parameters.note", "added by the agent", "a parameter added after authorization"],
  ["action.resource", "bank:account:GB00SYNTH0000000009", "the source account the action names"],
  ["action.type", "payment.transfer.instant", "the action"],
  ["actor.id", "synthetic-treasury-admin", "the principal: a stronger identity is another intent"],
  ["actor.trust_level", "autonomous", "the trust level"],
  ["tenant_id", "7a1c1d4e-2b3f-4c5d-8e9f-0a1b2c3d4e60", "the tenant"],
  ["intent_id", "0f0e0d0c-0b0a-4909-a808-070605040303", "the intent id"],
  ["captured_at", "2026-10-01T08:30:00.001Z", "the capture time, one millisecond later"],
  ["expires_at", "2026-10-01T09:35:00.5Z", "the expiry: an hour more"],
  ["context.idempotency_key", "transfer-synthetic-7-v2", "the idempotency key: a new attempt, not a retry"],
  ["context.ticket", "CHG-1", "a trusted context value, null before"],
  ["downstream_target.environment", "staging", "the environment"],
  ["downstream_target.endpoint", "POST /v2/transfers/instant", "the endpoint"],
  ["expected_effect_digest", "sha256:" + "f".repeat(64), "an expected-effect digest added"],
];
const baseText = JSON.stringify(base);
const baseCanon = canonical(base);
const seen = new Set([hash(baseCanon)]);
const mutationJson = mutations.map(([path, value, description]) => {
  const b = structuredClone(base);
  set(b, path, value);
  const c = canonical(b);
  const h = hash(c);
  if (seen.has(h)) throw new Error(`mutation ${path} collides`);
  seen.add(h);
  return { path, value, description, binding: b, canonical_json: c, intent_hash: h };
});
write(
  "vectors/compromised-principal.json",
  JSON.stringify(
    {
      description:
        "§6 Compromised Principal, this project's own: a treasury agent's payment.transfer intent and " +
        mutations.length +
        " single-property mutations a valid principal could make after authorization; every hash differs from the base and from each other.",
      binding: base,
      canonical_json: baseCanon,
      intent_hash: hash(baseCanon),
      mutations: mutationJson,
    },
    null,
    2,
  ) + "\n",
);

// ---- §8 framework records: OpenAI, Vercel AI SDK, LangChain --------------
// The record-to-proposal mapping, written here in JS independently of the
// Rust adapter (crates/intent/src/frameworks.rs) that is held to it: the
// tool name and the arguments come from the record, the action, target
// template, system and operation from the operator's tool binding, the
// rest from the trusted context; the framework's call id is kept in
// context.tool_call_id.
const readCall = {
  openai: (r) => ({ name: r.name, args: JSON.parse(r.arguments), id: r.call_id }),
  vercel: (r) => ({ name: r.toolName, args: r.input, id: r.toolCallId }),
  langchain: (r) => ({ name: r.name, args: r.args, id: r.id ?? undefined }),
};
const fillTarget = (template, args) => template.replace(/\{([^{}]*)\}/g, (_, k) => String(args[k]));
function frameworkBinding(framework, record, tool, trusted) {
  const call = readCall[framework](record);
  if (call.name !== tool.tool) throw new Error(`${framework}: tool`);
  for (const k of Object.keys(call.args)) if (!tool.arguments.includes(k)) throw new Error(`${framework}: ${k}`);
  const proposal = { type: tool.action, resource: fillTarget(tool.target, call.args), parameters: call.args };
  const target = { system: tool.system, operation: tool.operation };
  if (tool.environment !== undefined) target.environment = tool.environment;
  if (tool.endpoint !== undefined) target.endpoint = tool.endpoint;
  const context = { ...trusted.context };
  if (call.id !== undefined) context.tool_call_id = call.id;
  context.idempotency_key = trusted.idempotency_key;
  const binding = {
    protocol_version: "agent-safe.intent/1",
    tenant_id: trusted.tenant_id,
    intent_id: trusted.intent_id,
    captured_at: trusted.captured_at,
    expires_at: trusted.expires_at,
    actor: trusted.actor,
    action: proposal,
    context,
    downstream_target: target,
  };
  return { proposal, binding };
}
const coverageOf = (framework) => ({
  action_identity: "native",
  parameters: framework === "openai" ? "adapter" : "native",
  target_identity: "adapter",
  principal: "adapter",
  expiry: "adapter",
  idempotency: "adapter",
  intent_digest: "adapter",
  effect_correlation: "native",
});
const frameworkCases = {
  openai: {
    description:
      "§8 OpenAI: a Responses API function_call item (the Agents SDK's function tools emit the same). The arguments are a JSON text (escapes and the lexeme 1.50 decoded as JSON.parse decodes them); the item's id and status are read, not hashed; the call_id is kept in context.tool_call_id.",
    record: {
      type: "function_call",
      id: "fc_jcp_7",
      call_id: "call_jcp_7",
      name: "schedule_payout",
      arguments: String.raw`{"accountId":"ACC-7","amountMinor":120000,"currency":"EUR","memo":"Q3 caf\u00e9 \ud83e\uddfe","fee":1.50,"split":[0.25,0.75]}`,
      status: "completed",
    },
    tool_binding: {
      tool: "schedule_payout",
      action: "payout.schedule",
      system: "ledger",
      operation: "payouts/create",
      environment: "production",
      endpoint: "POST /v1/payouts",
      target: "ledger:account:{accountId}:{currency}",
      arguments: ["accountId", "amountMinor", "currency", "memo", "fee", "split", "reference"],
    },
    trusted_context: {
      tenant_id: "00000000-0000-4000-8000-00000000000b",
      intent_id: "55555555-5555-4555-8555-555555555551",
      captured_at: "2026-10-03T09:00:00.000Z",
      expires_at: "2026-10-03T09:05:00.000Z",
      actor: { id: "synthetic-finance-agent", type: "AI_AGENT", runtime: "openai-agents", trust_level: "supervised" },
      idempotency_key: "payout-ACC-7-2026-10-03-v1",
      context: { source: "jcp-conformance", approval_role: "FINANCE" },
    },
    notes: {
      parameters: "arguments is a JSON text; the adapter decodes it (strictly: a duplicate key is refused) into the object that is hashed",
      effect_correlation: "function_call_output echoes call_id",
      idempotency: "call_id identifies the model's call, not a retry boundary; the runtime chooses the key",
    },
  },
  vercel: {
    description:
      "§8 Vercel AI SDK: a tool-call part as generateText and streamText return it. The input is an object (its index-like keys canonicalize first); providerMetadata is the provider's note, read and never hashed; the toolCallId is kept in context.tool_call_id.",
    record: {
      type: "tool-call",
      toolCallId: "call_jcp_8",
      toolName: "rotate_credential",
      input: {
        secretPath: "svc/payments/db",
        graceSeconds: 300,
        revokeOld: true,
        notify: ["sre@example.invalid"],
        labels: { b: "bee", "10": "ten", "2": "two" },
      },
      providerMetadata: { openai: { itemId: "fc_jcp_8" } },
    },
    tool_binding: {
      tool: "rotate_credential",
      action: "credential.rotate",
      system: "vault",
      operation: "secrets/rotate",
      environment: "staging",
      target: "vault:secret:{secretPath}",
      arguments: ["secretPath", "graceSeconds", "revokeOld", "notify", "labels"],
    },
    trusted_context: {
      tenant_id: "00000000-0000-4000-8000-00000000000c",
      intent_id: "55555555-5555-4555-8555-555555555552",
      captured_at: "2026-10-03T09:10:00.000Z",
      expires_at: "2026-10-03T09:11:30.000Z",
      actor: { id: "synthetic-sre-agent", type: "AI_AGENT", runtime: "vercel-ai" },
      idempotency_key: "rotate-svc-payments-db-v3",
      context: { source: "jcp-conformance", change_ticket: "CHG-204" },
    },
    notes: {
      effect_correlation: "the tool-result part carries the same toolCallId",
      idempotency: "toolCallId identifies the model's call, not a retry boundary; the runtime chooses the key",
    },
  },
  langchain: {
    description:
      "§8 LangChain: a ToolCall as an AIMessage carries it in tool_calls (a LangGraph ToolNode's input). The args are an object (an NFD string kept as written); the optional id is kept in context.tool_call_id.",
    record: {
      type: "tool_call",
      id: "call_jcp_9",
      name: "close_incident",
      args: { incidentId: "INC-1042", resolution: "mitigated", severity: 2, note: "cafe\u0301 outage, r\u00e9solu" },
    },
    tool_binding: {
      tool: "close_incident",
      action: "incident.close",
      system: "pager",
      operation: "incidents/resolve",
      endpoint: "POST /api/v2/incidents/resolve",
      target: "pager:incident:{incidentId}:sev:{severity}",
      arguments: ["incidentId", "resolution", "severity", "note"],
    },
    trusted_context: {
      tenant_id: "00000000-0000-4000-8000-00000000000d",
      intent_id: "55555555-5555-4555-8555-555555555553",
      captured_at: "2026-10-03T09:20:00.000Z",
      expires_at: "2026-10-03T09:21:00.000Z",
      actor: { id: "synthetic-oncall-agent", type: "AI_AGENT", runtime: "langgraph" },
      idempotency_key: "close-INC-1042-v1",
      context: { source: "jcp-conformance", team: "payments" },
    },
    notes: {
      effect_correlation: "the ToolMessage carries the same id as tool_call_id; the id is optional on the call",
      idempotency: "id identifies the model's call, not a retry boundary; the runtime chooses the key",
    },
  },
};
for (const [framework, c] of Object.entries(frameworkCases)) {
  const { proposal, binding } = frameworkBinding(framework, c.record, c.tool_binding, c.trusted_context);
  const canon = canonical(binding);
  write(
    `frameworks/${framework}.json`,
    JSON.stringify(
      {
        description: c.description + " Reproduced by crates/intent/tests/conformance.rs through intent::frameworks::capture_record.",
        framework,
        record: c.record,
        tool_binding: c.tool_binding,
        trusted_context: c.trusted_context,
        proposal,
        binding,
        canonical_json: canon,
        intent_hash: hash(canon),
        coverage: coverageOf(framework),
        notes: c.notes,
      },
      null,
      2,
    ) + "\n",
  );
}

// ---- §8 MCP: a tools/call request bound by the adapter -------------------
const mcpArgs = { ticketId: "SYN-42", priority: 2, notify: true, labels: ["billing", "r\u00e9sum\u00e9"] };
const mcpArgsDigest = hash(canonical(mcpArgs));
const mcpBinding = {
  protocol_version: "agent-safe.intent/1",
  tenant_id: "00000000-0000-4000-8000-00000000000a",
  intent_id: "44444444-4444-4444-8444-444444444444",
  captured_at: "2026-10-02T10:00:00.000Z",
  expires_at: "2026-10-02T10:02:00.000Z",
  actor: { id: "synthetic-support-agent", type: "AI_AGENT", runtime: "mcp" },
  action: { type: "ticket.escalate", resource: "helpdesk:ticket:SYN-42:priority:2", parameters: mcpArgs },
  context: {
    ingress: "mcp",
    mcp_tool: "escalate_ticket",
    mcp_arguments_digest: mcpArgsDigest,
    mcp_consequential: ["ticketId", "priority"],
    mcp_server: "synthetic-helpdesk",
    mcp_transport: "stdio",
    tool_call_id: 17,
    claimed_principal: "ops@example.invalid",
    deployment: "eu-1",
    idempotency_key: "mcp-escalate-SYN-42-v1",
  },
  downstream_target: { system: "helpdesk", operation: "tickets/escalate", environment: "production" },
};
const mcpCanon = canonical(mcpBinding);
mkdirSync(`${root}/frameworks`, { recursive: true });
write(
  "frameworks/mcp.json",
  JSON.stringify(
    {
      description:
        "§8 MCP: a tools/call request, the operator's tool binding and the host's trusted context; the adapter derives the target from the arguments and puts the canonical arguments' digest in context. Reproduced by crates/intent/tests/conformance.rs through intent::mcp::bind_tools_call.",
      framework: "mcp",
      record: { jsonrpc: "2.0", id: 17, method: "tools/call", params: { name: "escalate_ticket", arguments: mcpArgs } },
      tool_binding: {
        tool: "escalate_ticket",
        action: "ticket.escalate",
        system: "helpdesk",
        operation: "tickets/escalate",
        environment: "production",
        target: "helpdesk:ticket:{ticketId}:priority:{priority}",
        consequential: ["ticketId", "priority", "assignee"],
        arguments: ["ticketId", "priority", "notify", "labels", "assignee"],
      },
      trusted_context: {
        tenant_id: mcpBinding.tenant_id,
        intent_id: mcpBinding.intent_id,
        captured_at: mcpBinding.captured_at,
        expires_at: mcpBinding.expires_at,
        actor: mcpBinding.actor,
        idempotency_key: "mcp-escalate-SYN-42-v1",
        server: "synthetic-helpdesk",
        transport: "stdio",
        principal: "ops@example.invalid",
        context: { deployment: "eu-1" },
      },
      proposal: mcpBinding.action,
      arguments_digest: mcpArgsDigest,
      binding: mcpBinding,
      canonical_json: mcpCanon,
      intent_hash: hash(mcpCanon),
      coverage: coverageOf("mcp"),
    },
    null,
    2,
  ) + "\n",
);

// ---- differential suite: random values, fixed seed -----------------------
let seed = 0x2545f491;
const rnd = () => {
  // xorshift32
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 0x100000000;
};
const pick = (a) => a[Math.floor(rnd() * a.length)];
const keyPool = ["a", "b", "A", "Z", "za", "z\u00e9", "\u00c9clair", "0", "1", "9", "10", "99", "100", "01", "-1", "4294967294", "4294967295", "1e3", "", " ", "\u{1F680}", "\uff5e", "\ue000", "\u00e9", "e\u0301", "key_with_underscore", "\u0000", "\u007f", "\u2028", "\ud800", "\udc00x", "caf\u00e9", "\u05d0", "\u4e2d"];
const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
function randomNumber() {
  switch (Math.floor(rnd() * 6)) {
    case 0: return [String(Math.floor(rnd() * 1e6) - 5e5)];
    case 1: { // random bit pattern, finite
      for (;;) { u32[0] = Math.floor(rnd() * 2 ** 32); u32[1] = Math.floor(rnd() * 2 ** 32); if (Number.isFinite(f64[0])) return [f64[0]]; }
    }
    case 2: { const x = (rnd() - 0.5) * 10 ** Math.floor(rnd() * 50 - 25); return [x.toPrecision(1 + Math.floor(rnd() * 21))]; }
    case 3: { const x = (rnd() - 0.5) * 10 ** Math.floor(rnd() * 60 - 30); return [x.toExponential(Math.floor(rnd() * 20))]; }
    case 4: return [pick(["-0", "0.0", "1e21", "1e-7", "9.999999999999999e20", "1e-6", "0.1", "2.2250738585072014e-308", "4.9e-324", "1.7976931348623157e308", "9007199254740993", "5e-324"])];
    default: return [(rnd() * 1000).toFixed(Math.floor(rnd() * 8))];
  }
}
function numberText() {
  const [n] = randomNumber();
  let t = typeof n === "number" ? JSON.stringify(n) : n;
  if (rnd() < 0.2) t = t.replace("e", "E");
  return t;
}
function stringText() {
  let units = [];
  const len = Math.floor(rnd() * 8);
  for (let i = 0; i < len; i++) {
    const r = rnd();
    if (r < 0.4) units.push(0x20 + Math.floor(rnd() * 0x5f));
    else if (r < 0.5) units.push(Math.floor(rnd() * 0x20));
    else if (r < 0.6) units.push(0xd800 + Math.floor(rnd() * 0x800));
    else if (r < 0.7) units.push(0xd83d, 0xde00 + Math.floor(rnd() * 0x50));
    else units.push(0x80 + Math.floor(rnd() * 0xff00));
  }
  const s = String.fromCharCode(...units);
  // Write with JSON.stringify, sometimes with extra escapes of printable characters.
  let t = JSON.stringify(s);
  if (rnd() < 0.3) t = t.replace(/[a-z]/, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
  return t;
}
function valueText(depth) {
  const r = rnd();
  if (depth > 3 || r < 0.35) return numberText();
  if (r < 0.55) return stringText();
  if (r < 0.62) return pick(["true", "false", "null"]);
  if (r < 0.8) {
    const n = Math.floor(rnd() * 4);
    return "[" + Array.from({ length: n }, () => valueText(depth + 1)).join(",") + "]";
  }
  return objectText(depth + 1);
}
function objectText(depth) {
  const n = Math.floor(rnd() * 6);
  const keys = new Set();
  while (keys.size < n) keys.add(rnd() < 0.75 ? pick(keyPool) : JSON.parse(stringText()));
  return "{" + [...keys].map((k) => JSON.stringify(k) + ":" + valueText(depth)).join(",") + "}";
}
const suite = [];
for (let i = 0; i < 250; i++) {
  const text = objectText(0);
  const v = JSON.parse(text);
  if (Object.keys(v).some((k) => k === "__proto__")) continue;
  const c = canonical(v);
  suite.push(`    {"binding": ${text}, "canonical_json": ${JSON.stringify(c)}, "intent_hash": ${JSON.stringify(hash(c))}}`);
}
mkdirSync(`${root}/differential`, { recursive: true });
write(
  "differential/random-values.json",
  `{\n  "description": "Differential suite: ${suite.length} random JSON objects (index-like, astral, lone-surrogate and NFD keys; random doubles written as shortest, toPrecision, toExponential and toFixed lexemes; control characters and lone surrogates in strings), canonicalized and hashed by Node ${process.version} with the reference algorithm. Generated by conformance/intent/tools/generate.mjs (seeded).",\n  "cases": [\n${suite.join(",\n")}\n  ]\n}\n`,
);
// ---- §3 refusals: negative vectors -------------------------------------
// {refusal: CODE, binding | binding_text | proposal, subject?, schema?}.
// `schema` says how schema.json must judge the same input: "refuses" (the
// default), "not-expressible" (a bound no JSON Schema keyword states: total
// entries, canonical bytes; the schema accepts, the validator refuses), or
// "not-applicable" (text JSON Schema never sees: duplicate keys, numbers
// that overflow to infinity).
mkdirSync(`${root}/refusals`, { recursive: true });
const refusals = [];
const refuse = (name, clause, code, mutate, extra = {}) => {
  const b = structuredClone(minimal);
  b.action.parameters = { amountMinor: 100, currency: "EUR" };
  mutate(b);
  refusals.push([name, { description: clause, refusal: code, ...extra, binding: b }]);
};
refuse("top-level-extra-key", "§3: the binding's key set is fixed; an extra top-level key is refused.", "BINDING_UNKNOWN_KEY", (b) => { b.approved = true; });
refuse("top-level-idempotency-key", "§3: the idempotency key rides inside context; a top-level idempotency_key is an unknown key.", "BINDING_UNKNOWN_KEY", (b) => { b.idempotency_key = "k2"; });
refuse("actor-extra-key", "§3: actor's key set is fixed.", "BINDING_UNKNOWN_KEY", (b) => { b.actor.role = "admin"; });
refuse("downstream-target-extra-key", "§3: downstream_target's key set is fixed.", "BINDING_UNKNOWN_KEY", (b) => { b.downstream_target.region = "eu"; });
refuse("action-carries-context", "§3: the action is type, resource and parameters and nothing else.", "BINDING_UNKNOWN_KEY", (b) => { b.action.context = { idempotency_key: "agent-chosen" }; });
refuse("action-carries-expected-effect-digest", "§3: an agent that could name its own expected effect could name the one it intends to cause.", "BINDING_UNKNOWN_KEY", (b) => { b.action.expected_effect_digest = "sha256:" + "a".repeat(64); });
refuse("context-without-idempotency-key", "§3: the producer's idempotency key is required inside context.", "BINDING_MISSING_KEY", (b) => { b.context = { source: "x" }; });
refuse("idempotency-key-empty", "§3 / schema: idempotency_key is 1..180 characters.", "BINDING_INVALID_VALUE", (b) => { b.context.idempotency_key = ""; });
refuse("missing-downstream-target", "§3: every top-level property but expected_effect_digest is required.", "BINDING_MISSING_KEY", (b) => { delete b.downstream_target; });
refuse("action-not-object", "§3: action is an object.", "BINDING_NOT_OBJECT", (b) => { b.action = "refund"; });
refuse("parameters-not-object", "§3: action.parameters is a JSON object.", "BINDING_NOT_OBJECT", (b) => { b.action.parameters = [1, 2]; });
refuse("protocol-version-2", "§9: a version this implementation does not implement is refused, not interpreted.", "PROTOCOL_VERSION_UNSUPPORTED", (b) => { b.protocol_version = "agent-safe.intent/2"; });
refuse("protocol-version-missing", "§3, §9: protocol_version is required.", "BINDING_MISSING_KEY", (b) => { delete b.protocol_version; }, { subject: "binding" });
refuse("tenant-id-not-uuid", "§3 / schema: tenant_id is a UUID.", "BINDING_INVALID_VALUE", (b) => { b.tenant_id = "tenant-7"; });
refuse("captured-at-with-offset", "§3 / schema: captured_at is a UTC instant ending in Z.", "BINDING_INVALID_VALUE", (b) => { b.captured_at = "2026-10-01T08:30:00+02:00"; });
refuse("expires-at-not-a-date", "§3 / schema: February 30th is no date.", "BINDING_INVALID_VALUE", (b) => { b.expires_at = "2026-02-30T08:30:00Z"; });
refuse("captured-at-non-ascii-digits", "§3 / schema: date-time digits are ASCII (Arabic-Indic digits are refused).", "BINDING_INVALID_VALUE", (b) => { b.captured_at = "\u0662026-10-01T08:30:00Z"; });
refuse("action-type-upper-case", "§3 / schema: action.type is ^[a-z][a-z0-9._:-]*$.", "BINDING_INVALID_VALUE", (b) => { b.action.type = "Refund"; });
refuse("action-type-unicode-digit", "§3 / schema: pattern digits are ASCII only (an Arabic-Indic digit is refused).", "BINDING_INVALID_VALUE", (b) => { b.action.type = "refund\u0663"; });
refuse("expected-effect-digest-upper-hex", "§3 / schema: expected_effect_digest is sha256: and 64 lowercase hex digits.", "BINDING_INVALID_VALUE", (b) => { b.expected_effect_digest = "sha256:" + "A".repeat(64); });
refuse("actor-id-too-long", "§3 / schema: actor.id is at most 200 characters.", "BINDING_INVALID_VALUE", (b) => { b.actor.id = "x".repeat(201); });
refuse("proto-key-in-parameters", "§3: a key named __proto__ is refused before anything is hashed.", "UNSAFE_INTENT_KEY", (b) => { Object.defineProperty(b.action.parameters, "__proto__", { value: { admin: true }, enumerable: true }); });
refuse("constructor-key-in-context", "§3: a key named constructor is refused at any depth.", "UNSAFE_INTENT_KEY", (b) => { b.context.nested = [{ constructor: 1 }]; });
refuse("prototype-key-in-parameters", "§3: a key named prototype is refused.", "UNSAFE_INTENT_KEY", (b) => { b.action.parameters.prototype = {}; });
refuse("depth-21", "§3: nesting depth 20 at most; a value at depth 21 is refused, never truncated.", "INTENT_TOO_DEEP", (b) => {
  let v = "deepest";
  for (let i = 0; i < 18; i++) v = [v]; // parameters at depth 2, .x at 3, innermost at 21
  b.action.parameters.x = v;
});
refuse("array-1001", "§3: at most 1,000 elements in one array.", "INTENT_ARRAY_TOO_LARGE", (b) => { b.action.parameters.items = Array.from({ length: 1001 }, () => 0); });
refuse("entries-5001", "§3: at most 5,000 entries (array elements and object properties, over the whole binding).", "INTENT_TOO_COMPLEX", (b) => {
  b.action.parameters.batches = Array.from({ length: 5 }, () => Array.from({ length: 1000 }, () => 0));
}, { schema: "not-expressible" });
const compact = (v) => {
  const { binding, ...head } = v;
  const lines = Object.entries(head).map(([k, x]) => `  ${JSON.stringify(k)}: ${JSON.stringify(x)}`);
  return `{\n${lines.join(",\n")},\n  "binding": ${JSON.stringify(binding)}\n}\n`;
};
for (const [name, v] of refusals) write(`refusals/${name}.json`, compact(v));
// 100 KiB of canonical bytes from 25 KiB of text: -1e20 prints as
// -100000000000000000000 (§4.4), within the array and entry bounds.
const big = structuredClone(minimal);
big.action.parameters = { amounts: "@AMOUNTS@" };
const amounts = Array.from({ length: 5 }, () => "[" + Array(960).fill("-1e20").join(",") + "]").join(",");
write(`refusals/canonical-over-100-kib.json`, JSON.stringify({
  description: "§3: at most 100 KiB (102,400 bytes) of canonical form; 4,800 numbers written -1e20 canonicalize to 22 bytes each.",
  refusal: "INTENT_TOO_LARGE",
  schema: "not-expressible",
  binding_text: JSON.stringify(big).replace('"@AMOUNTS@"', "[" + amounts + "]"),
}, null, 2) + "\n");

const textRefusals = [
  ["duplicate-key", "§3 (fail closed): a key twice in one object is refused; JSON.parse would silently keep the last.", "JSON_DUPLICATE_KEY",
    JSON.stringify(minimal).replace('"parameters":{}', '"parameters":{"amountMinor":100,"amountMinor":100000}')],
  ["number-overflows-to-infinity", "§3: numbers must be finite; 1e400 is Infinity to JSON.parse.", "INVALID_NUMBER",
    JSON.stringify(minimal).replace('"parameters":{}', '"parameters":{"amountMinor":1e400}')],
];
for (const [name, description, code, text] of textRefusals) {
  write(`refusals/${name}.json`, JSON.stringify({ description, refusal: code, schema: "not-applicable", binding_text: text }, null, 2) + "\n");
}
const proposals = [
  ["proposal-carries-context", { context: { idempotency_key: "agent-chosen" } }],
  ["proposal-carries-actor", { actor: { id: "admin", type: "HUMAN" } }],
  ["proposal-carries-expiry", { expires_at: "2099-01-01T00:00:00Z" }],
  ["proposal-carries-expected-effect-digest", { expected_effect_digest: "sha256:" + "b".repeat(64) }],
  ["proposal-carries-idempotency-key", { idempotency_key: "agent-chosen" }],
];
for (const [name, extra] of proposals) {
  const key = Object.keys(extra)[0];
  write(`refusals/${name}.json`, JSON.stringify({
    description: `§3: the agent's proposal is type, resource and parameters and nothing else; a proposal carrying ${key} is refused by the producer.`,
    refusal: "PROPOSAL_FORBIDDEN_KEY",
    schema: "not-applicable",
    proposal: { type: "refund_order", resource: "shop:order:1", parameters: { amountMinor: 100 }, ...extra },
  }, null, 2) + "\n");
}

// ---- §8 framework refusals: {refusal, framework, record, tool_binding, trusted_context}
// Each starts from one framework vector above and changes one thing; the
// expected code is written here by hand.
const frameworkRefusals = [
  ["openai-record-carries-tenant-id", "openai", "§3, §8: the tenant is the trusted runtime's; a record naming one is refused, not ignored.", "FRAMEWORK_RECORD_FORBIDDEN_KEY", (v) => { v.record.tenant_id = "00000000-0000-4000-8000-0000000000ff"; }],
  ["openai-record-names-its-target", "openai", "§3, §8: the target is derived from the arguments by the operator's template; a target the model chose is refused.", "FRAMEWORK_RECORD_FORBIDDEN_KEY", (v) => { v.record.target = "ledger:account:ACC-1:EUR"; }],
  ["vercel-record-carries-context", "vercel", "§3, §8: context (and the idempotency key inside it) is the producer's.", "FRAMEWORK_RECORD_FORBIDDEN_KEY", (v) => { v.record.context = { idempotency_key: "agent-chosen" }; }],
  ["vercel-record-carries-idempotency-key", "vercel", "§3: the idempotency key is the producer's, never the agent's.", "FRAMEWORK_RECORD_FORBIDDEN_KEY", (v) => { v.record.idempotencyKey = "agent-chosen"; }],
  ["langchain-record-carries-expiry", "langchain", "§3: an expiry is the producer's.", "FRAMEWORK_RECORD_FORBIDDEN_KEY", (v) => { v.record.expires_at = "2099-01-01T00:00:00Z"; }],
  ["langchain-argument-names-an-actor", "langchain", "§3, §8: an undeclared argument naming a binding property (here the actor) is refused as such.", "FRAMEWORK_RECORD_FORBIDDEN_KEY", (v) => { v.record.args.actor = { id: "admin", type: "HUMAN" }; }],
  ["openai-arguments-not-json", "openai", "§8: the arguments are the JSON text of an object; a truncated text is refused, never completed.", "FRAMEWORK_RECORD_INVALID", (v) => { v.record.arguments = '{"accountId":"ACC-7","amountMinor":'; }],
  ["openai-arguments-duplicate-key", "openai", "§3 (fail closed), §8: a key twice in the arguments text is refused; JSON.parse would keep the last.", "FRAMEWORK_RECORD_INVALID", (v) => { v.record.arguments = '{"accountId":"ACC-7","amountMinor":1,"amountMinor":120000,"currency":"EUR"}'; }],
  ["openai-arguments-not-an-object", "openai", "§8: the arguments decode to an object.", "FRAMEWORK_RECORD_INVALID", (v) => { v.record.arguments = '["ACC-7"]'; }],
  ["openai-call-in-progress", "openai", "§8: only a completed function_call is bound; an in-progress item's arguments may still be streaming.", "FRAMEWORK_RECORD_INVALID", (v) => { v.record.status = "in_progress"; }],
  ["openai-record-without-call-id", "openai", "§8: the call_id is the correlation the output echoes; a function_call item always has one.", "FRAMEWORK_RECORD_INVALID", (v) => { delete v.record.call_id; }],
  ["vercel-input-is-text", "vercel", "§8: a tool-call part's input is an object, not its JSON text.", "FRAMEWORK_RECORD_INVALID", (v) => { v.record.input = JSON.stringify(v.record.input); }],
  ["vercel-provider-executed", "vercel", "§8: a call the provider already ran is not an intent to bind.", "FRAMEWORK_RECORD_INVALID", (v) => { v.record.providerExecuted = true; }],
  ["vercel-unknown-member", "vercel", "§8: a member the tool-call part does not name is refused, not dropped.", "FRAMEWORK_RECORD_INVALID", (v) => { v.record.invalid = true; }],
  ["langchain-record-without-name", "langchain", "§8: the tool's name is the action's identity.", "FRAMEWORK_RECORD_INVALID", (v) => { delete v.record.name; }],
  ["openai-given-a-vercel-part", "openai", "§8: a record of another framework is refused as such.", "FRAMEWORK_MISMATCH", (v) => { v.record = structuredClone(frameworkCases.vercel.record); }],
  ["langchain-given-an-openai-item", "langchain", "§8: a record of another framework is refused as such.", "FRAMEWORK_MISMATCH", (v) => { v.record = structuredClone(frameworkCases.openai.record); }],
  ["vercel-given-an-mcp-request", "vercel", "§8: a record of another framework is refused as such.", "FRAMEWORK_MISMATCH", (v) => { v.record = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "rotate_credential", arguments: v.record.input } }; }],
  ["vercel-undeclared-argument", "vercel", "§8: an argument the tool binding does not declare is refused, never dropped.", "FRAMEWORK_ARGUMENTS_INVALID", (v) => { v.record.input.force = true; }],
  ["langchain-another-tool", "langchain", "§8: the record calls the tool the binding declares, or is refused.", "FRAMEWORK_TOOL_MISMATCH", (v) => { v.record.name = "delete_incident"; }],
  ["openai-target-unresolved", "openai", "§8: a target placeholder with no argument is refused, never left empty.", "FRAMEWORK_TARGET_UNRESOLVED", (v) => { v.record.arguments = '{"amountMinor":120000,"currency":"EUR"}'; }],
  ["vercel-context-sets-tool-call-id", "vercel", "§8: the adapter sets context.tool_call_id from the record; the trusted context may not preempt it.", "CONTEXT_RESERVED_KEY", (v) => { v.trusted_context.context.tool_call_id = "call_other"; }],
  ["langchain-context-names-an-mcp-server", "langchain", "§8: a trusted-context member the adapter would not use (an MCP server) is refused, not ignored.", "CAPTURE_CONTEXT_INVALID", (v) => { v.trusted_context.server = "synthetic-helpdesk"; }],
  ["unknown-framework", "crewai", "§8: a framework with no adapter is refused by name.", "FRAMEWORK_UNKNOWN", () => {}],
];
for (const [name, framework, description, code, mutate] of frameworkRefusals) {
  const base = frameworkCases[framework] ?? frameworkCases.langchain;
  const v = structuredClone({ record: base.record, tool_binding: base.tool_binding, trusted_context: base.trusted_context });
  mutate(v);
  write(
    `refusals/framework-${name}.json`,
    JSON.stringify({ description, refusal: code, schema: "not-applicable", framework, ...v }, null, 2) + "\n",
  );
}

console.log(`wrote ${Object.keys(cases).length + 4} vectors and ${suite.length} differential cases`);
