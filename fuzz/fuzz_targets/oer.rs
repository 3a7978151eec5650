//! cargo-fuzz target `oer`: see `checks::oer` (tests/it/fuzz_checks.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| opdesk_fuzz::checks::oer(data));
