//! [`ToolPolicy`]: which tools a model may call, and with which arguments.

use agentry_core::hooks::{
    BeforeTool, HookCtx, HookExt, HookRegistration, HookResult, IntoHook, on_sync,
};
use globset::{Glob, GlobSet, GlobSetBuilder};
use regex::Regex;
use std::sync::Arc;

/// A tool policy: a BeforeTool hook that blocks calls the policy does not allow, with a reason
/// the model sees as the tool's error result (the tool never runs).
///
/// - **Deny list**: tool names matching any deny pattern are blocked (deny wins over allow).
/// - **Allow list**: in [`deny_unless_allowed`](Self::deny_unless_allowed) mode, only names
///   matching an allow pattern may run. In either mode, a call of a tool the allow list names
///   runs without the approval the tool itself wants
///   ([`Tool::needs_approval`](agentry_core::Tool::needs_approval), e.g. the built-in Bash): the
///   policy [allows](agentry_core::hooks::BeforeTool::allow) it. An approval rule of the policy
///   (or another hook's) still asks.
/// - **Argument rules**: per-tool rules on string arguments ([`ArgRule`]), e.g. a regex that must
///   not match a shell command.
/// - **Approval**: calls of the tools [`require_approval`](ToolPolicyBuilder::require_approval)
///   names pause the run until a person decides.
///
/// Patterns are globs: `*` (any run of characters), `?`, `[abc]`, `{a,b}`. Attach the policy to
/// an agent (`.with(policy)`) or to a runtime (every run and sub-agent run). It is a synchronous
/// hook at priority 200, like the other guards, named `tool-policy`.
///
/// ```
/// use agentry::builtins::{ArgRule, ToolPolicy};
///
/// let policy = ToolPolicy::deny_unless_allowed()
///     .allow("read_*")
///     .allow("shell")
///     .deny("read_secrets")
///     .rule(ArgRule::new("shell", "/command").must_not_match(r"\brm\s+-rf\b"))
///     .build()
///     .expect("the patterns compile");
/// assert!(policy.check("read_file", &serde_json::json!({})).is_ok());
/// assert!(policy.check("read_secrets", &serde_json::json!({})).is_err());
/// assert!(policy.check("write_file", &serde_json::json!({})).is_err());
/// assert!(policy.check("shell", &serde_json::json!({"command": "rm -rf /"})).is_err());
/// ```
#[derive(Clone, Debug)]
pub struct ToolPolicy {
    inner: Arc<Compiled>,
}

/// A policy being built: patterns are compiled by [`build`](Self::build).
#[derive(Clone, Debug, Default)]
pub struct ToolPolicyBuilder {
    deny_unless_allowed: bool,
    allow: Vec<String>,
    deny: Vec<String>,
    approve: Vec<String>,
    approve_destructive: bool,
    rules: Vec<ArgRule>,
}

#[derive(Debug)]
struct Compiled {
    deny_unless_allowed: bool,
    allow: Patterns,
    deny: Patterns,
    approve: Patterns,
    approve_destructive: bool,
    rules: Vec<CompiledRule>,
}

/// Glob patterns with their text, to name the one that matched.
#[derive(Debug)]
struct Patterns {
    set: GlobSet,
    text: Vec<String>,
}

impl Patterns {
    fn compile(patterns: &[String]) -> Result<Patterns, ToolPolicyError> {
        let mut set = GlobSetBuilder::new();
        for p in patterns {
            let glob = Glob::new(p).map_err(|e| ToolPolicyError::Pattern {
                pattern: p.clone(),
                reason: e.kind().to_string(),
            })?;
            set.add(glob);
        }
        let set = set.build().map_err(|e| ToolPolicyError::Pattern {
            pattern: patterns.join(", "),
            reason: e.to_string(),
        })?;
        Ok(Patterns {
            set,
            text: patterns.to_vec(),
        })
    }

    /// The first pattern that matches `name`.
    fn first_match(&self, name: &str) -> Option<&str> {
        self.set
            .matches(name)
            .first()
            .map(|&i| self.text[i].as_str())
    }
}

