//! The operator's tool bindings (`--tools BINDINGS.json`): for each tool
//! the upstream server publishes, the Agent-Safe action it becomes (§8 MCP
//! adapter: action, downstream system and operation, target template, the
//! arguments it accepts) and the JCP resource its frames name. A tool with
//! no binding is refused, never guessed.
//!
//! ```json
//! {"tools": [{"tool": "echo", "action": "echo", "system": "everything",
//!             "operation": "echo", "target": "everything:echo",
//!             "arguments": ["message"], "consequential": ["message"],
//!             "resource": "text:everything"}]}
//! ```
//!
//! `resource` is optional: `text:<system>` when absent (a grant for the
//! server's tools names that resource and the actions it allows).

use std::collections::BTreeMap;

use intent::mcp::McpToolBinding;
use jcp::cbor::ContentId;
use serde::Deserialize;

use crate::GatewayError;

/// The most bindings one file may hold.
pub const MAX_BINDINGS: usize = 4096;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    tools: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    tool: String,
    action: String,
    system: String,
    operation: String,
    #[serde(default)]
    environment: Option<String>,
    target: String,
    #[serde(default)]
    consequential: Vec<String>,
    #[serde(default)]
    arguments: Vec<String>,
    #[serde(default)]
    resource: Option<String>,
}

/// One tool's binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolBinding {
    /// What the MCP adapter binds the call with.
    pub mcp: McpToolBinding,
    /// The resource the call's frame names, as written (`text:NAME` or a content id).
    pub resource_text: String,
    /// Its content id.
    pub resource: ContentId,
}

/// Every tool's binding, by tool name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bindings {
    tools: BTreeMap<String, ToolBinding>,
}

impl Bindings {
    /// Reads a bindings file's bytes. Refused with where and why: not JSON,
    /// an unknown or missing field, an empty name, a tool bound twice, an
    /// argument named twice, a consequential argument the tool does not
    /// accept, a resource that is neither `text:NAME` nor a content id.
    pub fn from_json(bytes: &[u8]) -> Result<Self, GatewayError> {
        let de = &mut serde_json::Deserializer::from_slice(bytes);
        let file: File = serde_path_to_error::deserialize(de).map_err(|e| GatewayError::BindingsInvalid {
            at: if e.path().to_string() == "." { "$".into() } else { format!("$.{}", e.path()) },
            why: e.inner().to_string(),
        })?;
        if file.tools.len() > MAX_BINDINGS {
            return Err(invalid("$.tools", format!("{} bindings, more than {MAX_BINDINGS}", file.tools.len())));
        }
        let mut tools = BTreeMap::new();
        for (i, e) in file.tools.into_iter().enumerate() {
            let at = |field: &str| format!("$.tools[{i}].{field}");
            for (field, v) in [
                ("tool", &e.tool),
                ("action", &e.action),
                ("system", &e.system),
                ("operation", &e.operation),
                ("target", &e.target),
            ] {
                if v.is_empty() {
                    return Err(invalid(&at(field), "empty"));
                }
            }
            let mut seen = std::collections::BTreeSet::new();
            for a in &e.arguments {
                if !seen.insert(a.as_str()) {
                    return Err(invalid(&at("arguments"), format!("{a:?} named twice")));
                }
            }
            if let Some(c) = e.consequential.iter().find(|c| !seen.contains(c.as_str())) {
                return Err(invalid(&at("consequential"), format!("{c:?} is not among the tool's arguments")));
            }
            let resource_text = e.resource.clone().unwrap_or_else(|| format!("text:{}", e.system));
            let resource = jcp::grant::resource_from_text(&resource_text)
                .map_err(|err| invalid(&at("resource"), err.to_string()))?;
            let b = ToolBinding {
                mcp: McpToolBinding {
                    tool: e.tool.clone(),
                    action: e.action,
                    system: e.system,
                    operation: e.operation,
                    environment: e.environment,
                    target: e.target,
                    consequential: e.consequential,
                    arguments: e.arguments,
                },
                resource_text,
                resource,
            };
            if tools.insert(e.tool.clone(), b).is_some() {
                return Err(invalid(&at("tool"), format!("{:?} is bound twice", e.tool)));
            }
        }
        Ok(Self { tools })
    }

    /// The binding of `tool`, if the operator wrote one.
    pub fn get(&self, tool: &str) -> Option<&ToolBinding> {
        self.tools.get(tool)
    }

    /// How many tools are bound.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

fn invalid(at: &str, why: impl Into<String>) -> GatewayError {
    GatewayError::BindingsInvalid { at: at.into(), why: why.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asi_s8_a_binding_file_is_read_and_each_refusal_names_where() {
        let ok = br#"{"tools":[{"tool":"echo","action":"echo","system":"everything","operation":"echo","target":"everything:echo","arguments":["message"],"consequential":["message"]}]}"#;
        let b = Bindings::from_json(ok).unwrap();
        let e = b.get("echo").unwrap();
        assert_eq!(e.resource_text, "text:everything");
        assert_eq!(e.resource, jcp::grant::resource_from_text("text:everything").unwrap());
        assert!(b.get("get-env").is_none());
        for (bytes, at) in [
            (&br#"{"tools":[{"tool":"echo"}]}"#[..], "$.tools[0]"),
            (br#"{"tools":[],"extra":1}"#, "$"),
            (br#"{"tools":[{"tool":"","action":"a","system":"s","operation":"o","target":"t"}]}"#, "$.tools[0].tool"),
            (
                br#"{"tools":[{"tool":"t","action":"a","system":"s","operation":"o","target":"t","arguments":["x"],"consequential":["y"]}]}"#,
                "$.tools[0].consequential",
            ),
            (
                br#"{"tools":[{"tool":"t","action":"a","system":"s","operation":"o","target":"t","resource":"nope"}]}"#,
                "$.tools[0].resource",
            ),
            (
                br#"{"tools":[{"tool":"t","action":"a","system":"s","operation":"o","target":"t"},{"tool":"t","action":"b","system":"s","operation":"o","target":"t"}]}"#,
                "$.tools[1].tool",
            ),
            (b"not json", "$"),
        ] {
            match Bindings::from_json(bytes) {
                Err(GatewayError::BindingsInvalid { at: got, .. }) => assert!(got.starts_with(at), "{got} for {at}"),
                other => panic!("{other:?}"),
            }
        }
    }
}
