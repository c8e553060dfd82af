//! [`Proxy`]: a round-robin TCP proxy on 127.0.0.1, the load balancer of the cluster tests.
//! Each connection goes to the next instance; one that refuses the connection (stopped, or
//! restarting) is skipped, as a load balancer's health check would, and counted.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::net::{TcpListener, TcpStream};

/// The proxy (see the module); it stops when dropped.
pub struct Proxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    /// Connections an instance refused, sent on to the next one.
    pub skipped: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Starts it in front of `upstreams`.
    pub async fn start(upstreams: Vec<SocketAddr>) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let skipped = Arc::new(AtomicU64::new(0));
        let next = Arc::new(AtomicUsize::new(0));
        let upstreams = Arc::new(upstreams);
        let counted = skipped.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                let (upstreams, next, skipped) = (upstreams.clone(), next.clone(), counted.clone());
                tokio::spawn(async move {
                    for _ in 0..upstreams.len() {
                        let to = upstreams[next.fetch_add(1, Ordering::Relaxed) % upstreams.len()];
                        match TcpStream::connect(to).await {
                            Ok(mut outbound) => {
                                let _ = outbound.set_nodelay(true);
                                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound)
                                    .await;
                                return;
                            }
                            Err(_) => {
                                skipped.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    // Every instance refused: the client sees its connection closed.
                });
            }
        });
        Proxy {
            addr,
            skipped,
            task,
        }
    }

    /// `http://ADDR/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
