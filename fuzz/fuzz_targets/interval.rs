//! cargo-fuzz target `interval`: see `checks::interval` (tests/it/fuzz_checks.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| opdesk_fuzz::checks::interval(data));
