//! cargo-fuzz target `ilp_packet`: see `checks::ilp_packet` (tests/it/fuzz_checks.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| opdesk_fuzz::checks::ilp_packet(data));
