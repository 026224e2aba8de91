//! Generates the project's own conformance corpus under
//! `conformance/blueprint/` (case files + `index.json` with per-file hashes
//! and the corpus digest). Expected verdicts and codes are written here by
//! hand; only fixture digests/signatures are computed (they are inputs).
//!
//! Run: `cargo run -p blueprint --example gen_corpus -- conformance/blueprint`
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, clippy::too_many_lines)]

use std::collections::BTreeMap;

use blueprint::artifact::{self, Kind};
use blueprint::json::{Map, Value};
use blueprint::{b64, canon, corpus, federation, signature};
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{json, Value as J};

fn v(j: &J) -> Value {
    Value::from_serde(j).expect("value")
}

fn text(val: &Value) -> String {
    canon::canonical_string(val).expect("canonical")
}

fn base_blueprint() -> J {
    json!({
        "blueprint_id": "example.console/summarize",
        "capability_requirements": [{
            "approval_trait": "none", "argument_schema": {"type": "object"}, "authority_trait": "local_policy",
            "classification_ceiling": "internal", "impact_class": "ordinary", "operation_family": "example.console.fetch",
            "operation_kind": "read", "result_schema": {"type": "object"}
        }],
        "ceilings": {"max_attempts": 2, "max_concurrency": 1, "max_cost": {"amount": 50, "currency": "EUR"}, "max_depth": 4,
                     "max_descendants": 8, "max_elapsed_ms": 30000, "max_fan_out": 2, "max_tokens": 20000},
        "classification_ceiling": "internal",
        "content_digest": "sha-256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "effect_intents": [],
        "evaluation_assertions": [{"kind": "predicate", "port": "summary", "predicate": {"op": "exists", "path": "/text"}}],
        "extensions": {"critical": {}, "optional": {}},
        "input_ports": [{"classification_ceiling": "internal", "name": "document", "required": true, "schema": {"type": "object"}}],
        "output_contract": {"classification_ceiling": "internal", "port": "summary"},
        "output_ports": [{"classification_ceiling": "internal", "name": "summary", "required": true,
                          "schema": {"properties": {"text": {"type": "string"}}, "type": "object"}}],
        "producer": {"created_at": "2026-11-01T00:00:00Z", "identity": "example.console", "toolchain": "jcp.console"},
        "protocol_revision": 1,
        "release_number": 3,
        "required_core_fields": ["ceilings"],
        "triggers": ["manual"]
    })
}

