//! The feeds (§4.3, §4.5, §4.7, §4.11): a revocation, an amendment, a
//! peer's budget-channel statement or an action's outcome is checked for
//! authority, recorded, then applied; and this point's own signed
//! statement on a channel grant (§4.5).

use jcp::cbor::ContentId;
use jcp::channel::SignedStatement;

use super::core_thread::Core;
use crate::message::{Feed, FeedAnswer};

impl Core {
    /// Admits one feed message: checked, recorded, then applied (a refusal
    /// carries its code). With the record failed, every feed is `unrecorded`.
    pub(super) fn feed(&mut self, feed: &Feed) -> FeedAnswer {
        if let Some(why) = &self.failed {
            return FeedAnswer {
                admitted: false,
                code: "unrecorded".into(),
                message: format!("the record cannot be written: {why}"),
                known_through: None,
            };
        }
        // Feeds are authenticated (signed, or the operator's): past the
        // high-water mark they are still recorded; past the limit, nothing is.
        if let Some(why) = self.record_full() {
            return FeedAnswer { admitted: false, code: "unrecorded".into(), message: why, known_through: None };
        }
        let res = match feed {
            Feed::Revocation { revocation, grant, marker } => self
                .gate
                .admit_revocation(revocation, grant, *marker)
                .map(|_| format!("revocation of {} admitted at marker {marker}", grant.id())),
            Feed::Amendment { steered, checkpoint, amendment, continuation, marker } => {
                self.gate.admit_amendment(steered, checkpoint, amendment, continuation, *marker).map(|at| {
                    format!(
                        "amendment {} admitted{}: grant {} superseded by {}",
                        amendment.id(),
                        if at.is_none() { " before (recorded once)" } else { "" },
                        steered.id(),
                        continuation.id()
                    )
                })
            }
            // Unwrapped at the connection (`serve::authenticate_feed`): one
            // that reaches the core was not checked there.
            Feed::Signed { .. } => {
                return FeedAnswer {
                    admitted: false,
                    code: "feed-unauthenticated".into(),
                    message: "a signed feed is checked and unwrapped where it arrives".into(),
                    known_through: self.gate.known_through(),
                }
            }
            Feed::Statement(st) => self.gate.admit_statement(st).map(|_| {
                let c = st.statement();
                format!(
                    "statement of {} admitted: {} µJ settled at seq {} on grant {}",
                    c.point, c.spent_uj, c.seq, c.grant_id
                )
            }),
            Feed::Outcome(o) => {
                let refuse = |code: &str, message: String| FeedAnswer {
                    admitted: false,
                    code: code.into(),
                    message,
                    known_through: None,
                };
                if !o.verify_signature() {
                    return FeedAnswer {
                        known_through: self.gate.known_through(),
                        ..refuse("bad-signature", format!("the outcome's signature does not verify under {}", o.holder))
                    };
                }
                match self.gate.pending_of(&o.receipt) {
                    None => {
                        return FeedAnswer {
                            known_through: self.gate.known_through(),
                            ..refuse("outcome-unknown", format!("no allowed decision {} awaits its outcome here (never decided here, or already settled)", o.receipt))
                        }
                    }
                    Some(p) if p.holder != o.holder => {
                        return FeedAnswer {
                            known_through: self.gate.known_through(),
                            ..refuse("wrong-subject", format!("only the holder {} reports this outcome, not {}", p.holder, o.holder))
                        }
                    }
                    Some(_) => {}
                }
                self.gate
                    .complete(&o.receipt, o.status)
                    .map(|_| format!("outcome of {} recorded: {}", o.receipt, o.status.as_str()))
            }
        };
        self.metrics.known_through(self.gate.known_through());
        if let (Ok(_), Feed::Statement(st)) = (&res, feed) {
            self.note_spend(&[st.statement().grant_id]);
        }
        match res {
            Ok(message) => FeedAnswer {
                admitted: true,
                code: "admitted".into(),
                message,
                known_through: self.gate.known_through(),
            },
            Err(e) => FeedAnswer {
                admitted: false,
                code: e.code().into(),
                message: e.to_string(),
                known_through: self.gate.known_through(),
            },
        }
    }

    /// §4.5: this point's signed statement of its cumulative allowed spend
    /// on a channel grant (a new one is recorded before it leaves).
    pub(super) fn statement(&mut self, grant_id: &ContentId) -> Result<SignedStatement, FeedAnswer> {
        let refuse = |code: &str, message: String| FeedAnswer {
            admitted: false,
            code: code.into(),
            message,
            known_through: None,
        };
        if let Some(why) = &self.failed {
            return Err(refuse("unrecorded", format!("the record cannot be written: {why}")));
        }
        let Some(key) = self.point_keys.get(grant_id) else {
            let e = jcp::Error::ChannelUnknown { grant_id: grant_id.to_hex() };
            return Err(refuse(e.code(), e.to_string()));
        };
        match self.gate.issue_statement(grant_id, key) {
            Ok((s, _)) => Ok(s),
            Err(e) => Err(refuse(e.code(), e.to_string())),
        }
    }
}
