//! One module per subcommand group.
pub mod agent;
pub mod audit;
pub mod backend;
pub mod blueprint;
pub mod channel;
pub mod core;
pub mod energy;
pub mod gateway;
pub mod identity;
pub mod intent;
pub mod meter;
pub mod run;
pub mod standing;
pub mod stream;
pub mod threshold;
pub mod wire;
