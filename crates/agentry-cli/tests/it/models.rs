//! `agentry models`: the catalog, a fetch that finds the model already there, and a bench of the
//! small catalog model (SmolLM2-135M, fetched on first use; `.ci/run` fetches it before the
//! tests).

use crate::common::agentry_in;
use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

/// `agentry` in a temporary directory (no config file is needed).
fn agentry(dir: &tempfile::TempDir) -> Command {
    agentry_in(dir.path())
}

#[test]
fn bench_measures_a_catalog_model_and_json_gives_one_object() {
    let dir = tempfile::tempdir().unwrap();
    agentry(&dir)
        .args(["models", "fetch", "smollm2-135m"])
        .assert()
        .code(0);
    let out = agentry(&dir)
        .args(["--json", "models", "bench", "smollm2-135m"])
        .args(["--tokens", "4", "--prompt-tokens", "16", "--cache", "f16"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let figures: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(figures["model"], "local:smollm2-135m");
    assert_eq!(figures["architecture"], "llama");
    assert_eq!(figures["cache"], "f16");
    let prompt_tokens = figures["prompt"]["tokens"].as_u64().unwrap();
    assert!(prompt_tokens >= 16, "{figures}");
    assert_eq!(figures["decode"]["prompt_tokens"], prompt_tokens);
    assert!(
        figures["decode"]["tokens"].as_u64().unwrap() <= 3,
        "{figures}"
    );
    for rate in [
        &figures["prompt"]["tokens_per_second"],
        &figures["load_seconds"],
    ] {
        assert!(rate.as_f64().is_some_and(|r| r > 0.0), "{figures}");
    }
}

#[test]
fn bench_of_an_unknown_model_is_bad_usage_and_names_the_catalog() {
    let dir = tempfile::tempdir().unwrap();
    agentry(&dir)
        .args(["models", "bench", "gpt-9"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("smollm2-135m"));
}

#[test]
fn bench_of_a_model_not_fetched_names_the_command_that_fetches_it() {
    let dir = tempfile::tempdir().unwrap();
    agentry(&dir)
        .env("AGENTRY_MODEL_DIR", dir.path())
        .args(["models", "bench", "smollm2-135m"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "fetch it once with `agentry models fetch smollm2-135m`",
        ));
}
