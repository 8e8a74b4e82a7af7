//! Glob and Grep: .gitignore respected, newest first, caps; Grep's modes and flags.

use crate::common::{Sandbox, call};
use agentry::Tool;
use agentry::prelude::*;
use agentry_tools::{Glob, Grep};
use std::time::{Duration, SystemTime};

/// Sets a file's modification time to `secs` after the epoch.
fn touch(path: &std::path::Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

/// A small project: sources, an ignored build directory, a .git directory.
fn project() -> Sandbox {
    let sb = Sandbox::new();
    sb.file(".gitignore", "target/\n*.log\n");
    touch(
        &sb.file("src/main.rs", "fn main() {\n    greet();\n}\n"),
        1000,
    );
    touch(
        &sb.file(
            "src/lib.rs",
            "pub fn greet() {}\n// TODO: more\npub fn other() {}\n",
        ),
        3000,
    );
    touch(&sb.file("src/deep/mod.rs", "// todo later\n"), 2000);
    touch(&sb.file("README.md", "Call greet() first.\n"), 500);
    sb.file("target/debug/out.rs", "fn greet() {}\n");
    sb.file("run.log", "greet log\n");
    sb.file(".git/config", "greet = 1\n");
    sb
}

fn names(out: &str, sb: &Sandbox) -> Vec<String> {
    let root = format!("{}/", sb.root().display());
    out.lines().map(|l| l.replace(&root, "")).collect()
}

#[tokio::test]
async fn glob_matches_newest_first_and_skips_ignored_files() {
    let sb = project();
    let glob = Glob::new(&sb.ws);
    let out = call(&glob, json!({"pattern": "**/*.rs"})).await.unwrap();
    assert_eq!(
        names(&out, &sb),
        ["src/lib.rs", "src/deep/mod.rs", "src/main.rs"]
    );
    // `*` stays in one directory.
    let out = call(&glob, json!({"pattern": "src/*.rs"})).await.unwrap();
    assert_eq!(names(&out, &sb), ["src/lib.rs", "src/main.rs"]);
    // Under a path, relative to it.
    let out = call(&glob, json!({"pattern": "*.rs", "path": "src/deep"}))
        .await
        .unwrap();
    assert_eq!(names(&out, &sb), ["src/deep/mod.rs"]);
    let out = call(&glob, json!({"pattern": "*.log"})).await.unwrap();
    assert!(out.starts_with("No files match"), "{out}");
    let out = call(&glob, json!({"pattern": "**/config"})).await.unwrap();
    assert!(out.starts_with("No files match"), "{out}");
}

#[tokio::test]
async fn glob_caps_its_results_and_says_how_many_more() {
    let sb = project();
    let glob = Glob::new(&sb.ws).max_results(2);
    let out = call(&glob, json!({"pattern": "**/*.rs"})).await.unwrap();
    assert_eq!(
        names(&out, &sb),
        [
            "src/lib.rs",
            "src/deep/mod.rs",
            "[1 more files match; narrow the pattern or the path]"
        ]
    );
    let err = call(&glob, json!({"pattern": "src/[oops"}))
        .await
        .unwrap_err();
    assert!(err.contains("the pattern `src/[oops` is invalid"), "{err}");
}

#[tokio::test]
async fn grep_lists_matching_files_newest_first_by_default() {
    let sb = project();
    let grep = Grep::new(&sb.ws);
    let out = call(&grep, json!({"pattern": "greet"})).await.unwrap();
    let lines = names(&out, &sb);
    assert_eq!(lines[0], "Found 3 files");
    assert_eq!(lines[1..], ["src/lib.rs", "src/main.rs", "README.md"]);
    // Ignored and .git files are not searched.
    assert!(!out.contains("target/") && !out.contains("run.log") && !out.contains(".git/"));
}

#[tokio::test]
async fn grep_content_mode_shows_lines_numbers_and_context() {
    let sb = project();
    let grep = Grep::new(&sb.ws);
    let out = call(
        &grep,
        json!({"pattern": "TODO", "output_mode": "content", "path": "src"}),
    )
    .await
    .unwrap();
    assert_eq!(names(&out, &sb), ["src/lib.rs:2:// TODO: more"]);
    let out = call(
        &grep,
        json!({"pattern": "todo", "output_mode": "content", "-i": true, "-n": false}),
    )
    .await
    .unwrap();
    assert_eq!(
        names(&out, &sb),
        ["src/deep/mod.rs:// todo later", "src/lib.rs:// TODO: more"]
    );
    let out = call(
        &grep,
        json!({"pattern": "TODO", "output_mode": "content", "-B": 1, "path": "src/lib.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(
        names(&out, &sb),
        [
            "src/lib.rs-1-pub fn greet() {}",
            "src/lib.rs:2:// TODO: more"
        ]
    );
    let out = call(
        &grep,
        json!({"pattern": "TODO", "output_mode": "content", "-C": 1, "path": "src/lib.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(
        names(&out, &sb),
        [
            "src/lib.rs-1-pub fn greet() {}",
            "src/lib.rs:2:// TODO: more",
            "src/lib.rs-3-pub fn other() {}"
        ]
    );
    let out = call(
        &grep,
        json!({"pattern": "greet", "output_mode": "content", "-A": 1, "path": "src/main.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(
        names(&out, &sb),
        ["src/main.rs:2:    greet();", "src/main.rs-3-}"]
    );
}

#[tokio::test]
async fn grep_count_mode_glob_type_and_head_limit() {
    let sb = project();
    let grep = Grep::new(&sb.ws);
    let out = call(&grep, json!({"pattern": "fn", "output_mode": "count"}))
        .await
        .unwrap();
    assert_eq!(
        names(&out, &sb),
        [
            "src/lib.rs:2",
            "src/main.rs:1",
            "Found 3 matching lines in 2 files"
        ]
    );
    let out = call(&grep, json!({"pattern": "greet", "glob": "*.md"}))
        .await
        .unwrap();
    assert_eq!(names(&out, &sb), ["Found 1 files", "README.md"]);
    let out = call(&grep, json!({"pattern": "greet", "type": "rust"}))
        .await
        .unwrap();
    assert_eq!(
        names(&out, &sb),
        ["Found 2 files", "src/lib.rs", "src/main.rs"]
    );
    let out = call(
        &grep,
        json!({"pattern": "fn", "output_mode": "content", "head_limit": 2}),
    )
    .await
    .unwrap();
    let lines = names(&out, &sb);
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[2].contains("head_limit = 2"), "{out}");
    let err = call(&grep, json!({"pattern": "x", "type": "klingon"}))
        .await
        .unwrap_err();
    assert!(err.contains("not a known file type"), "{err}");
}

#[tokio::test]
async fn grep_multiline_matches_across_lines() {
    let sb = project();
    let grep = Grep::new(&sb.ws);
    let out = call(
        &grep,
        json!({"pattern": r"main\(\) \{.*greet", "output_mode": "content"}),
    )
    .await
    .unwrap();
    assert!(out.starts_with("No matches"), "{out}");
    let out = call(
        &grep,
        json!({"pattern": r"main\(\) \{.*greet", "output_mode": "content", "multiline": true}),
    )
    .await
    .unwrap();
    assert_eq!(
        names(&out, &sb),
        ["src/main.rs:1:fn main() {", "src/main.rs:2:    greet();"]
    );
}

#[tokio::test]
async fn grep_bad_patterns_and_output_over_the_cap_say_what_to_do() {
    let sb = project();
    let err = call(&Grep::new(&sb.ws), json!({"pattern": "fn("}))
        .await
        .unwrap_err();
    assert!(err.contains("the pattern `fn(` is invalid"), "{err}");
    let grep = Grep::new(&sb.ws).max_output(60);
    let out = call(&grep, json!({"pattern": ".", "output_mode": "content"}))
        .await
        .unwrap();
    assert!(
        out.contains("more lines cut: the result is capped at 60 bytes"),
        "{out}"
    );
    // Field names are Claude Code's.
    let params = &grep.spec().parameters["properties"];
    for field in [
        "-i",
        "-n",
        "-A",
        "-B",
        "-C",
        "type",
        "output_mode",
        "head_limit",
        "multiline",
    ] {
        assert!(params[field].is_object(), "{field} missing: {params}");
    }
}

#[test]
fn grep_schema_is_self_contained_for_model_providers() {
    let sb = Sandbox::new();
    let grep = Grep::new(&sb.ws);
    let params = &grep.spec().parameters;
    let text = params.to_string();
    assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
    assert!(params.get("description").is_none(), "{text}");
    for mode in ["content", "files_with_matches", "count"] {
        assert!(text.contains(&format!("\"{mode}\"")), "{text}");
    }
}
