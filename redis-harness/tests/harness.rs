//! The harness itself: servers start on loopback, die, come back and freeze as told, and
//! the cluster serves every slot.

use redis_harness::{RedisCluster, RedisServer, available};

#[test]
fn a_server_can_be_killed_restarted_and_paused() {
    if !available() {
        return;
    }
    let server = RedisServer::start().expect("a server starts");
    assert_ne!(server.port(), 6379, "never the machine's own Redis");
    assert_eq!(server.cli(&["SET", "k", "v"]).unwrap().trim(), "OK");
    assert_eq!(server.cli(&["CONFIG", "GET", "save"]).unwrap(), "save\n\n");
    assert_eq!(
        server.cli(&["CONFIG", "GET", "appendonly"]).unwrap(),
        "appendonly\nno\n"
    );

    server.kill();
    assert!(!server.is_running());
    assert!(!server.answers_ping());
    assert!(server.cli(&["PING"]).is_err());

    server.restart().expect("the server restarts");
    assert!(server.answers_ping());
    assert_eq!(
        server.cli(&["EXISTS", "k"]).unwrap().trim(),
        "0",
        "nothing persisted"
    );

    server.pause().unwrap();
    assert!(server.is_running());
    assert!(!server.answers_ping(), "a paused server answers nothing");
    server.resume().unwrap();
    assert!(server.answers_ping());
    assert!(
        server.cli(&["DEBUG", "SLEEP", "0"]).is_ok(),
        "DEBUG is enabled"
    );
}

#[test]
fn a_dropped_server_stops() {
    if !available() {
        return;
    }
    let server = RedisServer::start().expect("a server starts");
    let port = server.port();
    let dir = server.dir().to_path_buf();
    drop(server);
    assert!(redis_harness::redis_cli(port, &["PING"]).is_err());
    assert!(!dir.exists());
}

#[test]
fn the_cluster_has_three_masters_serving_every_slot() {
    if !available() {
        return;
    }
    let cluster = RedisCluster::start().expect("the cluster forms");
    assert_eq!(cluster.nodes().len(), 3);
    for node in cluster.nodes() {
        let info = node.cli(&["CLUSTER", "INFO"]).unwrap();
        assert!(info.contains("cluster_state:ok"), "{info}");
        assert!(info.contains("cluster_size:3"), "{info}");
    }
    let ports: Vec<u16> = cluster.nodes().iter().map(|node| node.port()).collect();
    drop(cluster);
    for port in ports {
        assert!(redis_harness::redis_cli(port, &["PING"]).is_err());
    }
}
