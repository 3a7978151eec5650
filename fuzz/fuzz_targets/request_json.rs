//! cargo-fuzz target `request_json`: see `checks::request_json` (tests/it/fuzz_checks.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| opdesk_fuzz::checks::request_json(data));
