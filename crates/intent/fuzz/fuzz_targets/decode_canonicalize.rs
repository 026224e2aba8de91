//! Fuzzes the decoder of outside bytes and the canonicalizer:
//! `cargo +nightly fuzz run decode_canonicalize` from `crates/intent`.
#![no_main]

mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::check(data));