fn base_deployment() -> J {
    json!({
        "authority_requirement": {"adapter_identity": "example.adapters.authority", "profile_identity": "example.profiles.read-only"},
        "blueprint_release": {"blueprint_id": "example.console/summarize", "content_digest": "sha-256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "release_number": 3},
        "build_identities": [{"digest": "sha-256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "kind": "package", "name": "jcp_console", "version": "0.1.0"}],
        "data_bindings": [],
        "deployment_digest": "sha-256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "effect_owner": {"adapter_identity": "example.adapters.effects", "idempotency": {"key_derivation": "host", "recovery": "best_effort"}},
        "eligibility": {
            "beneficiary": {"band": "operator", "kind": "beneficiary_band", "policy": "example.policies/bands"},
            "owner": {"band": "operator", "kind": "owner_band", "policy": "example.policies/bands"},
            "runtime_principal": {"band": "operator", "kind": "runtime_band", "policy": "example.policies/bands"}
        },
        "evaluation_binding": {"adapter_identity": "example.adapters.evaluations", "corpus": {"digest": "sha-256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "name": "example.corpora/summaries"}},
        "extensions": {"critical": {}, "optional": {}},
        "host_bounds": {"approval_trait": "none", "authority_trait": "local_policy", "classification_ceiling": "internal", "disclosure_ceiling": "summary",
                        "effect_impact_ceiling": "ordinary", "max_attempts": 2, "max_concurrency": 1, "max_cost": {"amount": 40, "currency": "EUR"},
                        "max_depth": 4, "max_descendants": 8, "max_elapsed_ms": 30000, "max_fan_out": 2, "max_tokens": 20000},
        "lifecycle": {"activated_at": "2026-11-01T00:00:00Z", "state": "active"},
        "model_policy": {"allowed_model_roles": ["summarizer"], "max_cost": {"amount": 10, "currency": "EUR"}, "max_tokens": 10000},
        "protocol_revision": 1,
        "required_core_fields": [],
        "scope_projection": {"adapter_identity": "example.adapters.scope"},
        "signer_custody": "host_managed",
        "tool_bindings": [{"adapter_identity": "example.adapters.tools", "attested_at": "2026-11-01T00:00:00Z",
                           "descriptor_digest": "sha-256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "logical_operation": "example.console.fetch",
                           "schema_digest": "sha-256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]
    })
}

/// Edits, re-digests and returns canonical text.
fn artifact_text(kind: Kind, base: J, edit: impl FnOnce(&mut serde_json::Map<String, J>)) -> String {
    let mut j = base;
    edit(j.as_object_mut().expect("obj"));
    let mut val = v(&j);
    if let Value::Object(m) = &mut val {
        let d = artifact::compute_digest(kind, m).expect("digest");
        m.insert(kind.digest_member(), Value::str(d.to_string()));
    }
    text(&val)
}

fn bp(edit: impl FnOnce(&mut serde_json::Map<String, J>)) -> String {
    artifact_text(Kind::Blueprint, base_blueprint(), edit)
}

fn digest_of(kind: Kind, t: &str) -> String {
    artifact::decode(kind, t.as_bytes(), &blueprint::limits::Limits::default())
        .expect("valid fixture")
        .digest
        .to_string()
}

fn dep_for(bp_text: &str, edit: impl FnOnce(&mut serde_json::Map<String, J>)) -> String {
    let d = digest_of(Kind::Blueprint, bp_text);
    artifact_text(Kind::Deployment, base_deployment(), |m| {
        m["blueprint_release"]["content_digest"] = J::String(d);
        edit(m);
    })
}

fn signed(kind: Kind, t: &str, sk: &SigningKey, kid: &str, purpose: &str, tamper: bool) -> String {
    let mut val = blueprint::json::decode(t.as_bytes(), &blueprint::limits::Limits::default()).expect("json");
    let digest = artifact::compute_digest(kind, val.as_object().expect("o")).expect("d");
    let attrs = v(
        &json!({"algorithm": "Ed25519", "content_digest": digest.to_string(), "created_at": "2026-11-01T00:00:00Z", "key_id": kid, "purpose": purpose}),
    );
    let prot = v(&json!({"alg": "EdDSA", "b64": false, "crit": ["b64"], "kid": kid}));
    let mut input = b64::encode(&canon::canonical_bytes(&prot).expect("c")).into_bytes();
    input.push(b'.');
    input.extend(signature::signing_payload(&attrs).expect("p"));
    let mut sig = sk.sign(&input).to_bytes();
    if tamper {
        sig[5] ^= 1;
    }
    let entry = Value::Object(Map::from_pairs(vec![
        ("protected".into(), prot),
        ("signature".into(), Value::str(b64::encode(&sig))),
        ("signed_attributes".into(), attrs),
    ]));
    if let Value::Object(m) = &mut val {
        m.insert("signatures", Value::Array(vec![entry]));
    }
    text(&val)
}

fn without(j: &J, k: &str) -> J {
    let mut x = j.clone();
    x.as_object_mut().expect("obj").remove(k);
    x
}

fn with_env(j: &J, k: &str, val: J) -> J {
    let mut x = j.clone();
    x[k] = val;
    x
}

struct Files {
    files: BTreeMap<String, Vec<J>>,
}

impl Files {
    fn add(&mut self, surface: &str, class: &str, id: &str, input: J, expected: J) {
        let file = format!("cases/{}.json", surface.replace('.', "-"));
        self.files
            .entry(file)
            .or_default()
            .push(json!({"class": class, "id": id, "input": input, "expected": expected, "surface": surface}));
    }
    fn ok(&mut self, surface: &str, id: &str, input: J, expected: J) {
        let mut e = expected;
        e["verdict"] = J::from("valid");
        self.add(surface, "valid", id, input, e);
    }
    fn no(&mut self, surface: &str, code: &str, id: &str, input: J) {
        let class = code.replace(':', "_");
        self.add(surface, &class, id, input, json!({"verdict": "invalid", "code": code}));
    }
}

fn main() {
    let out_dir = std::env::args().nth(1).unwrap_or_else(|| "conformance/blueprint".into());
    let mut f = Files { files: BTreeMap::new() };
    let sk = SigningKey::from_bytes(&[0x42; 32]);
    let pk = b64::encode(&sk.verifying_key().to_bytes());

    // ---- json.decode -------------------------------------------------------
    let s = "json.decode";
    f.ok(
        s,
        "own-json-valid",
        json!({"text": "{\"a\":[1,2.5,\"x\",null,true]}"}),
        json!({"value": {"a": [1, 2.5, "x", null, true]}}),
    );
    f.ok(s, "own-json-whitespace", json!({"text": " [ 1 , 2 ] \n"}), json!({"value": [1, 2]}));
    f.no(s, "ceiling:bytes", "own-json-bytes", json!({"bounds": {"bytes": 4}, "text": "[1,2]"}));
    f.no(s, "ceiling:depth", "own-json-depth", json!({"bounds": {"depth": 2}, "text": "[[[1]]]"}));
    f.no(s, "ceiling:items", "own-json-items", json!({"bounds": {"items": 2}, "text": "[1,2,3]"}));
    f.no(s, "ceiling:members", "own-json-members", json!({"bounds": {"members": 1}, "text": "{\"a\":1,\"b\":2}"}));
    f.no(s, "ceiling:nodes", "own-json-nodes", json!({"bounds": {"nodes": 2}, "text": "[1,2]"}));
    f.no(s, "ceiling:string", "own-json-string", json!({"bounds": {"string": 2}, "text": "\"abc\""}));
    f.no(s, "ceiling:key", "own-json-key", json!({"bounds": {"key": 2}, "text": "{\"abc\":1}"}));
    f.no(s, "ceiling:number_lexeme", "own-json-lexeme", json!({"bounds": {"number_lexeme": 3}, "text": "1234"}));
    f.no(s, "duplicate_member", "own-json-duplicate", json!({"text": "{\"a\":1,\"b\":{\"c\":1,\"c\":1}}"}));
    f.no(s, "trailing_bytes", "own-json-trailing", json!({"text": "[1] [2]"}));
    f.no(s, "invalid_syntax", "own-json-syntax", json!({"text": "[1,]"}));
    f.no(s, "invalid_encoding", "own-json-encoding", json!({"base64url": "Iv8i"}));
    f.no(s, "invalid_encoding", "own-json-lone-surrogate", json!({"text": "\"\\udc00\""}));
    f.no(s, "invalid_number", "own-json-number", json!({"text": "[01]"}));
    f.no(s, "number_not_double_expressible", "own-json-window", json!({"text": "[9007199254740993]"}));
    f.no(s, "invalid_type", "own-json-non-binary", json!({"non_binary": 5}));

    // ---- base64url.decode ---------------------------------------------------
    let s = "base64url.decode";
    f.ok(s, "own-b64-valid", json!({"base64url": "AQID"}), json!({"decoded": "AQID", "bytes": 3}));
    f.no(s, "base64url_padded", "own-b64-padded", json!({"base64url": "AQ=="}));
    f.no(s, "base64url_invalid", "own-b64-alphabet", json!({"base64url": "AQ+/"}));
    f.no(s, "base64url_invalid", "own-b64-trailing-bits", json!({"base64url": "AR"}));

    // ---- bounds.new -----------------------------------------------------------
    let s = "bounds.new";
    f.ok(s, "own-bounds-valid", json!({"bounds": {"items": 5, "string": 10}}), json!({"bounds": {"bytes": 5_000_000, "depth": 64, "items": 5, "key": 1000, "members": 1000, "nodes": 200_000, "number_lexeme": 64, "string": 10}}));
    f.no(s, "unknown_bound", "own-bounds-unknown", json!({"bounds": {"width": 1}}));
    f.no(s, "invalid_type", "own-bounds-type", json!({"bounds": {"depth": "8"}}));
    f.no(s, "invalid_constraint", "own-bounds-floor", json!({"bounds": {"depth": 0}}));
    f.no(s, "ceiling:members", "own-bounds-raise", json!({"bounds": {"members": 1001}}));

    // ---- canonicalization.encode ------------------------------------------------
    let s = "canonicalization.encode";
    f.ok(
        s,
        "own-canon-numbers",
        json!({"text": "[1.0,1.0e22,-0.0,5.0e-324,1e21,0.000001,1e-7]"}),
        json!({"encoded": "[1,1e+22,0,5e-324,1e+21,0.000001,1e-7]"}),
    );
    f.ok(
        s,
        "own-canon-escapes",
        json!({"text": "\"\\u0041\\u001f\\/\\u2028\""}),
        json!({"encoded": "\"A\\u001f/\u{2028}\""}),
    );
    f.ok(
        s,
        "own-canon-utf16-order",
        json!({"text": "{\"\u{ff3a}\":1,\"\u{10000}\":2,\"\u{e9}\":3}"}),
        json!({"encoded": "{\"\u{e9}\":3,\"\u{10000}\":2,\"\u{ff3a}\":1}"}),
    );
    f.no(s, "invalid_encoding", "own-canon-lone-surrogate", json!({"text": "[\"\\ud800\"]"}));
    f.no(s, "ceiling:bytes", "own-canon-bytes", json!({"bounds": {"bytes": 2}, "text": "[1]"}));

    // ---- digest.tagged -----------------------------------------------------------
    let s = "digest.tagged";
    let dd = blueprint::digest::Tagged::compute(blueprint::digest::Domain::DeploymentContent, b"console").to_string();
    f.ok(
        s,
        "own-digest-verify",
        json!({"declared": dd, "domain": "deployment_content", "text": "console"}),
        json!({"tagged": dd}),
    );
    f.no(
        s,
        "digest_mismatch",
        "own-digest-domain-separated",
        json!({"declared": dd, "domain": "blueprint_content", "text": "console"}),
    );
    f.no(s, "digest_algorithm_unsupported", "own-digest-alg", json!({"tagged": "sha-512:AAAA"}));
    f.no(
        s,
        "digest_encoding_invalid",
        "own-digest-hex",
        json!({"tagged": "sha-256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}),
    );

    // ---- blueprint.decode ----------------------------------------------------------
    let s = "blueprint.decode";
    let good = bp(|_| {});
    f.ok(s, "own-bp-valid", json!({"text": good}), json!({"digest": (digest_of(Kind::Blueprint, &good))}));
    f.no(s, "non_canonical_bytes", "own-bp-non-canonical", json!({"text": format!(" {good}")}));
    f.no(s, "unknown_member", "own-bp-unknown", json!({"text": bp(|m| { m.insert("zz".into(), json!(1)); })}));
    f.no(s, "missing_required_field", "own-bp-missing", json!({"text": bp(|m| { m.remove("triggers"); })}));
    f.no(s, "invalid_type", "own-bp-type", json!({"text": bp(|m| { m["release_number"] = json!("3"); })}));
    f.no(s, "invalid_constraint", "own-bp-constraint", json!({"text": bp(|m| { m["triggers"] = json!(["cron"]); })}));
    f.no(s, "invalid_cardinality", "own-bp-cardinality", json!({"text": bp(|m| { m["triggers"] = json!([]); })}));
    f.no(
        s,
        "digest_mismatch",
        "own-bp-digest",
        json!({"text": (bp(|_| {}).replace("\"release_number\":3", "\"release_number\":4"))}),
    );
    f.no(
        s,
        "forbidden_portable_value",
        "own-bp-endpoint",
        json!({"text": bp(|m| { m["producer"]["toolchain"] = json!("https://build.internal/ci"); })}),
    );
    f.no(s, "forbidden_portable_value", "own-bp-tenant", json!({"text": bp(|m| { m["input_ports"][0]["schema"] = json!({"properties": {"tenant_id": {"type": "string"}}, "type": "object"}); })}));
    f.no(
        s,
        "extension_namespace_invalid",
        "own-bp-namespace",
        json!({"text": bp(|m| { m["extensions"]["optional"] = json!({"Example/X": {}}); })}),
    );
    f.no(
        s,
        "schema_keyword_not_allowed",
        "own-bp-schema-keyword",
        json!({"text": bp(|m| { m["input_ports"][0]["schema"] = json!({"pattern": "a*", "type": "string"}); })}),
    );
    // `$schema` is not one of the dialect's 16 keywords: the dialect is the surface's argument.
    f.no(s, "schema_keyword_not_allowed", "own-bp-schema-dialect", json!({"text": bp(|m| { m["input_ports"][0]["schema"] = json!({"$schema": "http://json-schema.org/draft-04/schema#"}); })}));
    f.no(
        s,
        "schema_keyword_value_invalid",
        "own-bp-schema-value",
        json!({"text": bp(|m| { m["input_ports"][0]["schema"] = json!({"minItems": -1}); })}),
    );
    f.no(
        s,
        "schema_ref_unresolvable",
        "own-bp-schema-ref",
        json!({"text": bp(|m| { m["input_ports"][0]["schema"] = json!({"$ref": "#/$defs/other"}); })}),
    );
    f.no(s, "schema_ref_cycle", "own-bp-schema-cycle", json!({"text": bp(|m| { m["input_ports"][0]["schema"] = json!({"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}); })}));
    f.no(
        s,
        "schema_keyword_value_invalid",
        "own-bp-schema-shape",
        json!({"text": bp(|m| { m["input_ports"][0]["schema"] = json!({"items": 7}); })}),
    );
    f.no(
        s,
        "schema_complexity_exceeded",
        "own-bp-schema-complexity",
        json!({"text": bp(|m| {
            let props: serde_json::Map<String, J> = (0..600).map(|i| (format!("p{i}"), json!(true))).collect();
            m["input_ports"][0]["schema"] = json!({"properties": props});
        })}),
    );
    f.no(s, "predicate_op_unknown", "own-bp-predicate-op", json!({"text": bp(|m| { m["evaluation_assertions"][0]["predicate"] = json!({"op": "regex", "path": "/text", "value": "x"}); })}));
    f.no(s, "predicate_path_unresolved", "own-bp-predicate-path", json!({"text": bp(|m| {
        m["output_ports"][0]["schema"] = json!({"additionalProperties": false, "properties": {"text": {"type": "string"}}, "type": "object"});
        m["evaluation_assertions"][0]["predicate"] = json!({"op": "exists", "path": "/title"});
    })}));
    f.no(
        s,
        "predicate_nodes_exceeded",
        "own-bp-predicate-nodes",
        json!({"text": bp(|m| {
            let args: Vec<J> = (0..70).map(|_| json!({"op": "exists", "path": "/text"})).collect();
            m["evaluation_assertions"][0]["predicate"] = json!({"op": "or", "args": args});
        })}),
    );

    // ---- deployment.decode (+ binding) ----------------------------------------------
    let s = "deployment.decode";
    let dgood = dep_for(&good, |_| {});
    let dgood_digest = digest_of(Kind::Deployment, &dgood);
    f.ok(s, "own-dep-valid", json!({"text": dgood}), json!({"digest": dgood_digest}));
    f.ok(s, "own-dep-binds", json!({"text": dgood, "binding": {"blueprint": good, "now": "2026-11-01T00:00:05Z", "max_attestation_age_ms": 10000}}), json!({"digest": dgood_digest}));
    f.no(
        s,
        "compatibility_identity_inexact",
        "own-dep-range",
        json!({"text": dep_for(&good, |m| { m["build_identities"][0]["version"] = json!("^0.1"); })}),
    );
    f.no(
        s,
        "compatibility_duplicate_entry",
        "own-dep-duplicate-identity",
        json!({"text": dep_for(&good, |m| {
            let one = m["build_identities"][0].clone();
            m["build_identities"] = json!([one.clone(), one]);
        })}),
    );
    f.no(
        s,
        "unknown_member",
        "own-dep-unknown",
        json!({"text": dep_for(&good, |m| { m["host_bounds"]["max_widgets"] = json!(1); })}),
    );
    f.no(
        s,
        "forbidden_portable_value",
        "own-dep-password",
        json!({"text": dep_for(&good, |m| { m["scope_projection"]["Pass-Word"] = json!("x"); })}),
    );
    let other = bp(|m| {
        m["release_number"] = json!(4);
    });
    f.no(
        s,
        "deployment_digest_mismatch",
        "own-dep-binds-other",
        json!({"text": dgood, "binding": {"blueprint": other}}),
    );
    f.no(s, "lifecycle_state_invalid", "own-dep-retired", json!({"text": dep_for(&good, |m| { m["lifecycle"]["state"] = json!("retired"); }), "binding": {"blueprint": good}}));
    let needs_two = bp(|m| {
        m["effect_intents"] = json!([{"impact_class": "ordinary", "logical_operation": "example.console.publish", "operation_kind": "mutation"}]);
    });
    f.no(
        s,
        "binding_incomplete",
        "own-dep-incomplete",
        json!({"text": dep_for(&needs_two, |_| {}), "binding": {"blueprint": needs_two}}),
    );
    let with_publish = |recovery: &str| {
        dep_for(&needs_two, |m| {
            let mut b2 = m["tool_bindings"][0].clone();
            b2["logical_operation"] = json!("example.console.publish");
            m["tool_bindings"] = json!([m["tool_bindings"][0].clone(), b2]);
            m["effect_owner"]["idempotency"]["recovery"] = json!(recovery);
        })
    };
    f.no(
        s,
        "no_authoritative_recovery",
        "own-dep-recovery",
        json!({"text": with_publish("best_effort"), "binding": {"blueprint": needs_two}}),
    );
    f.ok(
        s,
        "own-dep-authoritative",
        json!({"text": with_publish("authoritative"), "binding": {"blueprint": needs_two}}),
        json!({"digest": (digest_of(Kind::Deployment, &with_publish("authoritative")))}),
    );
    f.no(s, "binding_attestation_stale", "own-dep-stale", json!({"text": dgood, "binding": {"blueprint": good, "now": "2026-12-01T00:00:00Z", "max_attestation_age_ms": 86_400_000}}));
    f.no(s, "binding_descriptor_mismatch", "own-dep-rug-pull", json!({"text": dgood, "binding": {"blueprint": good, "descriptors": {"example.console.fetch": "sha-256:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"}}}));

    // The reference's form: {text: <deployment>, observed: {identities}}.
    let s = "compatibility.verify";
    let ident = |v: &str| json!({"digest": "sha-256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "kind": "package", "name": "jcp_console", "version": v});
    let observed = |ids: J| json!({"text": dgood, "observed": {"identities": ids}});
    f.ok(
        s,
        "own-compat-exact",
        observed(json!([ident("0.1.0"), {"digest": "sha-256:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", "kind": "image", "name": "unrelated", "version": "2.0.0"}])),
        json!({"verified": true, "identities": 1}),
    );
    f.no(s, "compatibility_entry_missing", "own-compat-other-version", observed(json!([ident("0.1.1")])));
    f.no(s, "compatibility_identity_inexact", "own-compat-range-observed", observed(json!([ident("0.1.*")])));
    f.no(
        s,
        "compatibility_duplicate_entry",
        "own-compat-observed-twice",
        observed(json!([ident("0.1.0"), ident("0.1.0")])),
    );
    f.no(s, "invalid_type", "own-compat-no-identities", json!({"text": dgood, "observed": {}}));
    f.no(
        s,
        "invalid_type",
        "own-compat-malformed-identity",
        observed(json!([{"kind": "package", "name": "jcp_console", "version": "0.1.0"}])),
    );

    // ---- negotiation.negotiate / extension.resolve --------------------------------------
    let fed_schema: J = serde_json::from_str(blueprint::registry::FEDERATION_SCHEMA).expect("schema");
    let support = json!({"revisions": [1], "core_fields": ["ceilings", "blueprint_id"], "schemas": {"com.example/federation": fed_schema}});
    let art = |ext: J, rev: i64, req: J| json!({"content_digest": "sha-256:x", "extensions": ext, "protocol_revision": rev, "required_core_fields": req});
    let none = json!({"critical": {}, "optional": {}});
    let s = "negotiation.negotiate";
    f.ok(
        s,
        "own-neg-valid",
        json!({"artifact": art(none.clone(), 1, json!(["ceilings"])), "support": support}),
        json!({"revision": 1, "required_core_fields": ["ceilings"]}),
    );
    f.no(
        s,
        "protocol_revision_unsupported",
        "own-neg-revision",
        json!({"artifact": art(none.clone(), 3, json!([])), "support": {"revisions": [1, 2]}}),
    );
    f.no(
        s,
        "required_core_field_unsupported",
        "own-neg-required-unknown",
        json!({"artifact": art(none.clone(), 1, json!(["nonexistent"])), "support": support}),
    );
    f.no(
        s,
        "required_core_field_unsupported",
        "own-neg-required-unhonored",
        json!({"artifact": art(none.clone(), 1, json!(["triggers"])), "support": support}),
    );
    f.no(
        s,
        "required_core_field_not_digest_covered",
        "own-neg-required-uncovered",
        json!({"artifact": art(none.clone(), 1, json!(["attestations"])), "support": support}),
    );
    f.no(s, "extension_unknown_critical", "own-neg-unknown-critical", json!({"artifact": art(json!({"critical": {"org.other/thing": {}}, "optional": {}}), 1, json!([])), "support": support}));
    let s = "extension.resolve";
    f.ok(s, "own-ext-critical-and-quarantine", json!({"artifact": art(json!({"critical": {"com.example/federation": {"audience": "a"}}, "optional": {"org.other/note": {"text": "kept"}}}), 1, json!([])), "support": support}), json!({"critical": ["com.example/federation"], "quarantined": ["org.other/note"]}));
    f.ok(s, "own-ext-registered-optional", json!({"artifact": art(json!({"critical": {}, "optional": {"com.example.platform/estate": {"zone": "eu"}}}), 1, json!([])), "support": {"revisions": [1]}}), json!({"optional": ["com.example.platform/estate"]}));
    f.no(s, "extension_criticality_conflict", "own-ext-demoted", json!({"artifact": art(json!({"critical": {}, "optional": {"com.example/federation": {}}}), 1, json!([])), "support": support}));
    f.no(s, "extension_retired", "own-ext-retired", json!({"artifact": art(json!({"critical": {"org.old/gone": {}}, "optional": {}}), 1, json!([])), "support": {"revisions": [1], "registry": {"org.old/gone": {"criticality": "critical", "state": "retired"}}}}));
    f.no(s, "extension_schema_unavailable", "own-ext-no-schema", json!({"artifact": art(json!({"critical": {"com.example/federation": {}}, "optional": {}}), 1, json!([])), "support": {"revisions": [1]}}));
    f.no(s, "extension_schema_digest_mismatch", "own-ext-swapped-schema", json!({"artifact": art(json!({"critical": {"com.example/federation": {}}, "optional": {}}), 1, json!([])), "support": {"revisions": [1], "schemas": {"com.example/federation": {"type": "object"}}}}));
    f.no(s, "extension_payload_forbidden", "own-ext-laundered-bound", json!({"artifact": art(json!({"critical": {}, "optional": {"org.other/x": {"nested": {"max_tokens": 1}}}}), 1, json!([])), "support": support}));
    f.no(s, "extension_duplicate", "own-ext-both-sides", json!({"artifact": art(json!({"critical": {"org.dep/x": {}}, "optional": {"org.dep/x": {}}}), 1, json!([])), "support": {"revisions": [1], "registry": {"org.dep/x": {"criticality": "optional", "state": "retired"}}}}));
    f.no(s, "invalid_type", "own-ext-body-type", json!({"artifact": art(json!({"critical": {"com.example/federation": {"issuer": 7}}, "optional": {}}), 1, json!([])), "support": support}));
    // The current release (docs/decisions.md, "Agent Blueprint Protocol: the
    // release this project implements"): the deprecated `…/estate` stays
    // supported with its notice, and `…/estate-contract` is critical with
    // the digest-pinned schema this host ships.
    f.add(s, "extension_deprecated_retained", "own-ext-deprecated-retained", json!({"artifact": art(json!({"critical": {}, "optional": {"com.example.platform/estate": {"zone": "eu"}}}), 1, json!([])), "support": {"revisions": [1]}}), json!({"verdict": "valid", "optional": ["com.example.platform/estate"], "quarantined": [], "notices": ["extension_deprecated"]}));
    f.add(s, "extension_deprecated_retained", "own-ext-deprecated-retained-under-host-registry", json!({"artifact": art(json!({"critical": {}, "optional": {"com.example.platform/estate": {"zone": "eu"}}}), 1, json!([])), "support": support}), json!({"verdict": "valid", "optional": ["com.example.platform/estate"], "quarantined": [], "notices": ["extension_deprecated"]}));
    f.ok(s, "own-ext-reserved-retained", json!({"artifact": art(json!({"critical": {}, "optional": {"org.next/idea": {}}}), 1, json!([])), "support": {"revisions": [1], "registry": {"org.next/idea": {"criticality": "optional", "state": "reserved"}}}}), json!({"retained": ["org.next/idea"], "quarantined": [], "notices": ["extension_unknown_optional_retained"]}));
    let estate_schema: J =
        serde_json::from_str(blueprint::registry::ESTATE_CONTRACT_SCHEMA).expect("estate-contract schema");
    let def = json!({"name": "daily_position_summary", "version": 7});
    let leaf = json!({"definition": def, "op": "materialization_present"});
    let stale = json!({"definition": def, "max_age_days": 7, "op": "materialization_stale"});
    let contract = |cond: J| json!({"asset_materialization_window": {"definition": def, "window_days": null}, "objective_condition": cond});
    let good_cond = json!({"args": [leaf, stale], "op": "and"});
    let fed_schema: J = serde_json::from_str(blueprint::registry::FEDERATION_SCHEMA).expect("federation schema");
    let both = json!({"revisions": [1], "schemas": {"com.example.platform/estate-contract": estate_schema, "com.example/federation": fed_schema}});
    let with_contract = |body: J| {
        art(
            json!({"critical": {"com.example.platform/estate-contract": body, "com.example/federation": {"issuer": "org-a"}}, "optional": {}}),
            1,
            json!([]),
        )
    };
    let s = "negotiation.negotiate";
    f.ok(s, "own-neg-estate-contract-valid", json!({"artifact": with_contract(contract(good_cond.clone())), "support": both}), json!({"critical": ["com.example.platform/estate-contract", "com.example/federation"], "revision": 1, "notices": []}));
    f.no(
        s,
        "extension_schema_unavailable",
        "own-neg-estate-contract-schema-absent",
        json!({"artifact": with_contract(contract(good_cond.clone())), "support": {"revisions": [1], "schemas": {}}}),
    );
    f.no(s, "extension_schema_digest_mismatch", "own-neg-estate-contract-digest-mismatch", json!({"artifact": with_contract(contract(good_cond.clone())), "support": {"revisions": [1], "schemas": {"com.example.platform/estate-contract": {"type": "object"}, "com.example/federation": fed_schema}}}));
    f.no(s, "extension_criticality_conflict", "own-neg-estate-contract-declared-optional", json!({"artifact": art(json!({"critical": {"com.example/federation": {"issuer": "org-a"}}, "optional": {"com.example.platform/estate-contract": contract(good_cond.clone())}}), 1, json!([])), "support": both}));
    // Four composite tiers: past the three the schema allows, no oneOf branch matches.
    let tier4 = (0..4).fold(good_cond.clone(), |inner, _| json!({"args": [inner], "op": "and"}));
    f.no(
        s,
        "invalid_cardinality",
        "own-neg-estate-contract-tier-bound",
        json!({"artifact": with_contract(contract(tier4)), "support": both}),
    );
    f.no(
        s,
        "invalid_cardinality",
        "own-neg-estate-contract-missing-window",
        json!({"artifact": with_contract(json!({"objective_condition": good_cond})), "support": both}),
    );

    // ---- bounds_algebra.intersect ---------------------------------------------------------
    let s = "bounds_algebra.intersect";
    let b = json!({"approval_trait": "none", "authority_trait": "none", "classification_ceiling": {"markers": ["phi"], "ordinal": "confidential"},
        "disclosure_ceiling": "detail", "effect_impact_ceiling": "ordinary", "max_attempts": 5, "max_concurrency": 5, "max_cost": {"amount": 5, "currency": "EUR"},
        "max_depth": 5, "max_descendants": 5, "max_elapsed_ms": 5, "max_fan_out": 5, "max_tokens": 5});
    let with = |k: &str, val: J| {
        let mut x = b.clone();
        x[k] = val;
        x
    };
    f.ok(
        s,
        "own-bounds-clamp-one",
        json!({"blueprint": b, "deployment": with("max_tokens", json!(2)), "host": b}),
        json!({"clamp_count": 1}),
    );
    f.ok(s, "own-bounds-acknowledged", json!({"blueprint": b, "deployment": b, "host": with("disclosure_ceiling", json!("summary")), "acknowledge": ["disclosure_ceiling"]}), json!({"clamp_count": 1}));
    f.no(s, "protected_bound_clamp_denied", "own-bounds-marker-dropped-is-widening", json!({"blueprint": with("classification_ceiling", json!({"markers": [], "ordinal": "confidential"})), "deployment": b, "host": b}));
    f.no(
        s,
        "missing_ceiling",
        "own-bounds-missing",
        json!({"blueprint": b, "deployment": b, "host": (without(&b, "max_fan_out"))}),
    );
    f.no(s, "bound_source_missing", "own-bounds-no-host", json!({"blueprint": b, "deployment": b}));
    f.no(
        s,
        "bound_unit_mismatch",
        "own-bounds-currency",
        json!({"blueprint": b, "deployment": with("max_cost", json!({"amount": 5, "currency": "USD"})), "host": b}),
    );
    f.no(
        s,
        "bound_value_invalid",
        "own-bounds-negative",
        json!({"blueprint": b, "deployment": with("max_depth", json!(-1)), "host": b}),
    );
    f.no(
        s,
        "bound_unknown",
        "own-bounds-ack-operational",
        json!({"blueprint": b, "deployment": b, "host": b, "acknowledge": ["max_depth"]}),
    );
    f.no(
        s,
        "invalid_type",
        "own-bounds-not-a-record",
        json!({"blueprint": b, "deployment": b, "host": with("max_widgets", json!(1))}),
    );

    // ---- federation.decode / federation.commitment ------------------------------------------
    let env = json!({"audience": "aud-1", "authority_proof_references": [], "blueprint_digest": dd, "compatibility_reference": [{"identity": "0.1.0", "name": "jcp"}],
        "deployment_digest": dd, "evidence_receipt": {"checkpoint_history_commitment": dd, "result_digest": dd,
        "signature": {"protected": {"alg": "EdDSA", "b64": false, "crit": ["b64"], "kid": "peer"}, "signature": "AAAA",
                      "signed_attributes": {"algorithm": "Ed25519", "content_digest": dd, "created_at": "2026-11-01T00:00:00Z", "key_id": "peer", "purpose": "federation-envelope"}},
        "terminal_commitment": dd}, "idempotency_identity": "idem-1", "identity_mapping_evidence": {"claims": []}, "input_commitment": dd,
        "issuer": "iss-1", "recovery_handle": "task-1", "resource_policy": {"attempts": 1, "concurrency": 1, "cost": 1, "tokens": 1},
        "result_classification_ceiling": {"level": "internal", "markers": []}, "result_schema": dd, "subject": "sub-1", "task_identity": "task-1",
        "terminal_state": "completed", "time_policy": {"elapsed_ms": 1}});
    let env_t = text(&v(&env));
    let s = "federation.decode";
    f.ok(s, "own-fed-valid", json!({"text": env_t}), json!({"canonical": env_t}));
    f.ok(
        s,
        "own-fed-to-a2a",
        json!({"to_a2a_state": "input_required"}),
        json!({"a2a_state": "TASK_STATE_INPUT_REQUIRED"}),
    );
    f.ok(s, "own-fed-to-mcp", json!({"to_mcp_state": "working"}), json!({"mcp_state": "working"}));
    f.no(s, "federation_state_unmappable", "own-fed-rejected-to-mcp", json!({"to_mcp_state": "rejected"}));
    f.no(s, "federation_state_unmappable", "own-fed-submitted-to-mcp", json!({"to_mcp_state": "submitted"}));
    f.no(s, "invalid_type", "own-fed-unknown-a2a", json!({"from_a2a_state": "TASK_STATE_PAUSED"}));
    f.no(s, "missing_required_field", "own-fed-missing", json!({"text": (text(&v(&without(&env, "issuer"))))}));
    f.no(
        s,
        "forbidden_portable_value",
        "own-fed-endpoint",
        json!({"text": (text(&v(&with_env(&env, "recovery_handle", json!("https://peer.example/tasks/1")))))}),
    );
    // federation.verify_commitment, the reference's form:
    // {envelope: <text>, context: {keys: [{key_id, key}], issuer?, subject?,
    // audience?, prior_receipts?: [{task_identity, terminal_state, commitment}]}}
    let receipt = |mut e: J, purpose: &str| -> String {
        let val = v(&e);
        let commitment = federation::terminal_commitment(&val).expect("commitment");
        e["evidence_receipt"]["terminal_commitment"] = J::from(commitment.to_string());
        let covered = federation::covered_digest(&v(&e)).expect("covered");
        let attrs = json!({"algorithm": "Ed25519", "content_digest": covered.to_string(), "created_at": "2026-11-01T00:00:00Z", "key_id": "peer", "purpose": purpose});
        let prot = json!({"alg": "EdDSA", "b64": false, "crit": ["b64"], "kid": "peer"});
        let mut input = b64::encode(&canon::canonical_bytes(&v(&prot)).expect("c")).into_bytes();
        input.push(b'.');
        input.extend(signature::signing_payload(&v(&attrs)).expect("p"));
        let sig = sk.sign(&input).to_bytes();
        e["evidence_receipt"]["signature"] =
            json!({"protected": prot, "signature": b64::encode(&sig), "signed_attributes": attrs});
        text(&v(&e))
    };
    let good_env = receipt(env.clone(), "federation-envelope");
    let good_commitment = federation::terminal_commitment(&v(&env)).expect("c").to_string();
    let peer = json!([{"key_id": "peer", "key": pk}]);
    let s = "federation.verify_commitment";
    f.ok(
        s,
        "own-fedc-valid",
        json!({"envelope": good_env, "context": {"keys": peer, "issuer": "iss-1", "subject": "sub-1", "audience": "aud-1",
            "prior_receipts": [{"task_identity": "task-1", "terminal_state": "completed", "commitment": good_commitment}]}}),
        json!({"task_identity": "task-1", "terminal_commitment": good_commitment}),
    );
    f.no(
        s,
        "audience_mismatch",
        "own-fedc-audience",
        json!({"envelope": good_env, "context": {"keys": peer, "audience": "aud-2"}}),
    );
    f.no(
        s,
        "audience_mismatch",
        "own-fedc-issuer",
        json!({"envelope": good_env, "context": {"keys": peer, "issuer": "iss-2"}}),
    );
    f.no(
        s,
        "federation_terminal_conflict",
        "own-fedc-diverged",
        json!({"envelope": good_env, "context": {"keys": peer,
        "prior_receipts": [{"task_identity": "task-1", "terminal_state": "failed", "commitment": good_commitment}]}}),
    );
    f.add(
        s,
        "terminal_equivocation",
        "own-fedc-equivocation",
        json!({"envelope": good_env, "context": {"keys": peer,
        "prior_receipts": [{"task_identity": "task-1", "terminal_state": "completed", "commitment": dd}]}}),
        json!({"verdict": "invalid", "code": "federation_terminal_conflict"}),
    );
    let other_pk = b64::encode(&SigningKey::from_bytes(&[0x43; 32]).verifying_key().to_bytes());
    f.add(
        s,
        "signature_invalid",
        "own-fedc-wrong-key",
        json!({"envelope": good_env, "context": {"keys": [{"key_id": "peer", "key": other_pk}]}}),
        json!({"verdict": "invalid", "code": "signature_not_verified"}),
    );
    f.no(s, "signature_key_unsupported", "own-fedc-no-key", json!({"envelope": good_env, "context": {}}));
    f.no(
        s,
        "invalid_constraint",
        "own-fedc-lifted-purpose",
        json!({"envelope": (receipt(env.clone(), "deployment")), "context": {"keys": peer}}),
    );
    let edited = good_env.replace("\"idem-1\"", "\"idem-2\"");
    f.no(s, "digest_mismatch", "own-fedc-edited-after-signing", json!({"envelope": edited, "context": {"keys": peer}}));
    f.no(
        s,
        "invalid_type",
        "own-fedc-malformed-prior",
        json!({"envelope": good_env, "context": {"keys": peer, "prior_receipts": [{"task_identity": "task-1"}]}}),
    );

    // ---- portability.scan (the reference's form: {text}) ---------------------------------------
    let s = "portability.scan";
    f.ok(
        s,
        "own-port-clean",
        json!({"text": "{\"kind\":\"ordinary\",\"items\":[{\"label\":\"summary\"}]}"}),
        json!({"clean": true}),
    );
    f.no(
        s,
        "forbidden_portable_value",
        "own-port-api-key",
        json!({"text": "{\"api_key\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}"}),
    );
    f.add(
        s,
        "name_spelling",
        "own-port-deep-tenant-spelling",
        json!({"text": "{\"a\":[{\"b\":{\"Tenant-ID\":\"t-42\"}}]}"}),
        json!({"verdict": "invalid", "code": "forbidden_portable_value"}),
    );
    f.add(
        s,
        "value_shape",
        "own-port-pem-value",
        json!({"text": "{\"notes\":[\"-----BEGIN PRIVATE KEY-----\"]}"}),
        json!({"verdict": "invalid", "code": "forbidden_portable_value"}),
    );
    f.add(
        s,
        "raw_endpoint",
        "own-port-endpoint-value",
        json!({"text": "{\"next\":{\"at\":\"https://db.internal:5432/orders\"}}"}),
        json!({"verdict": "invalid", "code": "forbidden_portable_value"}),
    );
    f.no(s, "invalid_syntax", "own-port-not-json", json!({"text": "{\"kind\":"}));

    // ---- schema.validate_instance (the reference's form: {schema, instance, dialect?}) --------
    let s = "schema.validate_instance";
    let closed = json!({"additionalProperties": false, "properties": {"n": {"type": "integer", "minimum": 1}, "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}}}, "required": ["n"], "type": "object"});
    f.ok(s, "own-schema-valid", json!({"schema": closed, "instance": {"n": 3, "tags": ["a"]}}), json!({"valid": true}));
    f.ok(
        s,
        "own-schema-valid-dialect",
        json!({"schema": closed, "instance": {"n": 1}, "dialect": blueprint::schema::DIALECT}),
        json!({"valid": true}),
    );
    f.no(s, "invalid_type", "own-schema-instance-type", json!({"schema": closed, "instance": {"n": "3"}}));
    f.no(s, "invalid_constraint", "own-schema-instance-minimum", json!({"schema": closed, "instance": {"n": 0}}));
    f.no(
        s,
        "invalid_cardinality",
        "own-schema-instance-additional",
        json!({"schema": closed, "instance": {"n": 1, "x": 1}}),
    );
    f.no(
        s,
        "invalid_cardinality",
        "own-schema-instance-max-items",
        json!({"schema": closed, "instance": {"n": 1, "tags": ["a", "b", "c"]}}),
    );
    let many: serde_json::Map<String, J> = (1..=600).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect();
    f.add(
        s,
        "maximum_plus_one",
        "own-schema-complexity",
        json!({"schema": {"properties": many, "type": "object"}, "instance": {}}),
        json!({"verdict": "invalid", "code": "schema_complexity_exceeded"}),
    );
    f.no(
        s,
        "schema_keyword_not_allowed",
        "own-schema-pattern",
        json!({"schema": {"type": "string", "pattern": "^a"}, "instance": "a"}),
    );
    f.no(
        s,
        "schema_keyword_value_invalid",
        "own-schema-bad-minimum",
        json!({"schema": {"type": "integer", "minimum": "1"}, "instance": 1}),
    );
    f.no(
        s,
        "schema_dialect_unknown",
        "own-schema-dialect",
        json!({"schema": closed, "instance": {"n": 1}, "dialect": "http://json-schema.org/draft-07/schema#"}),
    );
    f.no(s, "schema_ref_unresolvable", "own-schema-ref", json!({"schema": {"$ref": "#/$defs/absent"}, "instance": 1}));
    f.no(s, "schema_ref_cycle", "own-schema-cycle", json!({"schema": {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "instance": 1}));
    f.no(s, "schema_invalid_shape", "own-schema-shape", json!({"schema": 5, "instance": {"n": 1}}));
    f.no(s, "schema_invalid_shape", "own-schema-not-an-object", json!({"schema": "object", "instance": {}}));
    f.no(s, "invalid_type", "own-schema-false", json!({"schema": false, "instance": {}}));
    // oneOf: exactly one branch, else invalid_cardinality (none, or two).
    let one_of = json!({"oneOf": [{"type": "integer"}, {"minimum": 10, "type": "number"}]});
    f.ok(s, "own-schema-one-of-one", json!({"schema": one_of, "instance": 3}), json!({"valid": true}));
    f.add(
        s,
        "invalid_cardinality",
        "own-schema-one-of-two",
        json!({"schema": one_of, "instance": 12}),
        json!({"verdict": "invalid", "code": "invalid_cardinality"}),
    );
    f.add(
        s,
        "invalid_cardinality",
        "own-schema-one-of-none",
        json!({"schema": one_of, "instance": "a"}),
        json!({"verdict": "invalid", "code": "invalid_cardinality"}),
    );
    // required: an absent member is a cardinality failure; the canonical keyword order decides the reason.
    f.add(
        s,
        "invalid_cardinality",
        "own-schema-required-absent",
        json!({"schema": {"required": ["n"], "type": "object"}, "instance": {}}),
        json!({"verdict": "invalid", "code": "invalid_cardinality"}),
    );
    f.add(
        s,
        "invalid_type",
        "own-schema-type-before-required",
        json!({"schema": {"required": ["n"], "type": "object"}, "instance": []}),
        json!({"verdict": "invalid", "code": "invalid_type"}),
    );

    // ---- signature.verify ------------------------------------------------------------------
    let s = "signature.verify";
    // The reference's form: {entry: <signature entry text>, keys: [{key_id, key}]}.
    let entry_of = |t: String| -> String {
        let a: J = serde_json::from_str(&t).expect("artifact");
        text(&v(&a["signatures"][0]))
    };
    let key_list = json!([{"key_id": "console-key", "key": pk}]);
    let entry = entry_of(signed(Kind::Blueprint, &good, &sk, "console-key", "blueprint", false));
    f.ok(s, "own-sig-entry-valid", json!({"entry": entry, "keys": key_list}), json!({"verified": true}));
    f.add(s, "signature_invalid", "own-sig-entry-tampered", json!({"entry": (entry_of(signed(Kind::Blueprint, &good, &sk, "console-key", "blueprint", true))), "keys": key_list}),
        json!({"verdict": "invalid", "code": "signature_not_verified"}));
    f.add(
        s,
        "invalid_constraint",
        "own-sig-entry-no-crit",
        json!({"entry": entry.replace(",\"crit\":[\"b64\"]", ""), "keys": key_list}),
        json!({"verdict": "invalid", "code": "signature_malformed"}),
    );
    let sig_at = entry.find("\"signature\":\"").expect("sig") + 13;
    let mut bad_b64 = entry.clone();
    bad_b64.replace_range(sig_at..sig_at + 3, "!!!");
    f.add(
        s,
        "invalid_encoding",
        "own-sig-entry-bad-base64url",
        json!({"entry": bad_b64, "keys": key_list}),
        json!({"verdict": "invalid", "code": "signature_malformed"}),
    );
    f.add(
        s,
        "unknown_kid",
        "own-sig-entry-unknown-kid",
        json!({"entry": entry, "keys": [{"key_id": "someone-else", "key": pk}]}),
        json!({"verdict": "invalid", "code": "signature_key_unsupported"}),
    );
    f.add(s, "small_order_key", "own-sig-entry-small-order-key", json!({"entry": entry, "keys": [{"key_id": "console-key", "key": "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}),
        json!({"verdict": "invalid", "code": "signature_key_unsupported"}));
    f.no(
        s,
        "signature_algorithm_unsupported",
        "own-sig-entry-alg",
        json!({"entry": entry.replace("\"alg\":\"EdDSA\"", "\"alg\":\"ES256\""), "keys": key_list}),
    );
    f.no(s, "invalid_type", "own-sig-entry-no-keys", json!({"entry": entry}));
    // This project's artifact form: {text: <artifact>, keys} verifies every
    // signature of an artifact against its own digest and purpose.
    let keys = json!({"console-key": pk});
    f.ok(
        s,
        "own-sig-valid",
        json!({"text": signed(Kind::Blueprint, &good, &sk, "console-key", "blueprint", false), "keys": keys}),
        json!({"verified": true, "checks": 1}),
    );
    f.no(
        s,
        "signature_not_verified",
        "own-sig-tampered",
        json!({"text": signed(Kind::Blueprint, &good, &sk, "console-key", "blueprint", true), "keys": keys}),
    );
    f.no(
        s,
        "signature_not_verified",
        "own-sig-lifted-purpose",
        json!({"text": signed(Kind::Blueprint, &good, &sk, "console-key", "deployment", false), "keys": keys}),
    );
    f.no(
        s,
        "signature_key_unsupported",
        "own-sig-unknown-kid",
        json!({"text": signed(Kind::Blueprint, &good, &sk, "other-key", "blueprint", false), "keys": keys}),
    );
    f.no(s, "signature_key_unsupported", "own-sig-small-order-key", json!({"text": signed(Kind::Blueprint, &good, &sk, "console-key", "blueprint", false), "keys": {"console-key": "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}));
    let malformed =
        signed(Kind::Blueprint, &good, &sk, "console-key", "blueprint", false).replace("\"b64\":false", "\"b64\":true");
    f.no(s, "signature_malformed", "own-sig-b64-true", json!({"text": malformed, "keys": keys}));
    let alg = signed(Kind::Blueprint, &good, &sk, "console-key", "blueprint", false)
        .replace("\"alg\":\"EdDSA\"", "\"alg\":\"ES256\"");
    f.no(s, "signature_algorithm_unsupported", "own-sig-alg", json!({"text": alg, "keys": keys}));
    let att = bp(|m| {
        m.insert("attestations".into(), json!([{"kind": "slsa-provenance", "protected": {"alg": "EdDSA", "b64": false, "crit": ["b64"], "kid": "console-key"},
        "signature": "AAAA", "signed_attributes": {"algorithm": "Ed25519", "content_digest": dd, "created_at": "2026-11-01T00:00:00Z", "key_id": "console-key", "purpose": "blueprint"},
        "statement_digest": dd}]));
    });
    f.no(s, "attestation_malformed", "own-sig-attestation-unregistered", json!({"text": att, "keys": keys}));

    // ---- reconcile.run -----------------------------------------------------------------------
    let s = "reconcile.run";
    let secret_bp = bp(|m| {
        m["extensions"]["critical"] = json!({"com.example/federation": {"issuer": "-----BEGIN PRIVATE KEY-----"}});
    });
    f.ok(s, "own-rec-valid", json!({"blueprint": good, "deployment": dgood}), json!({"clamp_count": 1}));
    f.no(
        s,
        "nonportable_content",
        "own-rec-extension-secret",
        json!({"blueprint": (secret_bp.clone()), "deployment": (dep_for(&secret_bp, |_| {}))}),
    );
    f.no(s, "protected_bound_clamp_denied", "own-rec-classification-narrowed", json!({"blueprint": good, "deployment": dgood,
        "host_bounds": {"approval_trait": "none", "authority_trait": "local_policy", "classification_ceiling": "public", "disclosure_ceiling": "summary",
        "effect_impact_ceiling": "ordinary", "max_attempts": 2, "max_concurrency": 1, "max_cost": {"amount": 40, "currency": "EUR"},
        "max_depth": 4, "max_descendants": 8, "max_elapsed_ms": 30000, "max_fan_out": 2, "max_tokens": 20000}}));
    f.no(s, "digest_mismatch", "own-rec-digest-before-structure", json!({"blueprint": good.replace("\"triggers\":[\"manual\"]", "\"triggers\":[\"manual\"],\"zz\":1"), "deployment": dgood}));
    f.no(
        s,
        "required_core_field_not_digest_covered",
        "own-rec-negotiation",
        json!({"blueprint": bp(|m| { m["required_core_fields"] = json!(["signatures"]); }), "deployment": dgood}),
    );

    // ---- corpus.load (a nested mini corpus) --------------------------------------------------
    let mini_case = serde_json::to_string(&json!({"format": "agent-blueprint-protocol-conformance-cases", "cases": [
        {"class": "valid", "id": "mini-1", "surface": "base64url.decode", "input": {"base64url": "AQID"}, "expected": {"verdict": "valid", "decoded": "AQID"}},
        {"class": "base64url_padded", "id": "mini-2", "surface": "base64url.decode", "input": {"base64url": "AQ=="}, "expected": {"verdict": "invalid", "code": "base64url_padded"}}]})).unwrap();
    let mini = |case_text: &str, extra: Option<(&str, &str)>, mutate: &dyn Fn(&mut Value)| -> J {
        let files = vec![("m.json".to_string(), case_text.as_bytes().to_vec())];
        let mut app = BTreeMap::new();
        app.insert("base64url.decode".to_string(), vec!["base64url_padded".to_string(), "valid".to_string()]);
        let mut idx = corpus::build_index(&files, &app).expect("index");
        mutate(&mut idx);
        let mut m = serde_json::Map::new();
        m.insert("index.json".into(), J::String(text(&idx)));
        m.insert("m.json".into(), J::String(case_text.to_string()));
        if let Some((k, t)) = extra {
            m.insert(k.into(), J::String(t.into()));
        }
        json!({"files": m})
    };
    let s = "corpus.load";
    let floor = json!(["base64url.decode"]);
    let with_floor = |mut j: J| {
        j["surfaces"] = floor.clone();
        j
    };
    f.ok(s, "own-corpus-mini-valid", with_floor(mini(&mini_case, None, &|_| {})), json!({"cases": 2}));
    f.no(s, "corpus_applicability_incomplete", "own-corpus-mini-below-full-floor", mini(&mini_case, None, &|_| {}));
    f.no(
        s,
        "corpus_applicability_incomplete",
        "own-corpus-mini-cell-without-case",
        with_floor(mini(&mini_case, None, &|idx| {
            if let Value::Object(m) = idx {
                m.insert(
                    "applicability",
                    blueprint::json::decode(
                        br#"{"base64url.decode":["base64url_invalid","valid"]}"#,
                        &blueprint::limits::Limits::default(),
                    )
                    .unwrap(),
                );
                let d = corpus::corpus_digest(&Value::Object(m.clone())).unwrap();
                m.insert("corpus_digest", Value::str(d.to_string()));
            }
        })),
    );
    f.no(s, "corpus_file_set_mismatch", "own-corpus-extra-file", mini(&mini_case, Some(("stray.json", "{}")), &|_| {}));
    f.no(
        s,
        "corpus_hash_mismatch",
        "own-corpus-tampered-index",
        mini(&mini_case, None, &|idx| {
            if let Value::Object(m) = idx {
                m.insert("case_count", Value::from_u64(7));
            }
        }),
    );
    f.no(s, "corpus_index_invalid", "own-corpus-no-index", json!({"files": {"m.json": mini_case}}));
    f.no(
        s,
        "corpus_case_invalid",
        "own-corpus-bad-case",
        mini("{\"format\":\"agent-blueprint-protocol-conformance-cases\",\"cases\":[{\"id\":\"x\"}]}", None, &|_| {}),
    );
    let dup_cases = serde_json::to_string(&json!({"format": "agent-blueprint-protocol-conformance-cases", "cases": [
        {"class": "valid", "id": "d", "surface": "base64url.decode", "input": {"base64url": "AQID"}, "expected": {"verdict": "valid"}},
        {"class": "valid", "id": "d", "surface": "base64url.decode", "input": {"base64url": "AQID"}, "expected": {"verdict": "valid"}}]})).unwrap();
    f.no(s, "corpus_case_id_duplicate", "own-corpus-dup-id", mini(&dup_cases, None, &|_| {}));
    f.no(
        s,
        "corpus_count_mismatch",
        "own-corpus-count",
        mini(&mini_case, None, &|idx| {
            if let Value::Object(m) = idx {
                if let Some(Value::Array(files)) = m.get("files").cloned() {
                    let mut f0 = files[0].as_object().cloned().unwrap();
                    f0.insert("cases", Value::from_u64(5));
                    m.insert("files", Value::Array(vec![Value::Object(f0)]));
                }
                let d = corpus::corpus_digest(&Value::Object(m.clone())).unwrap();
                m.insert("corpus_digest", Value::str(d.to_string()));
            }
        }),
    );
    f.no(s, "corpus_empty", "own-corpus-empty", {
        let mut idx = json!({"applicability": {}, "case_count": 0, "files": [], "format": corpus::FORMAT});
        let d = corpus::corpus_digest(&v(&idx)).unwrap();
        idx["corpus_digest"] = json!(d.to_string());
        json!({"files": {"index.json": text(&v(&idx))}})
    });
    // a valid nested corpus covering every surface is the outer corpus itself (see the loader test)

    // ---- write ----------------------------------------------------------------------------------
    std::fs::create_dir_all(format!("{out_dir}/cases")).expect("mkdir");
    let mut written: Vec<(String, Vec<u8>)> = Vec::new();
    let mut applicability: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, cases) in &f.files {
        for c in cases {
            let e = applicability.entry(c["surface"].as_str().unwrap().to_string()).or_default();
            let class = c["class"].as_str().unwrap().to_string();
            if !e.contains(&class) {
                e.push(class);
            }
        }
        let doc = json!({"cases": cases, "format": blueprint::conformance::FORMAT});
        let mut bytes = text(&v(&doc)).into_bytes();
        bytes.push(b'\n');
        std::fs::write(format!("{out_dir}/{path}"), &bytes).expect("write");
        written.push((path.clone(), bytes));
    }
    for row in applicability.values_mut() {
        row.sort();
    }
    let index = corpus::build_index(&written, &applicability).expect("index");
    let mut ib = text(&index).into_bytes();
    ib.push(b'\n');
    std::fs::write(format!("{out_dir}/index.json"), ib).expect("write index");
    let total: usize = f.files.values().map(Vec::len).sum();
    println!(
        "{} files, {total} cases, corpus {}",
        written.len(),
        index.get("corpus_digest").and_then(Value::as_str).unwrap_or_default()
    );
}
