//! A server in the test's own process, on a free loopback port, stopped when dropped.

use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A running in-process server.
pub struct Served {
    pub address: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `router` with axum on 127.0.0.1 and a free port.
pub async fn serve_axum(router: axum::Router) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free loopback port");
    let address = listener.local_addr().expect("the bound address");
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Served { address, task }
}
