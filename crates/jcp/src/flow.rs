//! Spec §4.10: what a value's provenance may exercise.
//!
//! A [`Label`] has three independently ordered components; the label order is
//! their product. JCP consumes a label, it does not compute one: the host
//! passes the argument's label with the request, or `None` when provenance was
//! not computed, which fails closed against any ceiling.

use std::collections::BTreeSet;

use crate::cbor::{self, Fields, SchemaError, Value};
use crate::error::Error;

/// Integrity: a principal-authored value is trusted; anything from a channel
/// the principal does not control is untrusted. `Trusted < Untrusted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Integrity {
    /// Principal-authored.
    Trusted,
    /// From an untrusted channel.
    Untrusted,
}

/// Where a value came from: a set of channel names (ordered by inclusion), or
/// ⊤ "anywhere".
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Origins {
    /// These channels (the empty set is ⊥: from no channel).
    Set(BTreeSet<String>),
    /// Any channel at all (⊤).
    Any,
}

/// Who may read a value: everyone (⊥), or a set of principals (ordered by
/// reverse inclusion: fewer readers is higher; the empty set is ⊤, nobody).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Readers {
    /// Readable by all (⊥).
    All,
    /// Readable only by these principals.
    Only(BTreeSet<String>),
}

/// A value's label (§4.10).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Label {
    /// Integrity component.
    pub integrity: Integrity,
    /// Origins component.
    pub origins: Origins,
    /// Readers component.
    pub readers: Readers,
}

impl Label {
    /// ⊥: principal-authored, from no channel, readable by all.
    pub fn bottom() -> Self {
        Self { integrity: Integrity::Trusted, origins: Origins::Set(BTreeSet::new()), readers: Readers::All }
    }

    /// ⊤: untrusted, from anywhere, readable by nobody.
    pub fn top() -> Self {
        Self { integrity: Integrity::Untrusted, origins: Origins::Any, readers: Readers::Only(BTreeSet::new()) }
    }

    /// An untrusted value from the named channels, readable by all.
    pub fn untrusted_from<I: IntoIterator<Item = S>, S: Into<String>>(channels: I) -> Self {
        Self {
            integrity: Integrity::Untrusted,
            origins: Origins::Set(channels.into_iter().map(Into::into).collect()),
            readers: Readers::All,
        }
    }

    /// Whether this is ⊥.
    pub fn is_bottom(&self) -> bool {
        *self == Self::bottom()
    }

    /// The product order: `self ≤ other` in every component.
    pub fn leq(&self, other: &Self) -> bool {
        let integrity = self.integrity <= other.integrity;
        let origins = match (&self.origins, &other.origins) {
            (_, Origins::Any) => true,
            (Origins::Any, Origins::Set(_)) => false,
            (Origins::Set(a), Origins::Set(b)) => a.is_subset(b),
        };
        let readers = match (&self.readers, &other.readers) {
            (Readers::All, _) => true,
            (Readers::Only(_), Readers::All) => false,
            (Readers::Only(a), Readers::Only(b)) => b.is_subset(a),
        };
        integrity && origins && readers
    }

    /// The join (least upper bound): the label of a value made from both
    /// (§4.10 propagation; §6.1 item 3 labels a continued work's output
    /// with the join of everything the client sent it).
    #[must_use]
    pub fn join(&self, other: &Self) -> Self {
        let integrity = self.integrity.max(other.integrity);
        let origins = match (&self.origins, &other.origins) {
            (Origins::Any, _) | (_, Origins::Any) => Origins::Any,
            (Origins::Set(a), Origins::Set(b)) => Origins::Set(a.union(b).cloned().collect()),
        };
        let readers = match (&self.readers, &other.readers) {
            (Readers::All, r) | (r, Readers::All) => r.clone(),
            (Readers::Only(a), Readers::Only(b)) => Readers::Only(a.intersection(b).cloned().collect()),
        };
        Self { integrity, origins, readers }
    }

    /// The meet (greatest lower bound): the strictest of two ceilings.
    /// A label is ≤ both iff it is ≤ their meet.
    #[must_use]
    pub fn meet(&self, other: &Self) -> Self {
        let integrity = self.integrity.min(other.integrity);
        let origins = match (&self.origins, &other.origins) {
            (Origins::Any, o) | (o, Origins::Any) => o.clone(),
            (Origins::Set(a), Origins::Set(b)) => Origins::Set(a.intersection(b).cloned().collect()),
        };
        let readers = match (&self.readers, &other.readers) {
            (Readers::All, r) | (r, Readers::All) => r.clone(),
            (Readers::Only(a), Readers::Only(b)) => Readers::Only(a.union(b).cloned().collect()),
        };
        Self { integrity, origins, readers }
    }

