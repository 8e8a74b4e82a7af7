//! Reading a run's events as they happen, its sub-agents' included.
//!
//! A run records its own events, and a sub-agent's run (a child workflow) records its own; the
//! child's join the parent's list when the child ends, after a [`WireEvent::SubRunEvents`]
//! marker, and a [`WireEvent::SubRunStarted`] marker says when it starts. A [`Reader`] follows
//! each started child's own list meanwhile, so its events arrive as they happen, and skips them
//! when they join the parent's. Nested sub-agents are followed the same way, at any depth.

use crate::events::WireEvent;
use crate::wire::EventPage;
use agentry_core::RunEvent;
use std::collections::VecDeque;

/// A sub-agent's run being followed: how far its own list was read.
#[derive(Debug)]
struct Followed {
    run_id: String,
    next: usize,
}

/// The state of a stream of one run's events (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Reader {
    root: String,
    /// The position of the next entry of the run's own list.
    next: usize,
    followed: Vec<Followed>,
    ready: VecDeque<RunEvent>,
    done: bool,
}

impl Reader {
    /// A stream of run `root`'s events from position `from` of its list on.
    pub(crate) fn new(root: &str, from: usize) -> Self {
        Reader {
            root: root.to_string(),
            next: from,
            followed: Vec::new(),
            ready: VecDeque::new(),
            done: false,
        }
    }

    /// Where the run's own list is read next.
    pub(crate) fn next(&self) -> usize {
        self.next
    }

    /// True once the run's last event (finished or failed) was read.
    pub(crate) fn done(&self) -> bool {
        self.done
    }

    /// The sub-agents' runs being followed, and where each one's list is read next.
    pub(crate) fn followed(&self) -> Vec<(String, usize)> {
        self.followed
            .iter()
            .map(|f| (f.run_id.clone(), f.next))
            .collect()
    }

    /// Ends the stream: nothing more is read or streamed.
    pub(crate) fn end(&mut self) {
        self.done = true;
        self.followed.clear();
        self.ready.clear();
    }

    /// The next event ready to stream.
    pub(crate) fn pop(&mut self) -> Option<RunEvent> {
        self.ready.pop_front()
    }

    /// Reads a page of the run's own list.
    pub(crate) fn run_page(&mut self, page: EventPage) {
        self.next = page.from + page.events.len();
        self.take(page.events.into());
    }

    /// Reads a page of the list of the sub-agent's run `run_id`; a run no longer followed (its
    /// events joined its parent's meanwhile) is ignored.
    pub(crate) fn sub_run_page(&mut self, run_id: &str, page: EventPage) {
        let Some(followed) = self.followed.iter_mut().find(|f| f.run_id == run_id) else {
            return;
        };
        if page.from + page.events.len() <= followed.next {
            return;
        }
        let skip = followed.next.saturating_sub(page.from);
        followed.next = page.from + page.events.len();
        let mut entries: VecDeque<WireEvent> = page.events.into();
        entries.drain(..skip.min(entries.len()));
        self.take(entries);
    }

