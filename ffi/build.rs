//! Writes the C header for this crate into `OUT_DIR/waitfor.h` with the
//! pinned cbindgen; `tests/header.rs` compares it with the committed
//! `include/waitfor.h`.

fn main() {
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let config = cbindgen::Config::from_file(format!("{crate_dir}/cbindgen.toml"))
        .expect("ffi/cbindgen.toml is readable TOML");
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen can read ffi/src")
        .write_to_file(format!("{out_dir}/waitfor.h"));
}
