//! One module per subcommand group.
pub mod core;
pub mod intent;
