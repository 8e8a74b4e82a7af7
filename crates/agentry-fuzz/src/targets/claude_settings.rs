//! The `hooks` of a Claude Code settings file (`.claude/settings.json`, a plugin's
//! `hooks/hooks.json`), read as [`HookSettings`], and the hook they register as.
//!
//! Input: the file's text.

use agentry_external::{CommandHooks, HookSettings};

/// Reads `data` as settings; panics if settings written back in Claude Code's format do not
/// read back the same.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(settings) = HookSettings::from_json(text) else {
        return;
    };
    let _ = settings.unresolved_plugin_refs();
    let written = settings.to_value();
    let again = HookSettings::from_value(&written)
        .unwrap_or_else(|e| panic!("written settings do not read back ({e}): {written}"));
    assert_eq!(again.len(), settings.len(), "written as {written}");
    assert_eq!(again.to_value(), written);
    let _ = settings.clone().strict();
    let (_hook, _sessions) = CommandHooks::new(settings).into_hook_and_sessions();
}