/// A rule on one string argument of the tools a glob names.
#[derive(Clone, Debug)]
pub struct ArgRule {
    tools: String,
    pointer: String,
    must_not_match: Option<String>,
    must_match: Option<String>,
}

impl ArgRule {
    /// A rule on the argument at `pointer` (a JSON Pointer, e.g. `/command` or `/options/path`)
    /// of the tools matching `tools` (a glob).
    pub fn new(tools: impl Into<String>, pointer: impl Into<String>) -> Self {
        ArgRule {
            tools: tools.into(),
            pointer: pointer.into(),
            must_not_match: None,
            must_match: None,
        }
    }

    /// Blocks the call when the argument matches `regex`.
    pub fn must_not_match(mut self, regex: impl Into<String>) -> Self {
        self.must_not_match = Some(regex.into());
        self
    }

    /// Blocks the call unless the argument matches `regex` (a missing or non-string argument
    /// does not match).
    pub fn must_match(mut self, regex: impl Into<String>) -> Self {
        self.must_match = Some(regex.into());
        self
    }
}

#[derive(Debug)]
struct CompiledRule {
    tools: Patterns,
    pointer: String,
    must_not_match: Option<Regex>,
    must_match: Option<Regex>,
}

/// A pattern of a [`ToolPolicy`] that does not compile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolPolicyError {
    /// A glob pattern of tool names.
    #[error("the tool pattern `{pattern}` is not a valid glob: {reason}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A regular expression of an argument rule.
    #[error("the argument rule regex `{regex}` does not compile: {reason}")]
    Regex {
        /// The expression.
        regex: String,
        /// What is wrong with it.
        reason: String,
    },
}

fn regex(text: &Option<String>) -> Result<Option<Regex>, ToolPolicyError> {
    text.as_deref()
        .map(|r| {
            Regex::new(r).map_err(|e| ToolPolicyError::Regex {
                regex: r.to_owned(),
                reason: e.to_string(),
            })
        })
        .transpose()
}

impl ToolPolicy {
    /// A policy that allows every tool its deny list and rules do not block.
    pub fn allow_by_default() -> ToolPolicyBuilder {
        ToolPolicyBuilder::default()
    }

    /// A policy that blocks every tool its allow list does not name (for production).
    pub fn deny_unless_allowed() -> ToolPolicyBuilder {
        ToolPolicyBuilder {
            deny_unless_allowed: true,
            ..ToolPolicyBuilder::default()
        }
    }

    /// A policy for agents with MCP tools: every tool allowed, and calls of tools whose
    /// annotations say they are destructive wait for a person's approval
    /// ([`approve_destructive`](ToolPolicyBuilder::approve_destructive)).
    pub fn for_mcp() -> ToolPolicyBuilder {
        ToolPolicyBuilder {
            approve_destructive: true,
            ..ToolPolicyBuilder::default()
        }
    }

    /// Why the policy blocks a call of `tool` with `input`, or `Ok` when it allows it.
    pub fn check(&self, tool: &str, input: &serde_json::Value) -> Result<(), String> {
        let p = &self.inner;
        if let Some(pattern) = p.deny.first_match(tool) {
            return Err(format!(
                "the tool policy denies `{tool}` (it matches `{pattern}`); do not call it again"
            ));
        }
        if p.deny_unless_allowed && p.allow.first_match(tool).is_none() {
            return Err(format!(
                "the tool policy does not allow `{tool}` (allowed: {}); use an allowed tool",
                if p.allow.text.is_empty() {
                    "none".to_owned()
                } else {
                    p.allow.text.join(", ")
                }
            ));
        }
        for rule in p
            .rules
            .iter()
            .filter(|r| r.tools.first_match(tool).is_some())
        {
            let value = input.pointer(&rule.pointer).and_then(|v| v.as_str());
            if let (Some(re), Some(value)) = (&rule.must_not_match, value)
                && re.is_match(value)
            {
                return Err(format!(
                    "the tool policy does not allow this `{tool}` call: its argument {} matches `{re}`",
                    rule.pointer
                ));
            }
            if let Some(re) = &rule.must_match
                && !value.is_some_and(|v| re.is_match(v))
            {
                return Err(format!(
                    "the tool policy does not allow this `{tool}` call: its argument {} must match `{re}`",
                    rule.pointer
                ));
            }
        }
        Ok(())
    }

