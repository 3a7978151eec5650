//! The fuzz harnesses, shared with the main crate's replay test (`tests/it/fuzz_replay.rs`).

#[path = "../../tests/it/fuzz_checks.rs"]
pub mod checks;
