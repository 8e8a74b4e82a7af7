#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentry_fuzz::targets::claude_settings::run(data));
