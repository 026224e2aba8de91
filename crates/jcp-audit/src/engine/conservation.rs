//! Conservation per grant (§5.5): each grant's line of the report — its
//! budget from the grant record (or the receipts), its replayed spend in
//! exact integer µJ with the measured/modelled basis, its money (§4.8) —
//! and an overspend finding where the spend exceeds either ceiling.

use jcp::cbor::ContentId;

use super::Engine;
use crate::codes::FindingCode;
use crate::report::{conservation_of, GrantLine};
use crate::words;

impl Engine {
    /// One line per grant named by a receipt or recorded in a stream, by
    /// id; then an overspend finding for each grant over its joule budget
    /// (at the allow that took it over) or its money budget (finishing step).
    pub(super) fn grant_lines(&mut self) -> Vec<GrantLine> {
        let mut ids: Vec<ContentId> = self.grants.keys().chain(self.grant_records.keys()).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        let mut grants = Vec::with_capacity(ids.len());
        let mut overs = Vec::new();
        for id in ids {
            let acc = self.grants.remove(&id).unwrap_or_default();
            let rec = self.grant_records.get(&id);
            let budget = rec.map(|g| g.grant().budget_uj).or(acc.budget_from_receipt);
            let conservation = budget.map(|b| conservation_of(b, acc.measured_uj, acc.modelled_uj, acc.partial));
            if let Some(c) = &conservation {
                if c.overspent_uj > 0 {
                    let (s, o) = acc.first_over.unwrap_or((0, 0));
                    overs.push((s, o, words::overspend_uj(&id, c.spent_uj, c.budget_uj, c.overspent_uj)));
                }
            }
            let funds = rec.and_then(|g| g.grant().budget_funds.clone());
            let mut line = GrantLine::of_record(id, rec, budget, acc.spent_minor, conservation);
            (line.spent_uj, line.allows, line.denies, line.breaches) =
                (acc.spent_uj, acc.allows, acc.denies, acc.breaches);
            grants.push(line);
            if let Some(f) = &funds {
                if acc.spent_minor > f.minor {
                    overs.push((0, 0, words::overspend_money(&id, acc.spent_minor, &f.currency, f.minor)));
                }
            }
        }
        for (s, o, msg) in overs {
            self.finding(s, o, FindingCode::Overspend, msg);
        }
        grants
    }
}