    /// Takes the entries of one list, in order.
    fn take(&mut self, mut entries: VecDeque<WireEvent>) {
        while let Some(entry) = entries.pop_front() {
            match entry {
                WireEvent::SubRunStarted { run_id } => {
                    if !self.followed.iter().any(|f| f.run_id == run_id) {
                        self.followed.push(Followed { run_id, next: 0 });
                    }
                }
                WireEvent::SubRunEvents {
                    run_id,
                    from,
                    count,
                } => {
                    let mut joined: VecDeque<WireEvent> =
                        entries.drain(..count.min(entries.len())).collect();
                    // What was read of it while it ran is not streamed twice.
                    let read = match self.followed.iter().position(|f| f.run_id == run_id) {
                        Some(at) => self.followed.remove(at).next.saturating_sub(from),
                        None => 0,
                    };
                    joined.drain(..read.min(joined.len()));
                    self.take(joined);
                }
                event => {
                    if self.done {
                        continue;
                    }
                    if event.ends(&self.root) {
                        self.done = true;
                        self.followed.clear();
                    }
                    self.ready.extend(event.into_event());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn custom(name: &str) -> WireEvent {
        WireEvent::Run(RunEvent::Custom {
            name: name.into(),
            data: serde_json::Value::Null,
            agent_path: "a".into(),
            run_id: None,
        })
    }

    fn page(from: usize, events: Vec<WireEvent>) -> EventPage {
        EventPage { from, events }
    }

    fn names(reader: &mut Reader) -> Vec<String> {
        std::iter::from_fn(|| reader.pop())
            .map(|e| match e {
                RunEvent::Custom { name, .. } => name,
                other => other.kind().to_string(),
            })
            .collect()
    }

    fn started(id: &str) -> WireEvent {
        WireEvent::SubRunStarted { run_id: id.into() }
    }

    fn joined(id: &str, from: usize, count: usize) -> WireEvent {
        WireEvent::SubRunEvents {
            run_id: id.into(),
            from,
            count,
        }
    }

    #[test]
    fn a_sub_run_is_streamed_as_it_happens_and_not_again_when_it_joins() {
        let mut reader = Reader::new("r", 0);
        reader.run_page(page(0, vec![custom("p1"), started("r/c")]));
        assert_eq!(names(&mut reader), ["p1"]);
        assert_eq!(reader.followed(), [("r/c".to_string(), 0)]);
        reader.sub_run_page("r/c", page(0, vec![custom("c1"), custom("c2")]));
        assert_eq!(names(&mut reader), ["c1", "c2"]);
        // The same page again, and an older one, stream nothing.
        reader.sub_run_page("r/c", page(0, vec![custom("c1"), custom("c2")]));
        reader.sub_run_page("r/c", page(1, vec![custom("c2"), custom("c3")]));
        assert_eq!(names(&mut reader), ["c3"]);
        reader.run_page(page(
            2,
            vec![
                joined("r/c", 0, 4),
                custom("c1"),
                custom("c2"),
                custom("c3"),
                custom("c4"),
                custom("p2"),
            ],
        ));
        assert_eq!(names(&mut reader), ["c4", "p2"]);
        assert!(reader.followed().is_empty());
        assert_eq!(reader.next(), 8);
        // A page of a run no longer followed is ignored.
        reader.sub_run_page("r/c", page(4, vec![custom("late")]));
        assert_eq!(names(&mut reader), Vec::<String>::new());
    }

    #[test]
    fn a_sub_run_never_read_joins_whole_and_nested_ones_are_followed_too() {
        let mut reader = Reader::new("r", 0);
        // The child ended before it was ever read: all of its events stream at once, its own
        // child's included.
        reader.run_page(page(
            0,
            vec![
                started("r/c"),
                joined("r/c", 0, 5),
                custom("c1"),
                started("r/c/g"),
                joined("r/c/g", 0, 1),
                custom("g1"),
                custom("c2"),
            ],
        ));
        assert_eq!(names(&mut reader), ["c1", "g1", "c2"]);
        assert!(reader.followed().is_empty());
        // Followed live, at two levels: the grandchild's events stream from its own list, and
        // neither list's events stream again when they join.
        reader.run_page(page(7, vec![started("r/d")]));
        reader.sub_run_page("r/d", page(0, vec![custom("d1"), started("r/d/h")]));
        reader.sub_run_page("r/d/h", page(0, vec![custom("h1")]));
        assert_eq!(names(&mut reader), ["d1", "h1"]);
        reader.sub_run_page(
            "r/d",
            page(
                2,
                vec![
                    joined("r/d/h", 0, 2),
                    custom("h1"),
                    custom("h2"),
                    custom("d2"),
                ],
            ),
        );
        assert_eq!(names(&mut reader), ["h2", "d2"]);
        reader.run_page(page(
            8,
            vec![
                joined("r/d", 0, 6),
                custom("d1"),
                started("r/d/h"),
                joined("r/d/h", 0, 2),
                custom("h1"),
                custom("h2"),
                custom("d2"),
            ],
        ));
        assert_eq!(names(&mut reader), Vec::<String>::new());
        assert!(reader.followed().is_empty());
    }

    #[test]
    fn the_stream_ends_with_the_runs_own_end_not_a_sub_runs() {
        let end = |id: &str| {
            WireEvent::Run(RunEvent::RunFinished {
                run_id: id.into(),
                stop: agentry_core::StopReason::FinalAnswer,
                agent_path: "a".into(),
            })
        };
        let mut reader = Reader::new("r", 0);
        reader.run_page(page(0, vec![joined("r/c", 0, 1), end("r/c")]));
        assert!(!reader.done());
        reader.run_page(page(2, vec![end("r"), custom("after")]));
        assert!(reader.done());
        assert_eq!(names(&mut reader), ["run_finished", "run_finished"]);
    }
}
