//! One binary switches between the in-memory backend and one written outside the core at
//! run time: `choose_backend` is run with each, and both executors behave alike on both.

use std::process::Command;

fn run(backend: &str) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_choose_backend"))
        .arg(backend)
        .output()
        .expect("the binary starts");
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

#[test]
fn the_same_binary_runs_on_either_backend_chosen_at_run_time() {
    for backend in ["memory", "mutex-map"] {
        let (ok, text) = run(backend);
        assert!(ok, "{backend}: {text}");
        for executor in ["async", "blocking"] {
            let line =
                format!("{backend} {executor}: ran 1 time(s); decisions [New, Replayed, Replayed]");
            assert!(
                text.contains(&line),
                "{backend}: expected {line:?} in {text}"
            );
        }
    }
}

#[test]
fn an_unknown_backend_is_a_clear_error() {
    let (ok, text) = run("carrier-pigeon");
    assert!(!ok);
    assert!(
        text.contains("unknown backend \"carrier-pigeon\""),
        "{text}"
    );
}