    /// Why a call of `tool` needs a person's approval, when the policy says it does.
    pub fn approval_reason(&self, tool: &str) -> Option<String> {
        self.inner.approve.first_match(tool).map(|pattern| {
            format!("the tool policy requires approval for `{tool}` (it matches `{pattern}`)")
        })
    }

    fn before_tool(&self, ev: &mut BeforeTool, _ctx: &HookCtx) -> HookResult<()> {
        if let Err(reason) = self.check(ev.name(), &ev.input) {
            ev.block(reason);
            return Ok(());
        }
        if let Some(pattern) = self.inner.allow.first_match(ev.name()) {
            ev.allow(format!(
                "the tool policy allows `{}` (it matches `{pattern}`)",
                ev.name()
            ));
        }
        if let Some(reason) = self.approval_reason(ev.name()) {
            ev.require_approval(reason);
        } else if self.inner.approve_destructive
            && ev.tool_info().is_some_and(|i| i.is_destructive())
        {
            ev.require_approval(format!(
                "the tool policy requires approval for destructive tools, and `{}` says it is destructive (destructiveHint)",
                ev.name()
            ));
        }
        Ok(())
    }
}

impl ToolPolicyBuilder {
    /// Allows tools whose names match `pattern` (needed in "deny unless allowed" mode).
    pub fn allow(mut self, pattern: impl Into<String>) -> Self {
        self.allow.push(pattern.into());
        self
    }

    /// Blocks tools whose names match `pattern`, whatever the allow list says.
    pub fn deny(mut self, pattern: impl Into<String>) -> Self {
        self.deny.push(pattern.into());
        self
    }

    /// Calls of tools whose names match `pattern` (and that the policy allows) wait for a
    /// person's approval: the run pauses with them pending.
    pub fn require_approval(mut self, pattern: impl Into<String>) -> Self {
        self.approve.push(pattern.into());
        self
    }

    /// Calls of tools whose annotations make them destructive wait for a person's approval,
    /// whatever their names: not `readOnlyHint: true` and not `destructiveHint: false`, so an
    /// MCP tool that says nothing about itself counts, as the MCP specification's defaults
    /// say (see [`ToolAnnotations`](agentry_core::ToolAnnotations)). A tool without annotations
    /// at all (a Rust tool that declares none) does not. [`ToolPolicy::for_mcp`] turns it on
    /// by default.
    pub fn approve_destructive(mut self, on: bool) -> Self {
        self.approve_destructive = on;
        self
    }

    /// Adds a rule on an argument.
    pub fn rule(mut self, rule: ArgRule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Compiles the patterns and rules.
    pub fn build(self) -> Result<ToolPolicy, ToolPolicyError> {
        let rules = self
            .rules
            .iter()
            .map(|r| {
                Ok(CompiledRule {
                    tools: Patterns::compile(std::slice::from_ref(&r.tools))?,
                    pointer: r.pointer.clone(),
                    must_not_match: regex(&r.must_not_match)?,
                    must_match: regex(&r.must_match)?,
                })
            })
            .collect::<Result<_, ToolPolicyError>>()?;
        Ok(ToolPolicy {
            inner: Arc::new(Compiled {
                deny_unless_allowed: self.deny_unless_allowed,
                allow: Patterns::compile(&self.allow)?,
                deny: Patterns::compile(&self.deny)?,
                approve: Patterns::compile(&self.approve)?,
                approve_destructive: self.approve_destructive,
                rules,
            }),
        })
    }
}

impl IntoHook for ToolPolicy {
    fn into_hook(self) -> HookRegistration {
        on_sync::before_tool(move |ev, ctx| self.before_tool(ev, ctx))
            .named("tool-policy")
            .priority(200)
            .into_hook()
    }
}
