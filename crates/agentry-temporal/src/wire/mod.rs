//! What travels between a client, the workflow and the activities: the workflow's input and
//! result, and each activity's input and outcome. All of it is JSON in the run's history.

mod ending;
mod input;
mod outcome;
mod queries;
mod steps;

pub(crate) use ending::*;
pub(crate) use input::*;
pub use input::{Limits, Placement};
pub(crate) use outcome::*;
pub(crate) use queries::*;
pub(crate) use steps::*;