    /// Canonical CBOR form: `{integrity, origins, readers}` with sets as
    /// sorted text arrays, ⊤ origins as `"any"`, ⊥ readers as `"all"`.
    pub fn to_value(&self) -> Value {
        let integrity = match self.integrity {
            Integrity::Trusted => "trusted",
            Integrity::Untrusted => "untrusted",
        };
        let origins = match &self.origins {
            Origins::Any => Value::text("any"),
            Origins::Set(s) => Value::Array(s.iter().map(|x| Value::text(x.as_str())).collect()),
        };
        let readers = match &self.readers {
            Readers::All => Value::text("all"),
            Readers::Only(s) => Value::Array(s.iter().map(|x| Value::text(x.as_str())).collect()),
        };
        cbor::map([("integrity", Some(Value::text(integrity))), ("origins", Some(origins)), ("readers", Some(readers))])
    }

    /// Reads the canonical form; sets must be sorted and free of duplicates.
    pub fn from_value(v: &Value) -> Result<Self, SchemaError> {
        let mut f = Fields::new("Label", v)?;
        let integrity = match f.text("integrity")? {
            "trusted" => Integrity::Trusted,
            "untrusted" => Integrity::Untrusted,
            other => return Err(f.error("integrity", format!("unknown integrity {other:?}"))),
        };
        let origins = match f.req("origins")? {
            Value::Text(t) if t == "any" => Origins::Any,
            Value::Array(_) => Origins::Set(sorted_set(&mut f, "origins")?),
            _ => return Err(f.error("origins", "expected \"any\" or a sorted array of text")),
        };
        let readers = match f.req("readers")? {
            Value::Text(t) if t == "all" => Readers::All,
            Value::Array(_) => Readers::Only(sorted_set(&mut f, "readers")?),
            _ => return Err(f.error("readers", "expected \"all\" or a sorted array of text")),
        };
        f.finish()?;
        Ok(Self { integrity, origins, readers })
    }
}

fn sorted_set(f: &mut Fields<'_>, field: &'static str) -> Result<BTreeSet<String>, SchemaError> {
    let items = f.text_array(field)?;
    let set: BTreeSet<String> = items.iter().cloned().collect();
    if set.len() != items.len() || !items.iter().zip(set.iter()).all(|(a, b)| a == b) {
        return Err(f.error(field, "a set must be sorted and free of duplicates"));
    }
    Ok(set)
}

/// A comma-separated list as people write one (actions, origins, readers,
/// model ids); empty items are dropped.
pub fn text_list(s: &str) -> Vec<String> {
    s.split(',').filter(|x| !x.is_empty()).map(str::to_owned).collect()
}

impl Label {
    /// A label from its three text parts `INTEGRITY`, `ORIGINS` (`any` or a
    /// comma list) and `READERS` (`all` or a comma list); `text` is what the
    /// person wrote, for the error.
    pub(crate) fn from_text_parts(integrity: &str, origins: &str, readers: &str, text: &str) -> Result<Self, Error> {
        let integrity = match integrity {
            "trusted" => Integrity::Trusted,
            "untrusted" => Integrity::Untrusted,
            other => {
                return Err(Error::InvalidLabel {
                    text: text.to_owned(),
                    problem: format!("integrity {other:?} is not trusted|untrusted"),
                })
            }
        };
        let origins =
            if origins == "any" { Origins::Any } else { Origins::Set(text_list(origins).into_iter().collect()) };
        let readers =
            if readers == "all" { Readers::All } else { Readers::Only(text_list(readers).into_iter().collect()) };
        Ok(Self { integrity, origins, readers })
    }
}

/// A label's text form, for people (flags and forms): `bottom`, `top`, or
/// `INTEGRITY;ORIGINS;READERS`, e.g. `untrusted;search,mail;all`.
impl std::str::FromStr for Label {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "bottom" => return Ok(Self::bottom()),
            "top" => return Ok(Self::top()),
            _ => {}
        }
        match s.split(';').collect::<Vec<_>>()[..] {
            [integrity, origins, readers] => Self::from_text_parts(integrity, origins, readers, s),
            _ => Err(Error::InvalidLabel {
                text: s.to_owned(),
                problem: "expected bottom, top or INTEGRITY;ORIGINS;READERS".into(),
            }),
        }
    }
}

