#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| crabtalk_fuzz_oracles::frame(data));
