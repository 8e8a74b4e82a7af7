//! Tool calls assembled from argument pieces streamed under an index.

use agentry_core::ToolCall;

/// Tool calls of one turn, each filled in piece by piece under the index the provider gave it,
/// and emitted in index order.
#[derive(Debug, Default)]
pub(crate) struct ToolCalls {
    calls: Vec<Partial>,
}

#[derive(Debug)]
struct Partial {
    index: usize,
    id: String,
    name: String,
    arguments: String,
}

impl ToolCalls {
    /// The call at `index`, created on first sight.
    fn at(&mut self, index: usize) -> &mut Partial {
        let pos = match self.calls.iter().position(|c| c.index == index) {
            Some(pos) => pos,
            None => {
                self.calls.push(Partial {
                    index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        &mut self.calls[pos]
    }

    /// Starts or extends the call at `index` with whatever this piece carries.
    pub(crate) fn piece(
        &mut self,
        index: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
    ) {
        let call = self.at(index);
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            call.id = id.to_owned();
        }
        if let Some(name) = name {
            call.name.push_str(name);
        }
        if let Some(arguments) = arguments {
            call.arguments.push_str(arguments);
        }
    }

    /// Replaces the arguments of the call at `index` (a provider sent them whole at the end).
    #[cfg(feature = "openai")]
    pub(crate) fn set_arguments(&mut self, index: usize, arguments: &str) {
        let call = self.at(index);
        call.arguments.clear();
        call.arguments.push_str(arguments);
    }

    /// Removes the call at `index`, complete.
    pub(crate) fn take(&mut self, index: usize) -> Option<ToolCall> {
        let pos = self.calls.iter().position(|c| c.index == index)?;
        Some(self.calls.remove(pos).finish())
    }

    /// Removes every call, complete, in index order.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = ToolCall> + '_ {
        self.calls.sort_by_key(|c| c.index);
        self.calls.drain(..).map(Partial::finish)
    }

    /// The unfinished calls, described for an error message.
    pub(crate) fn describe(&self) -> Option<String> {
        let first = self.calls.first()?;
        Some(format!(
            "{} unfinished tool call(s) (`{}` with {} bytes of arguments{})",
            self.calls.len(),
            first.name,
            first.arguments.len(),
            if self.calls.len() > 1 { ", …" } else { "" }
        ))
    }
}

impl Partial {
    fn finish(self) -> ToolCall {
        ToolCall {
            id: if self.id.is_empty() {
                format!("call_{}", self.index)
            } else {
                self.id
            },
            name: self.name,
            // A call without arguments means "no arguments".
            arguments: if self.arguments.trim().is_empty() {
                "{}".to_owned()
            } else {
                self.arguments
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_assemble_per_index_and_drain_in_order() {
        let mut calls = ToolCalls::default();
        calls.piece(1, Some("b"), Some("get_time"), Some(""));
        calls.piece(0, Some("a"), Some("get_weather"), Some("{\"ci"));
        calls.piece(0, None, None, Some("ty\":\"Paris\"}"));
        calls.piece(1, None, None, None);
        assert!(calls.describe().unwrap().contains("2 unfinished"));
        let done: Vec<_> = calls.drain().collect();
        assert_eq!(done[0].name, "get_weather");
        assert_eq!(done[0].arguments, "{\"city\":\"Paris\"}");
        assert_eq!(done[1].id, "b");
        assert_eq!(done[1].arguments, "{}");
        assert!(calls.describe().is_none());
    }
}
