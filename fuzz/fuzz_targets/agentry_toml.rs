#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentry_fuzz::targets::agentry_toml::run(data));
