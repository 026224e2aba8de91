//! The JCP Console desktop binary: everything lives in the library.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() -> std::process::ExitCode {
    jcp_console::run()
}
