//! Everything about one run: its context, options, events, output, stop reasons and the step
//! machine that decides what it does next.

pub mod approval;
pub mod context;
pub mod events;
pub mod machine;
pub mod options;
pub mod output;
pub mod stop;
