//! `idemkit inspect URL KEY...`: what the store holds for each key, through the
//! backend's `get` and judged by its `now`.

use std::process::ExitCode;
use std::time::Instant;

use idemkit_core::{Backend, Record, State};
use serde::Serialize;

use crate::cli::InspectArgs;
use crate::effective::{RequestParts, effective_key};
use crate::failure::{Failure, storage};
use crate::output::{WallClock, base64, bytes, duration, print_json};
use crate::stores::{Place, Store};

/// One key, as asked and as stored.
struct Lookup {
    given: String,
    effective: String,
}

/// What the store holds for one key.
#[derive(Serialize)]
struct Inspected {
    /// The key as given.
    key: String,
    /// How a raw key was turned into the effective key (`None` with `--effective`).
    request: Option<RequestSummary>,
    effective_key: String,
    /// Where the store keeps it (a Redis key, a table's primary key).
    storage_key: String,
    /// `absent`, `in_flight` or `completed`.
    state: &'static str,
    claimed_at: Option<String>,
    /// In flight: when the lease ends (or ended).
    lease_until: Option<String>,
    /// In flight: the lease left, 0 once it lapsed.
    lease_left_ms: Option<u64>,
    /// In flight: whether the lease lapsed (the next claim takes the key over).
    lease_lapsed: Option<bool>,
    completed_at: Option<String>,
    /// Completed: until when it is replayed.
    expires_at: Option<String>,
    expires_in_ms: Option<u64>,
    fingerprint_version: Option<u32>,
    status: Option<u16>,
    header_names: Option<Vec<String>>,
    body_bytes: Option<usize>,
    /// With `--body`: the body, when it is UTF-8 text.
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    /// With `--body`: the body in base64, when it is not UTF-8 text.
    #[serde(skip_serializing_if = "Option::is_none")]
    body_base64: Option<String>,
}

#[derive(Clone, Serialize)]
struct RequestSummary {
    scope: String,
    method: String,
    path: String,
}

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Inspected {
    fn new(
        lookup: Lookup,
        request: Option<RequestSummary>,
        storage_key: String,
        record: Option<&Record>,
        now: Instant,
        with_body: bool,
    ) -> Inspected {
        let clock = WallClock::at(now);
        let mut inspected = Inspected {
            key: lookup.given,
            request,
            effective_key: lookup.effective,
            storage_key,
            state: "absent",
            claimed_at: None,
            lease_until: None,
            lease_left_ms: None,
            lease_lapsed: None,
            completed_at: None,
            expires_at: None,
            expires_in_ms: None,
            fingerprint_version: None,
            status: None,
            header_names: None,
            body_bytes: None,
            body: None,
            body_base64: None,
        };
        let Some(record) = record else {
            return inspected;
        };
        inspected.claimed_at = Some(clock.rfc3339(record.claimed_at()));
        inspected.fingerprint_version = Some(record.fingerprint_version());
        match record.state() {
            State::Claimed => {
                inspected.state = "in_flight";
                inspected.lease_until = Some(clock.rfc3339(record.lease_until()));
                inspected.lease_left_ms =
                    Some(millis(record.lease_until().saturating_duration_since(now)));
                inspected.lease_lapsed = Some(now > record.lease_until());
            }
            State::Completed => {
                inspected.state = "completed";
                inspected.completed_at = record.completed_at().map(|at| clock.rfc3339(at));
                if let Some(expires_at) = record.expires_at() {
                    inspected.expires_at = Some(clock.rfc3339(expires_at));
                    inspected.expires_in_ms =
                        Some(millis(expires_at.saturating_duration_since(now)));
                }
                if let Some(response) = record.response() {
                    inspected.status = Some(response.status);
                    inspected.header_names = Some(
                        response
                            .headers
                            .iter()
                            .map(|(name, _)| name.clone())
                            .collect(),
                    );
                    inspected.body_bytes = Some(response.body.len());
                    if with_body {
                        match std::str::from_utf8(&response.body) {
                            Ok(text) => inspected.body = Some(text.to_owned()),
                            Err(_) => inspected.body_base64 = Some(base64(&response.body)),
                        }
                    }
                }
            }
        }
        inspected
    }

    /// The human form: one `label  value` line each.
    fn print(&self) {
        println!("key             {}", self.key);
        if let Some(request) = &self.request {
            let scope = if request.scope.is_empty() {
                "no scope".to_owned()
            } else {
                format!("scope {:?}", request.scope)
            };
            println!(
                "request         {} {} ({scope})",
                request.method, request.path
            );
        }
        println!("effective key   {}", self.effective_key);
        println!("storage key     {}", self.storage_key);
        let state = match self.state {
            "in_flight" => "in flight",
            other => other,
        };
        println!("state           {state}");
        if let Some(claimed_at) = &self.claimed_at {
            println!("claimed at      {claimed_at}");
        }
        if let (Some(left), Some(lapsed), Some(until)) =
            (self.lease_left_ms, self.lease_lapsed, &self.lease_until)
        {
            if lapsed {
                println!("lease           lapsed at {until}: the next claim takes the key over");
            } else {
                let left = duration(std::time::Duration::from_millis(left));
                println!("lease left      {left} (until {until})");
            }
        }
        if let Some(completed_at) = &self.completed_at {
            println!("completed at    {completed_at}");
        }
        if let (Some(expires_at), Some(left)) = (&self.expires_at, self.expires_in_ms) {
            let left = duration(std::time::Duration::from_millis(left));
            println!("expires         in {left} ({expires_at})");
        }
        if let Some(version) = self.fingerprint_version {
            println!("fingerprint     version {version}");
        }
        if let Some(status) = self.status {
            println!("status          {status}");
        }
        if let Some(names) = &self.header_names {
            let names = if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            };
            println!("headers         {names}");
        }
        if let Some(size) = self.body_bytes {
            println!("body            {}", bytes(size as u64));
        }
        if let Some(body) = &self.body {
            println!("--- body ---\n{body}\n--- end of body ---");
        }
        if let Some(body) = &self.body_base64 {
            println!("--- body (base64, not UTF-8) ---\n{body}\n--- end of body ---");
        }
    }
}

