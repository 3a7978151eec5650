//! cargo-fuzz target `stream_packet`: see `checks::stream_packet` (tests/it/fuzz_checks.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| opdesk_fuzz::checks::stream_packet(data));
