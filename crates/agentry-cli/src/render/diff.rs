//! The change a `Write` or `Edit` call would make to a file, as a unified diff, shown before a
//! person approves it.

use agentry_tools::{EditInput, WriteInput};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};
use std::path::Path;

/// The most diff lines shown; the rest are counted.
const MAX_LINES: usize = 80;

/// The diff of what call `tool(input)` would write, with paths resolved against `root`; `None`
/// for other tools or input they would refuse.
pub(crate) fn file_change(tool: &str, input: &Value, root: &Path) -> Option<String> {
    let (path, before, after) = match tool {
        "Write" => {
            let input: WriteInput = serde_json::from_value(input.clone()).ok()?;
            let before = std::fs::read_to_string(root.join(&input.file_path)).ok();
            (input.file_path, before, input.content)
        }
        "Edit" => {
            let input: EditInput = serde_json::from_value(input.clone()).ok()?;
            let before = std::fs::read_to_string(root.join(&input.file_path)).ok()?;
            if input.old_string.is_empty() || !before.contains(&input.old_string) {
                return None;
            }
            let after = match input.replace_all {
                true => before.replace(&input.old_string, &input.new_string),
                false => before.replacen(&input.old_string, &input.new_string, 1),
            };
            (input.file_path, Some(before), after)
        }
        _ => return None,
    };
    Some(unified(&path, before.as_deref(), &after))
}

/// `before` (`None`: the file does not exist) against `after`, with three lines of context.
fn unified(path: &str, before: Option<&str>, after: &str) -> String {
    let old = before.unwrap_or("");
    let diff = TextDiff::from_lines(old, after);
    let mut out = match before {
        Some(_) => format!("--- {path}\n+++ {path} (after the call)\n"),
        None => format!("new file {path}, {} lines\n", after.lines().count()),
    };
    let mut shown = 0;
    let mut hidden = 0;
    for group in diff.grouped_ops(3) {
        for op in group {
            for change in diff.iter_changes(&op) {
                if shown >= MAX_LINES {
                    hidden += 1;
                    continue;
                }
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                let line = change.value();
                out.push(sign);
                out.push_str(line.strip_suffix('\n').unwrap_or(line));
                out.push('\n');
                shown += 1;
            }
        }
        if shown < MAX_LINES {
            out.push_str("  ⋯\n");
        }
    }
    if hidden > 0 {
        out.push_str(&format!("  … {hidden} more changed or context lines\n"));
    }
    if diff.ratio() == 1.0 && before.is_some() {
        out.push_str("  (no change)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_shows_the_lines_it_changes_in_context() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\nfour\n").unwrap();
        let diff = file_change(
            "Edit",
            &json!({"file_path": "a.txt", "old_string": "two", "new_string": "2"}),
            dir.path(),
        )
        .unwrap();
        assert!(diff.starts_with("--- a.txt\n+++ a.txt"), "{diff}");
        assert!(diff.contains("-two\n+2\n"), "{diff}");
        assert!(
            diff.contains(" one\n") && diff.contains(" three\n"),
            "{diff}"
        );
    }

    #[test]
    fn a_write_of_a_new_file_shows_its_lines_and_a_long_one_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let content: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let diff = file_change(
            "Write",
            &json!({"file_path": "new.txt", "content": content}),
            dir.path(),
        )
        .unwrap();
        assert!(diff.starts_with("new file new.txt, 200 lines"), "{diff}");
        assert!(diff.contains("+line 0\n"), "{diff}");
        assert!(diff.contains("… 120 more"), "{diff}");
        assert_eq!(
            file_change("Bash", &json!({"command": "ls"}), dir.path()),
            None
        );
        // An edit the tool would refuse (its text is not in the file) shows nothing.
        std::fs::write(dir.path().join("b.txt"), "x\n").unwrap();
        let refused = json!({"file_path": "b.txt", "old_string": "y", "new_string": "z"});
        assert_eq!(file_change("Edit", &refused, dir.path()), None);
    }
}
