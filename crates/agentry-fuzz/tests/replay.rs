//! Replays the fuzz corpora and crash reproducers (`fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/` at the repository root) through their targets, so that what
//! the fuzzer found stays found.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir` (none when it does not exist), sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != ".gitkeep"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_target_has_a_fuzz_target_and_a_corpus() {
    for (name, _) in agentry_fuzz::targets::ALL {
        let target = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        assert!(target.is_file(), "{} is missing", target.display());
        let corpus = fuzz_dir().join("corpus").join(name);
        assert!(
            !files(&corpus).is_empty(),
            "the corpus of `{name}` ({}) is missing or empty",
            corpus.display()
        );
    }
}

#[test]
fn corpora_and_regressions_replay_without_a_panic() {
    let mut failed = Vec::new();
    let mut replayed = 0;
    for (name, run) in agentry_fuzz::targets::ALL {
        for kind in ["corpus", "regressions"] {
            for file in files(&fuzz_dir().join(kind).join(name)) {
                let data = match std::fs::read(&file) {
                    Ok(data) => data,
                    // Gone since it was listed: a fuzzer running on the corpus replaced it.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => panic!("{}: {e}", file.display()),
                };
                replayed += 1;
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run(&data))) {
                    let message = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    failed.push(format!("{name}: {}: {message}", file.display()));
                }
            }
        }
    }
    assert!(replayed > 0, "nothing was replayed");
    assert!(
        failed.is_empty(),
        "{} input(s) panicked:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
