//! Inside the sandbox's network namespace there is only loopback: the relay listens on
//! it and carries each connection to the proxy's Unix socket, bound in from outside.

use std::path::PathBuf;
use tokio::net::{TcpListener, UnixStream};

/// Accepts forever, one task per connection.
pub async fn relay(listener: TcpListener, socket: PathBuf) -> std::io::Result<()> {
    loop {
        let (mut tcp, _) = listener.accept().await?;
        let socket = socket.clone();
        tokio::spawn(async move {
            match UnixStream::connect(&socket).await {
                Ok(mut unix) => {
                    let _ = tokio::io::copy_bidirectional(&mut tcp, &mut unix).await;
                }
                Err(e) => tracing::warn!(error = %e, "relay: the proxy socket does not answer"),
            }
        });
    }
}
