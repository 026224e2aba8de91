// Node baseline for benches/canonical_hash.rs: the reference algorithm on
// its own platform (sort keys, re-insert, JSON.stringify, node:crypto
// sha256), timed the way the Rust side is timed in the same run.
//
//     node crates/intent/benches/node_baseline.mjs FILE ITERATIONS ROUNDS
//
// FILE is a vector ({binding}) or a binding. Prints one JSON line: the
// median nanoseconds per operation for a parsed value and for JSON text.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

const [file, iterArg, roundArg] = process.argv.slice(2);
const iterations = Number(iterArg ?? 20000);
const rounds = Number(roundArg ?? 7);
const doc = JSON.parse(readFileSync(file, "utf8"));
const binding = doc.binding ?? doc;
const text = JSON.stringify(binding);

function canonicalize(v) {
  if (Array.isArray(v)) return v.map(canonicalize);
  if (v === null || typeof v !== "object") return v;
  const out = {};
  for (const k of Object.keys(v).sort()) {
    const e = v[k];
    if (e !== undefined) out[k] = canonicalize(e);
  }
  return out;
}
const hashValue = (v) => "sha256:" + createHash("sha256").update(JSON.stringify(canonicalize(v)), "utf8").digest("hex");
const hashText = (t) => hashValue(JSON.parse(t));

function time(fn, arg) {
  let sink = 0;
  for (let i = 0; i < iterations; i++) sink += fn(arg).length; // warm-up (JIT)
  const samples = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) sink += fn(arg).length;
    samples.push(Number(process.hrtime.bigint() - t0) / iterations);
  }
  samples.sort((a, b) => a - b);
  if (sink === 0) throw new Error("unreachable");
  return samples[Math.floor(samples.length / 2)];
}

const expected = doc.intent_hash;
if (expected !== undefined && hashValue(binding) !== expected) throw new Error("baseline does not reproduce the vector");
console.log(JSON.stringify({ node: process.version, value_ns: time(hashValue, binding), text_ns: time(hashText, text), hash: hashValue(binding) }));
