//! Accepting connections within the server's limits: at most
//! `max_connections` open (one more is answered 503 and closed), a bounded
//! request head that must arrive within the header timeout (which also
//! closes keep-alive connections left idle), and no delay on small writes
//! (streamed events go out as they are made).

use super::limits::ServeLimits;
use crate::sweep::progress::stderr_line;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// hyper's smallest allowed read buffer.
const MIN_HEADER_BUFFER: usize = 8192;

/// Answers a connection past the limit with 503 and closes it.
async fn refuse(mut stream: TcpStream, max_connections: usize) {
    let body = serde_json::json!({"error": {
        "message": format!("{max_connections} connections are open already (specula serve --max-connections); retry later"),
        "code": 503,
    }})
    .to_string();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let write = async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

/// Serves `router` on every connection `listener` accepts, forever, each
/// holding one of the `open` permits while it lasts (none left: 503).
pub async fn accept_forever(
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    open: Arc<Semaphore>,
) {
    let mut complained = false;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, mostly: wait for some to close.
                if !complained {
                    stderr_line(&format!(
                        "specula serve: cannot accept a connection ({e}); waiting"
                    ));
                    complained = true;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        complained = false;
        let _ = stream.set_nodelay(true);
        let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
            tokio::spawn(refuse(stream, limits.max_connections));
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        let limits = limits.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_buf_size(limits.max_header_bytes.max(MIN_HEADER_BUFFER));
            let _ = http.serve_connection(TokioIo::new(stream), service).await;
        });
    }
}
