//! `libtmux-cxx/wait_for_text`: an agent's arguments, validated and prepared (never run).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| waitfor_fuzz::check_profile(
    "libtmux-cxx/wait_for_text",
    data
));
