//! idemkit's HTTP conformance server: any HTTP client, in any language, can drive it
//! through the scenarios of idemkit's conformance suite.
//!
//! ```sh
//! cargo run --release -p idemkit-tower --example conformance_server -- --listen 127.0.0.1:8080
//! ```
//!
//! See `--help` for the options, and the crate's README for the routes and the test
//! headers.

mod app;

fn main() -> std::process::ExitCode {
    app::main_with_args(std::env::args().skip(1))
}
