//! idemkit's HTTP conformance server as a binary (feature `conformance-server`): the
//! program of `cargo run --example conformance_server`, built where the tests that start
//! it in child processes find it. See the example for how to run it.
#![forbid(unsafe_code)]

#[path = "../../examples/conformance_server/app/mod.rs"]
mod app;

fn main() -> std::process::ExitCode {
    app::main_with_args(std::env::args().skip(1))
}
