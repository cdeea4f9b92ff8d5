//! `idemkit check URL`: runs the conformance vectors against the store, in a namespace or
//! table of the check's own, reporting each as it finishes; cleans up; exits 1 if any
//! vector failed.

use std::process::ExitCode;

use idemkit_conformance::runner::Report;
use serde::Serialize;

use crate::cli::CheckArgs;
use crate::failure::{Failure, Kind};
use crate::output::{duration, print_json};
use crate::stores::{Place, Store};

#[derive(Serialize)]
struct CheckedJson {
    store: String,
    ran_in: String,
    passed: usize,
    failed: usize,
    left_behind: u64,
    vectors: Vec<VectorJson>,
}

#[derive(Serialize)]
struct VectorJson {
    group: &'static str,
    name: &'static str,
    passed: bool,
    message: Option<String>,
    elapsed_ms: u64,
}

pub fn run<S: Store>(place: &Place, args: &CheckArgs) -> Result<ExitCode, Failure> {
    let described = S::describe(place);
    let json = args.output.json;
    if !json {
        println!("checking {described} with the conformance vectors");
    }
    let mut on_report = |report: &Report| {
        if json {
            return;
        }
        let name = format!("{}::{}", report.group, report.name);
        let took = duration(report.elapsed);
        match &report.outcome {
            Ok(()) => println!("ok    {name} ({took})"),
            Err(message) => println!("FAIL  {name} ({took})\n      {message}"),
        }
    };
    let checked = S::check(place, &mut on_report)?;
    let failed = checked
        .reports
        .iter()
        .filter(|report| !report.passed())
        .count();
    let passed = checked.reports.len() - failed;
    if json {
        print_json(&CheckedJson {
            store: described.clone(),
            ran_in: checked.ran_in.clone(),
            passed,
            failed,
            left_behind: checked.left_behind,
            vectors: checked
                .reports
                .iter()
                .map(|report| VectorJson {
                    group: report.group,
                    name: report.name,
                    passed: report.passed(),
                    message: report.outcome.clone().err(),
                    elapsed_ms: u64::try_from(report.elapsed.as_millis()).unwrap_or(u64::MAX),
                })
                .collect(),
        })?;
    } else {
        println!(
            "{passed} passed, {failed} failed; ran in {}, {}",
            checked.ran_in,
            if checked.left_behind == 0 {
                "cleaned up".to_owned()
            } else {
                format!("{} left behind", checked.left_behind)
            }
        );
    }
    let failure = if checked.left_behind > 0 {
        Some(
            Failure::unreachable(format!(
                "the check could not remove everything it wrote: {} left in {}",
                checked.left_behind, checked.ran_in
            ))
            .remedy("delete them by hand; nothing of the deployment's own records was touched"),
        )
    } else if failed > 0 {
        Some(
            Failure::new(
                Kind::CheckFailed,
                format!(
                    "{failed} of {} conformance vectors failed against {described}",
                    checked.reports.len()
                ),
            )
            .remedy(
                "the store does not behave as idemkit needs: read the failures above; a \
                 timing failure on a loaded store may pass on a rerun, a wrong answer will not",
            ),
        )
    } else {
        None
    };
    match failure {
        // The JSON report already says what failed: standard output stays one document.
        Some(failure) if json => {
            eprintln!("{failure}");
            Ok(failure.exit_code())
        }
        Some(failure) => Err(failure),
        None => Ok(ExitCode::SUCCESS),
    }
}
