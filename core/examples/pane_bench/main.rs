//! Pane-wait benchmark (run by `bench/pane/run.sh`): reaction latency from
//! a line written to the pane's tty to the wait's result, with the
//! control-mode wake and with polling at 50 ms, and CPU per second of a
//! quiet wait. Prints one JSON object.
//!
//! `cargo run --release -p waitfor --example pane_bench -- SOCKET PANE_ID TTY ROUNDS`

#[cfg(unix)]
mod unix;

fn main() {
    #[cfg(unix)]
    unix::main();
    #[cfg(not(unix))]
    eprintln!("pane_bench drives tmux, which runs on Unix only");
}
