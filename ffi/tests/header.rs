//! The committed `include/waitfor.h` is exactly what cbindgen writes from
//! `ffi/src` (build.rs generates it into `OUT_DIR`). Run with
//! `WAITFOR_BLESS_HEADER=1` to rewrite the committed header on purpose.

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/waitfor.h"));

#[test]
fn committed_header_matches_the_code() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../include/waitfor.h");
    if std::env::var_os("WAITFOR_BLESS_HEADER").is_some() {
        std::fs::write(path, GENERATED).expect("include/waitfor.h is writable");
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == GENERATED,
        "include/waitfor.h differs from what cbindgen generates from ffi/src; \
         run `WAITFOR_BLESS_HEADER=1 cargo test -p waitfor-ffi --test header` and commit it"
    );
}
