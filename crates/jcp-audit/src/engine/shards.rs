//! Sharded budgets (§4.5): "each point then enforces only its own shard".
//! A shard bound to a point (`PointIs`, recorded as a grant record) that
//! was allowed through at another point is `shard-wrong-point`; the shards
//! of one parent bound to points, together past the parent's joule or
//! money ceiling (a parent sharded twice), are `shard-overcommitted`.

use jcp::identity::did_string_of;

use super::Engine;
use crate::codes::FindingCode;
use crate::words;

impl Engine {
    /// The closing step for §4.5 (before the grant lines take the books).
    pub(super) fn shards(&mut self) {
        let mut found: Vec<(usize, u64, FindingCode, String)> = Vec::new();
        for (id, rec) in &self.grant_records {
            let Some(point) = rec.grant().bound_point() else { continue };
            let Some(g) = self.grants.get(id) else { continue };
            for (k, (s, o)) in &g.points {
                if k != point.public_bytes() {
                    found.push((
                        *s,
                        *o,
                        FindingCode::ShardWrongPoint,
                        words::shard_wrong_point(id, point, &did_string_of(k)),
                    ));
                }
            }
        }
        for msg in words::shard_overcommitted(self.grant_records.values(), |id| self.grant_records.get(id)) {
            found.push((0, 0, FindingCode::ShardOvercommitted, msg));
        }
        found.sort();
        for (s, o, code, msg) in found {
            self.finding(s, o, code, msg);
        }
    }
}
