//! Fuzzes the §8 capture context decoder (the operator's tool binding and
//! the trusted context): `cargo +nightly fuzz run capture_context` from
//! `crates/intent`.
#![no_main]

mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::check_capture_context(data));
