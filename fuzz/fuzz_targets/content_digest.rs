//! cargo-fuzz target `content_digest`: see `checks::content_digest` (tests/it/fuzz_checks.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| opdesk_fuzz::checks::content_digest(data));
