//! The agent builder.

use super::{Agent, AgentDef, AgentTool, Compaction, OutputSpec};
use crate::hooks::events::*;
use crate::hooks::{
    HookCtx, HookResult, Hooks, IntoHook, ModelOutcome, Next, ToolCallRequest, ToolOutcome, on,
};
use crate::state::{AgentState, ErasedState};
use crate::tool::schema_of;
use crate::{Error, Model, ModelParams, ModelRequest, Tool, ToolSpec};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

/// The default step limit.
pub(super) const DEFAULT_MAX_STEPS: u32 = 50;

/// Builds an [`Agent`].
///
/// ```
/// use agentry_core::{Agent, tool, ToolCtx};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct City { city: String }
/// #[derive(Default, Clone, Serialize, Deserialize)]
/// struct Trip { visited: Vec<String> }
///
/// let weather = tool("get_weather", "Current weather", |a: City, ctx: ToolCtx| async move {
///     ctx.update_state(|s: &mut Trip| s.visited.push(a.city.clone()))?;
///     Ok(format!("Sunny in {}", a.city))
/// });
/// let agent = Agent::builder("planner")
///     .instructions("Plan short trips.")
///     .tool(weather)
///     .state(Trip::default())
///     .max_steps(10)
///     .before_tool(|mut ev, _ctx| async move {
///         if ev.input["city"] == "Atlantis" { ev.block("Atlantis is not on any map"); }
///         Ok(ev)
///     })
///     .build()
///     .unwrap();
/// assert_eq!(agent.name(), "planner");
/// ```
pub struct AgentBuilder<S, O> {
    name: String,
    description: Option<String>,
    instructions: Option<String>,
    model: Option<Arc<dyn Model>>,
    tools: Vec<Arc<dyn Tool>>,
    sub_agents: Vec<Arc<AgentDef>>,
    output: Option<serde_json::Value>,
    output_retries: u32,
    max_model_retries: u32,
    state: Box<dyn ErasedState>,
    hooks: Hooks,
    max_steps: u32,
    parallel_tool_calls: bool,
    params: ModelParams,
    compaction: Option<Compaction>,
    _types: PhantomData<fn() -> (S, O)>,
}

impl AgentBuilder<(), String> {
    pub(crate) fn new(name: String) -> Self {
        AgentBuilder {
            name,
            description: None,
            instructions: None,
            model: None,
            tools: Vec::new(),
            sub_agents: Vec::new(),
            output: None,
            output_retries: 3,
            max_model_retries: 3,
            state: Box::new(()),
            hooks: Hooks::new(),
            max_steps: DEFAULT_MAX_STEPS,
            parallel_tool_calls: true,
            params: ModelParams::default(),
            compaction: None,
            _types: PhantomData,
        }
    }
}

macro_rules! define_builder_hooks {
    ($([$ty:ident, $method:ident, $flag:ident, $doc:literal, $builder:ident],)*) => {
        impl<S, O> AgentBuilder<S, O> {
            $(
                #[doc = $doc]
                #[doc = ""]
                #[doc = "Registers an agent-scope closure hook; use [`with`](Self::with) and [`HookExt`](crate::hooks::HookExt) for a name, priority, policy or timeout."]
                pub fn $builder<F, Fut>(self, f: F) -> Self
                where
                    F: Fn($ty, HookCtx) -> Fut + Send + Sync + 'static,
                    Fut: Future<Output = HookResult<$ty>> + Send + 'static,
                {
                    self.with(on::$method(f))
                }
            )*
        }
    };
}
crate::hooks::with_events!(define_builder_hooks);

impl<S, O> AgentBuilder<S, O> {
    fn retype<S2, O2>(self) -> AgentBuilder<S2, O2> {
        AgentBuilder {
            name: self.name,
            description: self.description,
            instructions: self.instructions,
            model: self.model,
            tools: self.tools,
            sub_agents: self.sub_agents,
            output: self.output,
            output_retries: self.output_retries,
            max_model_retries: self.max_model_retries,
            state: self.state,
            hooks: self.hooks,
            max_steps: self.max_steps,
            parallel_tool_calls: self.parallel_tool_calls,
            params: self.params,
            compaction: self.compaction,
            _types: PhantomData,
        }
    }

    /// Compacts the run's history when its prompt grows past the compaction's threshold: older
    /// messages are summarised by a model call or dropped (see [`Compaction`]).
    pub fn compaction(mut self, compaction: Compaction) -> Self {
        self.compaction = Some(compaction);
        self
    }

