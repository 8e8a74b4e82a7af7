//! The everyday methods of [`RunContext`](super::RunContext), repeated on the contexts hooks and
//! tools receive, so `ctx.run_id()` reads as it should; the rest is one `ctx.run()` away.

/// Defines, on a type with a `run: RunContext` field, the methods of the run hooks and tools use
/// most, each delegating to the run's own.
macro_rules! run_shortcuts {
    () => {
        /// The run id.
        pub fn run_id(&self) -> &str {
            self.run.run_id()
        }
        /// The parent run id, for a sub-agent's run.
        pub fn parent_run_id(&self) -> Option<&str> {
            self.run.parent_run_id()
        }
        /// The id of the outermost run of this run's tree.
        pub fn root_run_id(&self) -> &str {
            self.run.root_run_id()
        }
        /// The name of the agent running.
        pub fn agent_name(&self) -> &str {
            self.run.agent_name()
        }
        /// The path of agent names from the outermost run, `parent/child`.
        pub fn agent_path(&self) -> &str {
            self.run.agent_path()
        }
        /// The current step (1-based; 0 before the first step).
        pub fn step(&self) -> u32 {
            self.run.step()
        }
        /// The session id.
        pub fn session_id(&self) -> Option<&str> {
            self.run.session_id()
        }
        /// The user id.
        pub fn user_id(&self) -> Option<&str> {
            self.run.user_id()
        }
        /// The run's tags.
        pub fn tags(&self) -> &[String] {
            self.run.tags()
        }
        /// The run's metadata.
        pub fn metadata(&self) -> &serde_json::Map<String, serde_json::Value> {
            self.run.metadata()
        }
        /// How deep the run is nested (0 for a run started on its own).
        pub fn depth(&self) -> u32 {
            self.run.depth()
        }
        /// The run's cancellation token: cancelled when the run is; cancelling it cancels the run.
        pub fn cancellation(&self) -> &tokio_util::sync::CancellationToken {
            self.run.cancellation()
        }
        /// True once the run is cancelled.
        pub fn is_cancelled(&self) -> bool {
            self.run.is_cancelled()
        }
        /// Ends the run with `reason` at `deadline` (see
        /// [`RunContext::stop_at`](crate::RunContext::stop_at)).
        pub fn stop_at(
            &self,
            deadline: impl Into<tokio::time::Instant>,
            reason: crate::StopReason,
        ) {
            self.run.stop_at(deadline, reason)
        }
        /// A copy of the state, typed.
        pub fn state<S: 'static + Clone>(&self) -> Result<S, crate::StateError> {
            self.run.state()
        }
        /// Reads the state, typed, without copying it.
        pub fn with_state<S: 'static, R>(
            &self,
            read: impl FnOnce(&S) -> R,
        ) -> Result<R, crate::StateError> {
            self.run.with_state(read)
        }
        /// The state as JSON.
        pub fn state_json(&self) -> Result<serde_json::Value, crate::StateError> {
            self.run.state_json()
        }
        /// Emits a custom event: Custom hooks see it and the event stream carries it.
        pub fn emit(&self, name: impl Into<String>, data: impl Into<serde_json::Value>) {
            self.run.emit(name, data)
        }
        /// `text` with secrets masked by the run's redactor (unchanged when it has none).
        pub fn redact<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
            self.run.redact(text)
        }
        /// `value` with secrets masked in every string (unchanged when the run has no redactor).
        pub fn redact_value(&self, value: serde_json::Value) -> serde_json::Value {
            self.run.redact_value(value)
        }
    };
}

pub(super) use run_shortcuts;
