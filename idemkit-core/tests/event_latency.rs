//! An executor with an `on_event` callback reports how long each run took: the clock is
//! read for it only when a callback listens, and then it must still be read.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idemkit_core::{
    AsyncIdempotency, Event, Fingerprint, Idempotency, InMemoryBackend, Key, Response,
};

/// How long the operation takes: the event's latency is at least this.
const RUN_TIME: Duration = Duration::from_millis(30);

fn recorder() -> (
    Arc<Mutex<Vec<Event>>>,
    impl Fn(&Event) + Send + Sync + 'static,
) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    (events, move |event: &Event| {
        sink.lock().unwrap().push(event.clone())
    })
}

/// The run reported one event, whose latency covers the operation's time.
fn assert_one_event_of_the_run(events: &Mutex<Vec<Event>>) {
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 1);
    let latency = events[0].latency;
    assert!(latency >= RUN_TIME, "latency {latency:?}");
}

#[test]
fn the_blocking_executor_reports_the_time_a_run_took() {
    let (events, record) = recorder();
    let executor = Idempotency::new(InMemoryBackend::new()).on_event(record);
    let (key, fingerprint) = (Key::new(["latency"]), Fingerprint::new(["request"]));
    executor
        .run(&key, &fingerprint, |_lease| {
            std::thread::sleep(RUN_TIME);
            Ok::<_, Infallible>(Response::new(201, "made"))
        })
        .unwrap();
    assert_one_event_of_the_run(&events);
}

#[test]
fn the_async_executor_reports_the_time_a_run_took() {
    let (events, record) = recorder();
    let executor = AsyncIdempotency::new(InMemoryBackend::new()).on_event(record);
    let (key, fingerprint) = (Key::new(["latency"]), Fingerprint::new(["request"]));
    futures_lite::future::block_on(executor.run(&key, &fingerprint, || async {
        std::thread::sleep(RUN_TIME);
        Ok::<_, Infallible>(Response::new(201, "made"))
    }))
    .unwrap();
    assert_one_event_of_the_run(&events);
}
