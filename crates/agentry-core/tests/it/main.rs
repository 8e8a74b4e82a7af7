//! The integration tests of agentry-core, in one test binary. (`async_hook_allocs` is a binary of its own: it installs a counting allocator.)

mod awake;
mod event_format;
mod machine_properties;
mod read_only_fields;
mod struct_tool;
