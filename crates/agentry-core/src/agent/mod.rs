//! Agent definitions: instructions, model, tools, sub-agents, state, output type, hooks, limits.

mod builder;
mod options;
mod output;

pub use crate::compaction::{
    CompactPlan, CompactStrategy, Compaction, DEFAULT_SUMMARY_INSTRUCTIONS, OnCompactError,
    SUMMARY_HEADING, transcript,
};
pub use builder::AgentBuilder;
pub use options::RunOptions;
pub use output::OutputSpec;

use crate::hooks::Hooks;
use crate::state::ErasedState;
use crate::{Model, ModelParams, Tool, ToolSpec};
use std::marker::PhantomData;
use std::sync::Arc;

/// An agent: what a run executes. Cheap to clone (one `Arc`).
///
/// `S` is the run's typed state and `O` the output type (`String` unless
/// [`AgentBuilder::output`] sets a structured one).
pub struct Agent<S = (), O = String> {
    def: Arc<AgentDef>,
    _types: PhantomData<fn() -> (S, O)>,
}

impl<S, O> Clone for Agent<S, O> {
    fn clone(&self) -> Self {
        Agent {
            def: self.def.clone(),
            _types: PhantomData,
        }
    }
}

impl<S, O> std::fmt::Debug for Agent<S, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.def.name)
            .field(
                "tools",
                &self.def.specs.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Agent<(), String> {
    /// Starts the definition of an agent called `name`.
    pub fn builder(name: impl Into<String>) -> AgentBuilder<(), String> {
        AgentBuilder::new(name.into())
    }
}

impl<S, O> Agent<S, O> {
    pub(crate) fn from_def(def: AgentDef) -> Self {
        Agent {
            def: Arc::new(def),
            _types: PhantomData,
        }
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// The type-erased definition runtimes execute.
    pub fn def(&self) -> &Arc<AgentDef> {
        &self.def
    }

    /// The same agent with another model (for tests: swap in a scripted model).
    pub fn with_model(&self, model: impl Model) -> Self {
        self.with_model_arc(Arc::new(model))
    }

    /// The same agent with another (shared) model.
    pub fn with_model_arc(&self, model: Arc<dyn Model>) -> Self {
        self.modified(|def| def.model = Some(model))
    }

    /// A copy of this agent whose definition `change` alters (its tools, hooks and model are
    /// shared until replaced): for tools that run an agent another way, such as a replay that
    /// swaps in recorded model turns and tool results. After changing `tools`, set `specs` to
    /// match.
    pub fn modified(&self, change: impl FnOnce(&mut AgentDef)) -> Self {
        let mut def = self.def.duplicate();
        change(&mut def);
        Agent::from_def(def)
    }
}

/// One tool of an agent, as runtimes see it.
#[derive(Clone)]
pub enum AgentTool {
    /// A tool, with its compiled argument validator.
    Tool {
        /// The tool.
        tool: Arc<dyn Tool>,
        /// Validates arguments against the tool's schema.
        validator: Arc<jsonschema::Validator>,
    },
    /// A sub-agent called as a tool; its input schema is `{"input": string}`.
    SubAgent {
        /// The sub-agent.
        agent: Arc<AgentDef>,
        /// The spec the parent model sees.
        spec: ToolSpec,
        /// Validates arguments against the spec.
        validator: Arc<jsonschema::Validator>,
    },
}

impl AgentTool {
    /// The spec the model sees.
    pub fn spec(&self) -> &ToolSpec {
        match self {
            AgentTool::Tool { tool, .. } => tool.spec(),
            AgentTool::SubAgent { spec, .. } => spec,
        }
    }
    /// The argument validator.
    pub fn validator(&self) -> &jsonschema::Validator {
        match self {
            AgentTool::Tool { validator, .. } | AgentTool::SubAgent { validator, .. } => validator,
        }
    }
}

/// The type-erased definition of an agent; runtimes execute it.
pub struct AgentDef {
    /// The name.
    pub name: Arc<str>,
    /// What it does (the description parent models see when it is a sub-agent).
    pub description: Option<String>,
    /// The system prompt.
    pub instructions: Option<Arc<str>>,
    /// The model, if set (else the runtime's default).
    pub model: Option<Arc<dyn Model>>,
    /// Tools and sub-agents.
    pub tools: Vec<AgentTool>,
    /// Their specs, in the same order, shared with every model request.
    pub specs: Arc<[ToolSpec]>,
    /// The structured output type's schema, if any.
    pub output: Option<OutputSpec>,
    /// How many times an invalid final answer is sent back before the run fails.
    pub output_retries: u32,
    /// How many AfterModel retries one step may ask for.
    pub max_model_retries: u32,
    /// The initial state, cloned for each run.
    pub initial_state: Box<dyn ErasedState>,
    /// Agent-scope hooks.
    pub hooks: Hooks,
    /// The step limit.
    pub max_steps: u32,
    /// Whether several tool calls of one turn run concurrently.
    pub parallel_tool_calls: bool,
    /// Model parameters.
    pub params: ModelParams,
    /// Context compaction, when the agent compacts its history.
    pub compaction: Option<Compaction>,
}

impl AgentDef {
    /// Finds a tool or sub-agent by name.
    pub fn find_tool(&self, name: &str) -> Option<&AgentTool> {
        self.tools.iter().find(|t| t.spec().name == name)
    }

    /// A copy of this definition with the tools of tool sources added after its own (runtimes
    /// call this between steps when a [`ToolSource`](crate::ToolSource)'s tools changed). A
    /// source's tool named like one the agent already has is left out: the agent's own wins.
    /// A tool whose argument schema does not compile is an error naming it.
    pub fn with_source_tools<'a>(
        &self,
        extra: impl IntoIterator<Item = &'a Arc<dyn Tool>>,
    ) -> Result<AgentDef, crate::Error> {
        let mut def = self.duplicate();
        for tool in extra {
            let spec = tool.spec();
            if def.find_tool(&spec.name).is_some() {
                continue;
            }
            let validator = jsonschema::validator_for(&spec.parameters).map_err(|e| {
                crate::Error::Definition {
                    agent: self.name.to_string(),
                    message: format!(
                        "the argument schema of tool `{}` does not compile: {e}",
                        spec.name
                    ),
                }
            })?;
            def.tools.push(AgentTool::Tool {
                tool: tool.clone(),
                validator: Arc::new(validator),
            });
        }
        def.specs = def.tools.iter().map(|t| t.spec().clone()).collect();
        Ok(def)
    }

    /// A copy of this definition (tools, hooks and model are shared).
    pub fn duplicate(&self) -> AgentDef {
        AgentDef {
            name: self.name.clone(),
            description: self.description.clone(),
            instructions: self.instructions.clone(),
            model: self.model.clone(),
            tools: self.tools.clone(),
            specs: self.specs.clone(),
            output: self.output.clone(),
            output_retries: self.output_retries,
            max_model_retries: self.max_model_retries,
            initial_state: self.initial_state.clone_box(),
            hooks: self.hooks.clone(),
            max_steps: self.max_steps,
            compaction: self.compaction.clone(),
            parallel_tool_calls: self.parallel_tool_calls,
            params: self.params.clone(),
        }
    }
}