    /// The system prompt.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// What the agent does: the tool description a parent model sees when this agent is a
    /// sub-agent.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// The model.
    pub fn model(mut self, model: impl Model) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// A shared model.
    pub fn model_arc(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: impl Tool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds a shared tool.
    pub fn tool_arc(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds another agent as a tool: the model calls it with `{"input": "..."}`, it runs as a
    /// child run that inherits this run's hooks, and its output is the tool result.
    pub fn sub_agent<S2, O2>(mut self, agent: &Agent<S2, O2>) -> Self {
        self.sub_agents.push(agent.def().clone());
        self
    }

    /// The initial state of every run (its type is the run's state type).
    pub fn state<S2: AgentState>(mut self, initial: S2) -> AgentBuilder<S2, O> {
        self.state = Box::new(initial);
        self.retype()
    }

    /// A structured output type: the final answer must be JSON matching `O2`'s schema. An invalid
    /// answer is sent back with the validation error, up to [`output_retries`](Self::output_retries)
    /// times.
    pub fn output<O2: JsonSchema + DeserializeOwned + Send + 'static>(
        mut self,
    ) -> AgentBuilder<S, O2> {
        self.output = Some(schema_of::<O2>());
        self.retype()
    }

    /// The output as JSON, with the schema known only at run time (read from a config file,
    /// say): with `Some(schema)` the final answer must be JSON matching it; with `None` the
    /// answer stays text and the output is a JSON string. A schema that does not compile is an
    /// error from [`build`](Self::build).
    pub fn output_schema(
        mut self,
        schema: Option<serde_json::Value>,
    ) -> AgentBuilder<S, serde_json::Value> {
        self.output = schema;
        self.retype()
    }

    /// How many times an invalid final answer is sent back (default 3).
    pub fn output_retries(mut self, n: u32) -> Self {
        self.output_retries = n;
        self
    }

    /// How many times AfterModel hooks may ask for a retry in one step (default 3).
    pub fn max_model_retries(mut self, n: u32) -> Self {
        self.max_model_retries = n;
        self
    }

    /// The step limit (default 50).
    pub fn max_steps(mut self, n: u32) -> Self {
        self.max_steps = n;
        self
    }

    /// Whether several tool calls of one turn run concurrently (default true).
    pub fn parallel_tool_calls(mut self, on: bool) -> Self {
        self.parallel_tool_calls = on;
        self
    }

    /// The sampling temperature.
    pub fn temperature(mut self, t: f32) -> Self {
        self.params.temperature = Some(t);
        self
    }

    /// The most tokens per model turn.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.params.max_tokens = Some(n);
        self
    }

    /// All model parameters.
    pub fn params(mut self, params: ModelParams) -> Self {
        self.params = params;
        self
    }

    /// Registers an agent-scope hook (a closure hook from [`on`], a plugin, or either tuned with
    /// [`HookExt`](crate::hooks::HookExt)).
    pub fn with(mut self, hook: impl IntoHook) -> Self {
        self.hooks.add(hook);
        self
    }

    /// Around-model middleware: `|req, next| async move { next.run(req).await }`.
    pub fn around_model<F, Fut>(self, f: F) -> Self
    where
        F: Fn(ModelRequest, Next<ModelRequest, ModelOutcome>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ModelOutcome> + Send + 'static,
    {
        self.with(on::around_model(f))
    }

    /// Around-tool middleware: `|call, next| async move { next.run(call).await }`.
    pub fn around_tool<F, Fut>(self, f: F) -> Self
    where
        F: Fn(ToolCallRequest, Next<ToolCallRequest, ToolOutcome>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutcome> + Send + 'static,
    {
        self.with(on::around_tool(f))
    }

    /// Checks the definition and builds the agent: its name must not be empty nor hold a `/`
    /// (sub-agents' runs are named by `parent/child` paths), tool names must be unique and
    /// schemas must compile.
    pub fn build(self) -> Result<Agent<S, O>, Error> {
        let agent = self.name.clone();
        let fail = |message: String| Error::Definition {
            agent: agent.clone(),
            message,
        };
        if agent.is_empty() || agent.contains('/') {
            return Err(fail(
                "an agent's name must be non-empty and hold no `/` (a sub-agent's run is named by \
                 the path `parent/child`): choose another name"
                    .into(),
            ));
        }
        let mut tools = Vec::with_capacity(self.tools.len() + self.sub_agents.len());
        for tool in self.tools {
            let spec = tool.spec();
            let validator = jsonschema::validator_for(&spec.parameters).map_err(|e| {
                fail(format!(
                    "the argument schema of tool `{}` does not compile: {e}",
                    spec.name
                ))
            })?;
            tools.push(AgentTool::Tool {
                tool,
                validator: Arc::new(validator),
            });
        }
        for sub in self.sub_agents {
            let spec = ToolSpec {
                name: sub.name.to_string(),
                description: sub
                    .description
                    .clone()
                    .or_else(|| sub.instructions.as_deref().map(str::to_string))
                    .unwrap_or_else(|| format!("Delegate a task to the `{}` agent.", sub.name)),
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {"input": {"type": "string", "description": "The task for the agent."}},
                    "required": ["input"],
                }),
            };
            let validator =
                jsonschema::validator_for(&spec.parameters).map_err(|e| fail(e.to_string()))?;
            tools.push(AgentTool::SubAgent {
                agent: sub,
                spec,
                validator: Arc::new(validator),
            });
        }
        let mut seen = std::collections::HashSet::new();
        for t in &tools {
            if !seen.insert(t.spec().name.clone()) {
                return Err(fail(format!(
                    "two tools are named `{}`; tool names must be unique",
                    t.spec().name
                )));
            }
        }
        let output = match self.output {
            Some(schema) => Some(
                OutputSpec::new(schema)
                    .map_err(|e| fail(format!("the output type's schema does not compile: {e}")))?,
            ),
            None => None,
        };
        if self.max_steps == 0 {
            return Err(fail("max_steps must be at least 1".into()));
        }
        let specs: Arc<[ToolSpec]> = tools.iter().map(|t| t.spec().clone()).collect();
        Ok(Agent::from_def(AgentDef {
            name: Arc::from(self.name),
            description: self.description,
            instructions: self.instructions.map(Arc::from),
            model: self.model,
            tools,
            specs,
            output,
            output_retries: self.output_retries,
            max_model_retries: self.max_model_retries,
            initial_state: self.state,
            hooks: self.hooks,
            max_steps: self.max_steps,
            parallel_tool_calls: self.parallel_tool_calls,
            params: self.params,
            compaction: self.compaction,
        }))
    }
}
