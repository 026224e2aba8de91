//! Spec §4.2: chain verification, hop by hop, root first, leaf last.

use crate::error::Amplification;
use crate::grant::{check_narrows, SignedGrant};

/// Why a chain does not verify, in the order the checks run: structure
/// (`chain-broken`), then narrowing (`attenuation-violation`), then
/// signatures (`bad-signature`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainFault {
    /// Structurally invalid (§4.2, §4.4 leaf-only maps here on the wire).
    #[error("chain-broken: {0}")]
    Broken(String),
    /// A hop that amplifies its parent.
    #[error("attenuation-violation at hop {hop}: {why}")]
    Attenuation {
        /// Index of the child link in the chain (root = 0).
        hop: usize,
        /// The axis it amplifies.
        why: Amplification,
    },
    /// A link whose issuer signature does not verify.
    #[error("bad-signature at link {link}")]
    BadSignature {
        /// Index of the link in the chain (root = 0).
        link: usize,
    },
}

/// Checks a chain's structure and narrowing without signatures.
pub fn check_structure(chain: &[SignedGrant]) -> Result<(), ChainFault> {
    let Some(root) = chain.first() else {
        return Err(ChainFault::Broken("empty chain".into()));
    };
    if root.grant().parent.is_some() {
        return Err(ChainFault::Broken("the root names a parent: the chain does not start at a root".into()));
    }
    for (i, pair) in chain.windows(2).enumerate() {
        let (prev, next) = (&pair[0], &pair[1]);
        let hop = i + 1;
        if next.grant().parent != Some(prev.id()) {
            return Err(ChainFault::Broken(format!("link {hop} does not name link {i} as its parent (spliced chain)")));
        }
        if next.grant().issuer != prev.grant().subject {
            return Err(ChainFault::Broken(format!(
                "link {hop} is issued by {}, not by the previous subject {}",
                next.grant().issuer,
                prev.grant().subject
            )));
        }
        if prev.grant().delegate_depth == Some(0) {
            return Err(ChainFault::Broken(format!("delegation-forbidden: link {i} is leaf-only")));
        }
    }
    for (i, pair) in chain.windows(2).enumerate() {
        check_narrows(pair[0].grant(), pair[1].grant()).map_err(|why| ChainFault::Attenuation { hop: i + 1, why })?;
    }
    Ok(())
}

/// Full verification: structure, narrowing, then every signature.
pub fn verify_chain(chain: &[SignedGrant]) -> Result<(), ChainFault> {
    check_structure(chain)?;
    for (link, g) in chain.iter().enumerate() {
        if !g.verify_signature() {
            return Err(ChainFault::BadSignature { link });
        }
    }
    Ok(())
}
