//! `jcp key`, `jcp grant`, `jcp frame`, `jcp decide`, `jcp inspect`: the
//! protocol core (spec §2, §4, §6, §7) from the command line. Objects travel
//! as files of canonical det-CBOR; keys as small JSON files holding the seed
//! (mode 0600). One module per spec section: [`key`] (§2), [`grant`] (§4),
//! [`frame`] (§6), [`decide`] (§7), [`inspect`] (any object); [`files`] and
//! [`text`] are what every subcommand reads and parses through.

pub mod decide;
pub mod files;
pub mod frame;
pub mod grant;
pub mod inspect;
pub mod key;
pub mod text;

pub use decide::{run_decide, DecideArgs};
pub use frame::{run_frame, FrameArgs};
pub use grant::{run_grant, GrantArgs};
pub use inspect::{run_inspect, InspectArgs};
pub use key::{run_key, KeyArgs};

pub(crate) use files::{
    core_err, create_file, read_bytes, read_grant, read_key, read_steward_key, replace_file, write_key, write_object,
};
pub(crate) use frame::{build_frame, FrameFlags};
pub(crate) use key::keypair_from;
pub(crate) use text::{
    nonce_arg, now_or, parse_caveat, parse_cid, parse_did, parse_label, parse_money, parse_provenance, parse_resource,
};
