//! A handler's `if`: one permission-rule pattern (`Bash(git *)`, `Edit(*.ts)`), evaluated on tool
//! events only, as Claude Code does.

use globset::GlobBuilder;
use serde_json::Value;

/// True when the rule `rule` applies to the call of `tool` (its Claude Code name) with `input`
/// (Claude Code's field names). A rule that does not parse applies (it fails open, as Claude
/// Code's do).
pub(crate) fn applies(rule: &str, tool: &str, input: &Value) -> bool {
    let rule = rule.trim();
    let (name, pattern) = match rule.split_once('(') {
        Some((name, rest)) => match rest.strip_suffix(')') {
            Some(pattern) => (name.trim(), Some(pattern.trim())),
            None => return true,
        },
        None => (rule, None),
    };
    if name != tool && !(name == "Task" && tool == "Agent") {
        return false;
    }
    let Some(pattern) = pattern else {
        return true;
    };
    let Ok(glob) = GlobBuilder::new(pattern).literal_separator(false).build() else {
        return true;
    };
    let glob = glob.compile_matcher();
    match tool {
        "Bash" | "PowerShell" => {
            let Some(command) = input.get("command").and_then(Value::as_str) else {
                return true;
            };
            // Every subcommand is checked; leading `VAR=value` assignments do not count.
            command
                .split(['\n', ';', '|', '&'])
                .map(strip_assignments)
                .filter(|part| !part.is_empty())
                .any(|part| glob.is_match(part))
        }
        _ => match input.get("file_path").and_then(Value::as_str) {
            Some(path) => {
                let file = std::path::Path::new(path);
                glob.is_match(path)
                    || file.file_name().is_some_and(|n| glob.is_match(n))
                    || file
                        .components()
                        .rev()
                        .scan(std::path::PathBuf::new(), |tail, part| {
                            *tail = std::path::Path::new(&part).join(&*tail);
                            Some(tail.clone())
                        })
                        .any(|tail| glob.is_match(&tail))
            }
            None => true,
        },
    }
}

/// `command` without leading `NAME=value` words, trimmed.
fn strip_assignments(command: &str) -> &str {
    let mut rest = command.trim();
    while let Some((word, tail)) = rest.split_once(char::is_whitespace) {
        let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if !is_assignment {
            break;
        }
        rest = tail.trim_start();
    }
    rest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bash_rules_match_any_subcommand_without_assignments() {
        let cmd = |c: &str| json!({"command": c});
        assert!(applies("Bash(git *)", "Bash", &cmd("git push")));
        assert!(applies(
            "Bash(git *)",
            "Bash",
            &cmd("cd x && GIT_DIR=y git status")
        ));
        assert!(!applies("Bash(git *)", "Bash", &cmd("ls -la")));
        assert!(!applies("Bash(git *)", "Edit", &cmd("git push")));
        assert!(applies("Bash", "Bash", &cmd("anything")));
    }

    #[test]
    fn file_rules_match_paths_and_names() {
        let file = |p: &str| json!({"file_path": p});
        assert!(applies(
            "Edit(*.ts)",
            "Edit",
            &file("/home/dev/project/src/a.ts")
        ));
        assert!(applies(
            "Edit(src/**)",
            "Edit",
            &file("/home/dev/project/src/deep/a.rs")
        ));
        assert!(!applies(
            "Edit(*.ts)",
            "Edit",
            &file("/home/dev/project/src/a.rs")
        ));
        assert!(!applies(
            "Write(*.ts)",
            "Edit",
            &file("/home/dev/project/a.ts")
        ));
    }

    #[test]
    fn rules_that_do_not_parse_apply() {
        assert!(applies("Bash(git *", "Bash", &json!({"command": "ls"})));
    }
}
