#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentry_fuzz::targets::mcp_tool_result::run(data));
