//! The receipt core's fields (§8), declared once: [`core_fields!`] below is
//! the only place their names are written. Everything else is derived from
//! it at compile time: each field's slot (its place in name order, which
//! the reference reader's per-field slots index), [`slot_of`] (a name to its
//! slot), and [`BY_RANK`] (the fields in RFC 8949 §4.2.1 canonical key
//! order, which the zero-copy reader walks). A leaf module: it uses nothing
//! else of this crate.

/// Declares the core's fields, in name order (checked at compile time).
macro_rules! core_fields {
    ($($variant:ident = $name:literal,)*) => {
        /// A core field the receipt profile knows; its discriminant is its slot.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Field {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant,
            )*
        }

        /// How many fields the core knows.
        pub(crate) const FIELDS: usize = [$($name),*].len();

        impl Field {
            /// Every field, in slot (name) order.
            pub(crate) const ALL: [Field; FIELDS] = [$(Field::$variant),*];

            /// The field's key on the wire.
            pub(crate) const fn name(self) -> &'static str {
                match self {
                    $(Field::$variant => $name,)*
                }
            }
        }
    };
}

core_fields! {
    Action = "action",
    Breach = "breach",
    BudgetRemainingUj = "budget_remaining_uj",
    BudgetUj = "budget_uj",
    ChainIds = "chain_ids",
    CostCurrency = "cost_currency",
    CostMinor = "cost_minor",
    CostUj = "cost_uj",
    DenyReason = "deny_reason",
    EnergyCoverage = "energy_coverage",
    EnergyMeasured = "energy_measured",
    EnergyProvenance = "energy_provenance",
    Flow = "flow",
    FrameKind = "frame_kind",
    GrantId = "grant_id",
    Issuer = "issuer",
    JcpReceipt = "jcp_receipt",
    PayloadHash = "payload_hash",
    Resource = "resource",
    Steward = "steward",
    Subject = "subject",
    Trust = "trust",
    Verdict = "verdict",
}

impl Field {
    /// Its slot in a per-field table (its place in name order).
    pub(crate) const fn slot(self) -> usize {
        self as usize
    }
}

/// `a < b` bytewise.
const fn bytewise_lt(a: &[u8], b: &[u8]) -> bool {
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

/// `a` before `b` as encoded CBOR text keys (RFC 8949 §4.2.1: the encoded
/// bytes compared bytewise; a text head grows with the length, so a shorter
/// key sorts first, then the bytes).
const fn canonical_lt(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return a.len() < b.len();
    }
    bytewise_lt(a, b)
}

/// The names are declared in strictly increasing name order, so a slot is a
/// name's place in that order and [`slot_of`] can search it.
const _: () = {
    let mut i = 1;
    while i < FIELDS {
        assert!(
            bytewise_lt(Field::ALL[i - 1].name().as_bytes(), Field::ALL[i].name().as_bytes()),
            "core_fields! must list names in strictly increasing order"
        );
        i += 1;
    }
};

/// The slot of a known field name; `None` for anything else.
pub(crate) fn slot_of(key: &[u8]) -> Option<usize> {
    Field::ALL.binary_search_by(|f| f.name().as_bytes().cmp(key)).ok()
}

/// The fields in canonical key order (RFC 8949 §4.2.1), each with its name.
pub(crate) const BY_RANK: [(&str, Field); FIELDS] = {
    let mut t = [("", Field::Action); FIELDS];
    let mut i = 0;
    while i < FIELDS {
        t[i] = (Field::ALL[i].name(), Field::ALL[i]);
        i += 1;
    }
    // Insertion sort (const: FIELDS is small).
    let mut i = 1;
    while i < FIELDS {
        let mut j = i;
        while j > 0 && canonical_lt(t[j].0.as_bytes(), t[j - 1].0.as_bytes()) {
            let x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
            j -= 1;
        }
        i += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;
    use jcp::cbor::Value;

    #[test]
    fn s8_canonical_rank_table_matches_the_key_order() {
        // The det-CBOR encoder's own order (§3) over a map of every field.
        let map = Value::Map(Field::ALL.iter().map(|f| (Value::text(f.name()), Value::Uint(0))).collect());
        let Value::Map(entries) = jcp::cbor::decode_strict(&map.encode()).unwrap() else { panic!("a map") };
        let encoded: Vec<String> = entries
            .iter()
            .map(|(k, _)| match k {
                Value::Text(t) => t.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        let ranked: Vec<String> = BY_RANK.iter().map(|(n, _)| (*n).to_owned()).collect();
        assert_eq!(ranked, encoded);
        // Each name with its own field, and every field once.
        for (name, f) in BY_RANK {
            assert_eq!((f.name(), slot_of(name.as_bytes())), (name, Some(f.slot())));
        }
        assert_eq!(Field::ALL.iter().map(|f| f.slot()).collect::<Vec<_>>(), (0..FIELDS).collect::<Vec<_>>());
    }

    #[test]
    fn s8_unknown_or_near_miss_keys_have_no_slot() {
        for k in [&b""[..], b"actio", b"actionx", b"Action", b"verdict\0", b"zzz", b"a"] {
            assert_eq!(slot_of(k), None, "{:?}", String::from_utf8_lossy(k));
        }
    }
}
