//! [`RedisCluster`]: three private `redis-server` processes joined into a three-master
//! Redis Cluster on loopback.

use std::io;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::server::RedisServer;

/// How many masters the test cluster has (no replicas).
const MASTERS: usize = 3;
/// How long the cluster has to agree on its slots after `--cluster create`.
const CONVERGE_WITHIN: Duration = Duration::from_secs(60);

/// A three-master Redis Cluster on loopback, no replicas, no persistence; every node is
/// stopped on drop.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts three nodes with `--cluster-enabled yes`, joins them with
    /// `redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes`, and waits until
    /// every node reports `cluster_state:ok` with all 16384 slots assigned.
    pub fn start() -> io::Result<RedisCluster> {
        let mut nodes = Vec::with_capacity(MASTERS);
        for _ in 0..MASTERS {
            nodes.push(RedisServer::start_with(
                &[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "5000",
                ],
                true,
            )?);
        }
        let cluster = RedisCluster { nodes };
        cluster.create()?;
        cluster.converge()?;
        Ok(cluster)
    }

    /// The nodes, in the order they were created.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// One URL per node: `redis://127.0.0.1:<port>/`.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    fn create(&self) -> io::Result<()> {
        let addresses: Vec<String> = self
            .nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port()))
            .collect();
        let output = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()?;
        if output.status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "redis-cli --cluster create failed ({}): {}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )))
        }
    }

    /// Waits (bounded) until every node sees a healthy cluster with every slot served.
    fn converge(&self) -> io::Result<()> {
        let deadline = Instant::now() + CONVERGE_WITHIN;
        loop {
            let healthy = self.nodes.iter().all(|node| {
                node.cli(&["CLUSTER", "INFO"]).is_ok_and(|info| {
                    info.contains("cluster_state:ok")
                        && info.contains("cluster_slots_ok:16384")
                        && info.contains(&format!("cluster_known_nodes:{MASTERS}"))
                })
            });
            if healthy {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(io::Error::other(format!(
                    "the test cluster did not converge within {CONVERGE_WITHIN:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
