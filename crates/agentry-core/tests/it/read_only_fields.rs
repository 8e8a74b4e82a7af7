//! What a hook can write, the run honours; what it cannot honour, it cannot write. Each event's
//! observe-only data and the identity of what it is about (call ids, tool names, run ids, agent
//! names) are read through accessors: writing them does not compile (`tests/read_only`), while
//! the fields the runtime honours stay writable (`tests/writable`).

#[test]
fn observe_only_fields_cannot_be_written_and_honoured_ones_can() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/read_only/*.rs");
    t.pass("tests/writable/*.rs");
}
