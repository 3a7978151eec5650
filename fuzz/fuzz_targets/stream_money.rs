//! cargo-fuzz target `stream_money`: see `checks::stream_money` (tests/it/fuzz_checks.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| opdesk_fuzz::checks::stream_money(data));
