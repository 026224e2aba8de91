//! Fuzzes the §8 framework record decoders (OpenAI, Vercel AI SDK,
//! LangChain, MCP) and the adapters behind them:
//! `cargo +nightly fuzz run framework_record` from `crates/intent`.
#![no_main]

mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::check_record(data));
