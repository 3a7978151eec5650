//! Replays the committed fuzz inputs (`fuzz/seeds/<target>/*` and every past crash in
//! `tests/fuzz-regressions/<target>/*`) through the harnesses in `fuzz_checks`, with no fuzzer, so each
//! crash the fuzzers ever found stays a plain `cargo test` regression.

use std::path::{Path, PathBuf};

use crate::fuzz_checks::TARGETS;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The files of `dir` (none if it does not exist), sorted so failures name the same file every run.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    out.sort();
    out
}

#[test]
fn every_committed_fuzz_input_replays_cleanly() {
    let mut total = 0;
    for (name, check) in TARGETS {
        let seeds = files(&Path::new(ROOT).join("fuzz/seeds").join(name));
        assert!(!seeds.is_empty(), "fuzz target {name} has no committed seed");
        let crashes = files(&Path::new(ROOT).join("tests/fuzz-regressions").join(name));
        for path in seeds.iter().chain(&crashes) {
            let data = std::fs::read(path).unwrap();
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(outcome.is_ok(), "{name}: {} fails its harness", path.display());
            total += 1;
        }
    }
    assert!(total >= TARGETS.len());
}

#[test]
fn every_regression_folder_names_a_target() {
    let stray = files(&Path::new(ROOT).join("tests/fuzz-regressions"));
    assert!(
        stray.is_empty(),
        "stray files {stray:?} (crashes go in a folder per target)"
    );
    if let Ok(rd) = std::fs::read_dir(Path::new(ROOT).join("tests/fuzz-regressions")) {
        for e in rd {
            let name = e.unwrap().file_name().into_string().unwrap();
            assert!(
                TARGETS.iter().any(|(t, _)| *t == name),
                "unknown fuzz target folder {name}"
            );
        }
    }
}
