//! Portability scanning (spec §14): portable artifacts never carry secrets,
//! private keys, live grants, tenant identifiers, raw endpoints, database
//! primary keys or backend engine identifiers. Member-name and value-shape
//! denylists, at any depth, over name-spelling-normalized member names.
//!
//! Honest limit: the guard is necessary, not sufficient. Extension payloads
//! are skipped here (typed as unscanned in the evidence); registered ones are
//! schema-validated by the extension gate instead.

use crate::error::{fail, Code, Result};
use crate::json::{escape_pointer, Value};

/// Normalized member names that may never appear in a portable artifact.
const DENIED_NAMES: &[&str] = &[
    "tenant",
    "tenantid",
    "tenantname",
    "orgid",
    "organizationid",
    "accountid",
    "customerid",
    "secret",
    "secrets",
    "clientsecret",
    "password",
    "passwd",
    "passphrase",
    "privatekey",
    "secretkey",
    "signingkey",
    "apikey",
    "apitoken",
    "accesstoken",
    "refreshtoken",
    "bearertoken",
    "authtoken",
    "sessiontoken",
    "credential",
    "credentials",
    "grant",
    "grants",
    "livegrant",
    "grantid",
    "endpoint",
    "endpointurl",
    "url",
    "baseurl",
    "webhookurl",
    "hostname",
    "connectionstring",
    "dsn",
    "databaseurl",
    "primarykey",
    "rowid",
    "dbid",
    "databaseid",
    "recordid",
    "engine",
    "engineid",
    "backendengine",
    "backendid",
    "modelname",
    "modelid",
    "provider",
    "providername",
];

/// Lowercases and drops separators (`Tenant-ID` and `tenant_id` are one name).
pub fn normalize_name(name: &str) -> String {
    name.chars().filter(|c| !matches!(c, '_' | '-' | '.' | ' ' | '$')).flat_map(char::to_lowercase).collect()
}

/// Why a string value is refused, if it is.
pub fn denied_value(s: &str) -> Option<&'static str> {
    if s.contains("-----BEGIN") || s.contains("PRIVATE KEY-----") {
        return Some("PEM block (key material)");
    }
    if s.contains("://") {
        return Some("raw endpoint (URI with a network authority)");
    }
    let hex = s.len() >= 32 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if hex {
        return Some("long lowercase hex string (key material or backend identifier)");
    }
    let parts: Vec<&str> = s.split('.').collect();
    if s.starts_with("eyJ") && parts.len() == 3 && parts.iter().all(|p| !p.is_empty()) {
        return Some("JWT (live credential)");
    }
    for prefix in ["sk-", "sk_live_", "ghp_", "xoxb-", "xoxp-", "AKIA"] {
        if s.starts_with(prefix) && s.len() >= prefix.len() + 16 {
            return Some("API key shape");
        }
    }
    None
}

/// Scans `v` (skipping `skip` top-level members) with `code` as the refusal.
pub fn scan(v: &Value, path: &str, skip: &[&str], code: Code) -> Result<()> {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter() {
                if skip.contains(&k.as_str()) {
                    continue;
                }
                let p = format!("{path}/{}", escape_pointer(k));
                if DENIED_NAMES.contains(&normalize_name(k).as_str()) {
                    return fail(code, p, "member name is on the portability denylist");
                }
                // `$schema`/`$id` legitimately hold dialect URIs.
                if matches!(k.as_str(), "$schema" | "$id") && matches!(x, Value::String(_)) {
                    continue;
                }
                scan(x, &p, &[], code)?;
            }
            Ok(())
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                scan(x, &format!("{path}/{i}"), &[], code)?;
            }
            Ok(())
        }
        Value::String(s) => match denied_value(s) {
            Some(why) => fail(code, path, why),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Scans a whole artifact: every member except the extension payloads
/// (quarantined or schema-governed) is covered.
pub fn scan_artifact(v: &Value) -> Result<()> {
    scan(v, "", &["extensions"], Code::ForbiddenPortableValue)
}