pub async fn run<S: Store>(place: &Place, args: &InspectArgs) -> Result<ExitCode, Failure> {
    // Every key is turned into its record's name before connecting: a mistyped one is
    // reported without touching the store.
    let request = match (&args.effective, &args.path) {
        (false, Some(path)) => Some(RequestSummary {
            scope: args.scope.clone().unwrap_or_default(),
            method: args.method.clone(),
            path: path.clone(),
        }),
        (false, None) => {
            return Err(Failure::usage("a raw key needs the request's path").remedy(
                "give --path PATH (and --scope, --method), or --effective for effective keys",
            ));
        }
        (true, _) => None,
    };
    let mut lookups = Vec::with_capacity(args.keys.len());
    for key in &args.keys {
        let effective = match &request {
            Some(request) => effective_key(
                key,
                &RequestParts {
                    scope: Some(&request.scope),
                    method: &request.method,
                    path: &request.path,
                },
            )?,
            None => key.clone(),
        };
        lookups.push(Lookup {
            given: key.clone(),
            effective,
        });
    }

    let store = S::open(place).await?;
    let described = S::describe(place);
    let mut inspected = Vec::with_capacity(lookups.len());
    for lookup in lookups {
        let record = Backend::get(store.backend(), &lookup.effective)
            .await
            .map_err(|error| storage("reading a record", &described, &error))?;
        let now = Backend::now(store.backend());
        let storage_key = store.storage_key(&lookup.effective);
        inspected.push(Inspected::new(
            lookup,
            request.clone(),
            storage_key,
            record.as_ref(),
            now,
            args.body,
        ));
    }
    if args.output.json {
        print_json(&inspected)?;
    } else {
        for (index, one) in inspected.iter().enumerate() {
            if index > 0 {
                println!();
            }
            one.print();
        }
    }
    Ok(ExitCode::SUCCESS)
}
