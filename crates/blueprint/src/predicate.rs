//! Evaluation-assertion predicates: a small bounded expression tree
//! `{op, path?, value?, args?}` over an output port's instance.
//! Ops: `and`, `or`, `not` (over `args`), `exists` (over `path`), and the
//! comparisons `eq`, `ne`, `lt`, `le`, `gt`, `ge` (over `path` and `value`).

use crate::error::{fail, Code, Result};
use crate::json::Value;

/// Most nodes one predicate may hold.
pub const MAX_NODES: usize = 64;

/// A compiled predicate.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// True when every argument is.
    And(Vec<Predicate>),
    /// True when any argument is.
    Or(Vec<Predicate>),
    /// True when its argument is not.
    Not(Box<Predicate>),
    /// True when the path resolves in the instance.
    Exists(Vec<String>),
    /// A comparison of the value at a path with a constant; false when the path
    /// does not resolve.
    Compare {
        /// One of `eq`, `ne`, `lt`, `le`, `gt`, `ge`.
        op: &'static str,
        /// The member names from the instance's root to the compared value.
        path: Vec<String>,
        /// The constant it is compared with.
        value: Value,
    },
}

const COMPARE: &[&str] = &["eq", "ne", "lt", "le", "gt", "ge"];

impl Predicate {
    /// Compiles `v`; paths must resolve through `schema` (`properties`) when given.
    pub fn compile(v: &Value, schema: Option<&Value>, path: &str) -> Result<Predicate> {
        let mut nodes = 0;
        compile_in(v, schema, path, &mut nodes)
    }

    /// Evaluates against an instance.
    pub fn eval(&self, instance: &Value) -> bool {
        match self {
            Predicate::And(a) => a.iter().all(|p| p.eval(instance)),
            Predicate::Or(a) => a.iter().any(|p| p.eval(instance)),
            Predicate::Not(p) => !p.eval(instance),
            Predicate::Exists(path) => lookup(instance, path).is_some(),
            Predicate::Compare { op, path, value } => {
                let Some(x) = lookup(instance, path) else {
                    return false;
                };
                match *op {
                    "eq" => x.same(value),
                    "ne" => !x.same(value),
                    _ => match (x, value) {
                        (Value::Number(a), Value::Number(b)) => {
                            let (a, b) = (a.as_f64(), b.as_f64());
                            match *op {
                                "lt" => a < b,
                                "le" => a <= b,
                                "gt" => a > b,
                                _ => a >= b,
                            }
                        }
                        _ => false,
                    },
                }
            }
        }
    }
}

fn lookup<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, seg| match cur {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

fn parse_path(v: &Value, schema: Option<&Value>, at: &str) -> Result<Vec<String>> {
    let Some(p) = v.get("path").and_then(Value::as_str) else {
        return fail(Code::PredicatePathUnresolved, at, "expected a JSON pointer in `path`");
    };
    if !(p.is_empty() || p.starts_with('/')) {
        return fail(Code::PredicatePathUnresolved, at, format!("{p:?} is not a JSON pointer"));
    }
    let segs: Vec<String> = p.split('/').skip(1).map(|s| s.replace("~1", "/").replace("~0", "~")).collect();
    let mut cur = schema;
    for s in &segs {
        if let Some(sc) = cur {
            if let Some(props) = sc.get("properties").and_then(Value::as_object) {
                if let Some(next) = props.get(s) {
                    cur = Some(next);
                } else {
                    let open = !matches!(sc.get("additionalProperties"), Some(Value::Bool(false)));
                    if !open {
                        return fail(
                            Code::PredicatePathUnresolved,
                            at,
                            format!("{p:?}: {s:?} is not a property of the port schema"),
                        );
                    }
                    cur = None;
                }
            } else if matches!(sc.get("additionalProperties"), Some(Value::Bool(false))) {
                return fail(Code::PredicatePathUnresolved, at, format!("{p:?}: the port schema admits no properties"));
            } else {
                cur = None;
            }
        }
    }
    Ok(segs)
}

fn compile_in(v: &Value, schema: Option<&Value>, at: &str, nodes: &mut usize) -> Result<Predicate> {
    *nodes += 1;
    if *nodes > MAX_NODES {
        return fail(Code::PredicateNodesExceeded, at, format!("more than {MAX_NODES} predicate nodes"));
    }
    let Some(op) = v.get("op").and_then(Value::as_str) else {
        return fail(Code::PredicateOpUnknown, at, "expected an object with a string `op`");
    };
    let args = |nodes: &mut usize| -> Result<Vec<Predicate>> {
        let Some(list) = v.get("args").and_then(Value::as_array).filter(|a| !a.is_empty()) else {
            return fail(Code::InvalidConstraint, at, format!("`{op}` needs a non-empty `args` array"));
        };
        list.iter().enumerate().map(|(i, x)| compile_in(x, schema, &format!("{at}/args/{i}"), nodes)).collect()
    };
    Ok(match op {
        "and" => Predicate::And(args(nodes)?),
        "or" => Predicate::Or(args(nodes)?),
        "not" => {
            let mut a = args(nodes)?;
            if a.len() != 1 {
                return fail(Code::InvalidConstraint, at, "`not` takes exactly one argument");
            }
            Predicate::Not(Box::new(a.remove(0)))
        }
        "exists" => Predicate::Exists(parse_path(v, schema, at)?),
        op => {
            let Some(op) = COMPARE.iter().find(|c| **c == op) else {
                return fail(Code::PredicateOpUnknown, at, format!("{op:?} is not a predicate operator"));
            };
            let Some(value) = v.get("value") else {
                return fail(Code::InvalidConstraint, at, format!("`{op}` needs a `value`"));
            };
            Predicate::Compare { op, path: parse_path(v, schema, at)?, value: value.clone() }
        }
    })
}
