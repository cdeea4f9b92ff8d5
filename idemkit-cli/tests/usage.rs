//! The command line itself, without a store: the help lists every subcommand with an
//! example, and every mistake is a clear error with a remedy and exit code 2, found
//! before any store is contacted.

mod support;

use support::{closed_port, idemkit};

#[test]
fn help_lists_the_subcommands_and_the_exit_codes() {
    let run = idemkit(&["--help"]);
    assert_eq!(run.code, 0, "{run:?}");
    for subcommand in ["migrate", "inspect", "stats", "purge", "check"] {
        assert!(
            run.stdout
                .lines()
                .any(|line| line.trim_start().starts_with(subcommand)),
            "{subcommand} in {}",
            run.stdout
        );
    }
    assert!(run.stdout.contains("Exit codes:"), "{}", run.stdout);
    assert!(run.stdout.contains("redis://"), "{}", run.stdout);
}

#[test]
fn every_subcommand_has_help_with_an_example() {
    for subcommand in ["migrate", "inspect", "stats", "purge", "check"] {
        let run = idemkit(&[subcommand, "--help"]);
        assert_eq!(run.code, 0, "{subcommand}: {run:?}");
        assert!(
            run.stdout.contains("Example:"),
            "{subcommand}: {}",
            run.stdout
        );
        assert!(
            run.stdout.contains(&format!("idemkit {subcommand} ")),
            "{subcommand}: {}",
            run.stdout
        );
        assert!(
            run.stdout.contains("--json"),
            "{subcommand}: {}",
            run.stdout
        );
    }
    let inspect = idemkit(&["inspect", "--help"]).stdout;
    for option in [
        "--scope",
        "--method",
        "--path",
        "--effective",
        "--body",
        "--namespace",
        "--table",
    ] {
        assert!(inspect.contains(option), "{option} in {inspect}");
    }
    let purge = idemkit(&["purge", "--help"]).stdout;
    assert!(
        purge.contains("--dry-run") && purge.contains("--batch-size"),
        "{purge}"
    );
}

#[test]
fn an_unknown_url_scheme_is_exit_2_naming_the_known_ones() {
    for url in ["mysql://127.0.0.1/db", "127.0.0.1:6379", "redis://"] {
        let run = idemkit(&["stats", url]);
        assert_eq!(run.code, 2, "{url}: {run:?}");
        assert!(run.stderr.starts_with("idemkit: "), "{url}: {}", run.stderr);
        assert!(
            run.stderr.contains("to fix:") && run.stderr.contains("sqlite://"),
            "{url}: {}",
            run.stderr
        );
    }
    let json = idemkit(&["stats", "mysql://127.0.0.1/db", "--json"]);
    assert_eq!(json.code, 2);
    assert!(json.json()["error"].as_str().unwrap().contains("mysql"));
}

#[test]
fn options_of_another_kind_of_store_are_refused() {
    let redis = format!("redis://127.0.0.1:{}", closed_port());
    let run = idemkit(&["stats", &redis, "--table", "records"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--namespace"), "{}", run.stderr);
    let run = idemkit(&[
        "stats",
        "sqlite:///nonexistent/none.db",
        "--namespace",
        "ns",
    ]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--table"), "{}", run.stderr);
}

#[test]
fn raw_keys_are_checked_before_the_store_is_contacted() {
    // Nothing listens there: these would be exit 3 if the store were asked first.
    let redis = format!("redis://127.0.0.1:{}", closed_port());
    let run = idemkit(&["inspect", &redis, "k"]);
    assert_eq!(run.code, 2, "a raw key needs --path: {run:?}");
    let too_long = "x".repeat(256);
    for args in [
        vec!["inspect", &redis, "", "--path", "/a"],
        vec!["inspect", &redis, &too_long, "--path", "/a"],
        vec!["inspect", &redis, "\"open", "--path", "/a"],
        vec!["inspect", &redis, "k", "--path", "charges"],
        vec!["inspect", &redis, "k", "--path", "/a", "--method", "PO ST"],
    ] {
        let run = idemkit(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stderr.contains("to fix:"), "{args:?}: {}", run.stderr);
    }
    let run = idemkit(&["inspect", &redis, "k", "--effective", "--path", "/a"]);
    assert_eq!(run.code, 2, "--effective takes no request parts: {run:?}");
}

#[test]
fn a_batch_size_out_of_range_is_refused() {
    let redis = format!("redis://127.0.0.1:{}", closed_port());
    for size in ["0", "-1", "many", "100001"] {
        let run = idemkit(&["purge", &redis, "--batch-size", size]);
        assert_eq!(run.code, 2, "{size}: {run:?}");
    }
}
