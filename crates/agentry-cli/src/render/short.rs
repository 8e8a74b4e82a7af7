//! One-line forms of tool inputs and results, for a terminal.

use agentry::ToolResult;
use serde_json::Value;

/// The longest one-line form shown.
const WIDTH: usize = 100;

/// A tool input in a line: the field that says what the call does for the built-in tools
/// (`command`, `file_path`, `pattern`, `url`), else compact JSON; cut to a line.
pub(crate) fn short_input(tool: &str, input: &Value) -> String {
    let key = match tool {
        "Bash" => Some("command"),
        "Read" | "Write" | "Edit" => Some("file_path"),
        "Glob" | "Grep" => Some("pattern"),
        "WebFetch" => Some("url"),
        _ => None,
    };
    let text = match key.and_then(|k| input.get(k)).and_then(Value::as_str) {
        Some(s) => s.to_owned(),
        None => input.to_string(),
    };
    cut(&text)
}

/// A tool result in a line: its first line and how many more there are.
pub(crate) fn short_result(result: &ToolResult) -> String {
    short_content(&result.content.describe())
}

/// Tool output in a line: its first line and how many more there are.
pub(crate) fn short_content(content: &str) -> String {
    let content = content.trim();
    let lines = content.lines().count();
    let first = content.lines().next().unwrap_or("");
    let mut out = cut(first);
    if lines > 1 {
        out.push_str(&format!(" (+{} lines)", lines - 1));
    }
    if content.is_empty() {
        out = "(empty)".to_owned();
    }
    out
}

/// `text` on one line, cut to the display width.
pub(crate) fn cut_line(text: &str) -> String {
    cut(text)
}

fn cut(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= WIDTH {
        return one_line;
    }
    let mut s: String = one_line.chars().take(WIDTH - 1).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn built_in_tools_show_their_main_field() {
        assert_eq!(short_input("Bash", &json!({"command": "ls -la"})), "ls -la");
        assert_eq!(
            short_input("Read", &json!({"file_path": "src/a.rs"})),
            "src/a.rs"
        );
        assert_eq!(short_input("other", &json!({"x": 1})), r#"{"x":1}"#);
        let long = "x".repeat(300);
        assert_eq!(
            short_input("Bash", &json!({"command": long}))
                .chars()
                .count(),
            100
        );
    }

    #[test]
    fn results_show_the_first_line_and_a_count() {
        let r = ToolResult::ok("1", "Read", "a\nb\nc");
        assert_eq!(short_result(&r), "a (+2 lines)");
        assert_eq!(short_result(&ToolResult::ok("1", "Read", "")), "(empty)");
    }
}
