#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::pfabric_endpoints(data));