/// The argument of a `FlowBelow` caveat (§4.10).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct FlowCeiling {
    /// The label an argument must sit at or below.
    pub ceiling: Label,
    /// A separate, smaller joule allowance for calls whose argument is not ⊥.
    pub tainted_budget_uj: Option<u64>,
}

impl FlowCeiling {
    /// Canonical CBOR form.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("ceiling", Some(self.ceiling.to_value())),
            ("tainted_budget_uj", self.tainted_budget_uj.map(Value::Uint)),
        ])
    }

    /// Reads the canonical form.
    pub fn from_value(v: &Value) -> Result<Self, SchemaError> {
        let mut f = Fields::new("FlowCeiling", v)?;
        let ceiling = Label::from_value(f.req("ceiling")?)?;
        let tainted_budget_uj = f.opt_uint("tainted_budget_uj")?;
        f.finish()?;
        Ok(Self { ceiling, tainted_budget_uj })
    }

    /// Several ceilings compose to the strictest: the meet of the labels and
    /// the least tainted allowance.
    pub fn compose<'a>(ceilings: impl IntoIterator<Item = &'a FlowCeiling>) -> Option<FlowCeiling> {
        let mut acc: Option<FlowCeiling> = None;
        for c in ceilings {
            acc = Some(match acc {
                None => c.clone(),
                Some(a) => FlowCeiling {
                    ceiling: a.ceiling.meet(&c.ceiling),
                    tainted_budget_uj: match (a.tainted_budget_uj, c.tainted_budget_uj) {
                        (Some(x), Some(y)) => Some(x.min(y)),
                        (x, None) => x,
                        (None, y) => y,
                    },
                },
            });
        }
        acc
    }
}

/// A per-resource taint floor configured at an enforcement point (§4.10):
/// what the point will accept regardless of who granted what. It refuses an
/// argument from any of the listed origins, and an argument whose origins are
/// ⊤ ("anywhere", which may include them). Default-open: no floor configured
/// means the point decides exactly as before.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct TaintFloor {
    /// Origins this resource never accepts an argument from.
    pub refused_origins: BTreeSet<String>,
}

impl TaintFloor {
    /// Whether the floor refuses a value with this label.
    pub fn refuses(&self, label: &Label) -> bool {
        if self.refused_origins.is_empty() {
            return false;
        }
        match &label.origins {
            Origins::Any => true,
            Origins::Set(s) => s.iter().any(|o| self.refused_origins.contains(o)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c25_bottom_sits_below_everything_and_top_above() {
        let b = Label::bottom();
        let t = Label::top();
        let u = Label::untrusted_from(["web"]);
        assert!(b.leq(&t) && b.leq(&u) && u.leq(&t));
        assert!(!t.leq(&u) && !u.leq(&b));
    }

    #[test]
    fn c25_meet_is_the_strictest_ceiling() {
        let a = Label::untrusted_from(["web", "mail"]);
        let c = Label::untrusted_from(["web"]);
        let m = a.meet(&c);
        assert_eq!(m, Label::untrusted_from(["web"]));
        let v = Label::untrusted_from(["mail"]);
        assert!(v.leq(&a) && !v.leq(&m));
    }

    #[test]
    fn c25_join_is_the_least_upper_bound() {
        let web = Label::untrusted_from(["web"]);
        let mail = Label::untrusted_from(["mail"]);
        let j = web.join(&mail);
        assert_eq!(j, Label::untrusted_from(["mail", "web"]));
        assert!(web.leq(&j) && mail.leq(&j));
        assert_eq!(Label::bottom().join(&web), web);
        assert_eq!(web.join(&Label::top()), Label::top());
        // Fewer readers is higher: the join keeps only readers of both.
        let mut a = Label::bottom();
        a.readers = Readers::Only(["x".to_owned(), "y".to_owned()].into());
        let mut b = Label::bottom();
        b.readers = Readers::Only(["y".to_owned()].into());
        assert_eq!(a.join(&b).readers, Readers::Only(["y".to_owned()].into()));
    }

    #[test]
    fn c25_label_round_trips_and_unsorted_sets_are_refused() {
        let l = Label {
            integrity: Integrity::Untrusted,
            origins: Origins::Set(["a".into(), "b".into()].into()),
            readers: Readers::Only(["alice".into()].into()),
        };
        assert_eq!(Label::from_value(&l.to_value()).unwrap(), l);
        let bad = cbor::map([
            ("integrity", Some(Value::text("untrusted"))),
            ("origins", Some(Value::Array(vec![Value::text("b"), Value::text("a")]))),
            ("readers", Some(Value::text("all"))),
        ]);
        assert!(Label::from_value(&bad).is_err());
    }
}
