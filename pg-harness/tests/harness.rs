//! The harness against real PostgreSQL: a private cluster keeps its data across a stop,
//! a kill and a start; the machine's server is reachable.

use std::process::Command;

use pg_harness::{PgCluster, available, machine, unique_name};

fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([url, "-XAtqc", sql])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn a_private_cluster_keeps_its_data_across_stop_kill_and_start() {
    if !available() {
        return;
    }
    let cluster = PgCluster::start_new().expect("the cluster starts");
    let url = cluster.url();
    psql(
        &url,
        "CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)",
    );
    cluster.stop().expect("stops");
    assert!(std::net::TcpStream::connect(("127.0.0.1", cluster.port())).is_err());
    cluster.start().expect("starts again");
    assert_eq!(psql(&url, "SELECT n FROM kept"), "7");
    cluster.restart().expect("restarts");
    assert_eq!(psql(&url, "SELECT n FROM kept"), "7");
    cluster.kill().expect("killed");
    assert!(std::net::TcpStream::connect(("127.0.0.1", cluster.port())).is_err());
    cluster.start().expect("recovers");
    assert_eq!(psql(&url, "SELECT n FROM kept"), "7");
    let dir = cluster.dir().to_owned();
    drop(cluster);
    assert!(!dir.exists(), "the scratch directory is removed");
}

#[test]
fn extra_settings_reach_the_server() {
    if !available() {
        return;
    }
    let cluster = PgCluster::start_new_with(&["statement_timeout=1234"]).expect("starts");
    assert_eq!(psql(&cluster.url(), "SHOW statement_timeout"), "1234ms");
}

#[test]
fn the_machine_server_answers_and_names_are_unique() {
    let Some(url) = machine() else {
        return;
    };
    let table = unique_name("harness");
    psql(&url, &format!("CREATE TABLE {table} (n int)"));
    psql(&url, &format!("DROP TABLE {table}"));
}
