//! One module per subcommand group.
