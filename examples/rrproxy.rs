//! A round-robin TCP proxy for benchmarking several opdesk nodes behind one public URL (what a load balancer
//! does): each connection accepted on `--listen` goes to the next of `--to`, in turn, and is copied both ways.
//!
//! ```sh
//! target/release/examples/rrproxy --listen 127.0.0.1:4300 --to 127.0.0.1:4310,127.0.0.1:4311
//! ```

use std::{
    net::SocketAddr,
    sync::atomic::{AtomicUsize, Ordering},
};

use clap::Parser;
use tokio::net::{TcpListener, TcpStream};

#[derive(Parser)]
struct Args {
    /// Where clients connect (loopback).
    #[arg(long)]
    listen: SocketAddr,
    /// The nodes, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    to: Vec<SocketAddr>,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    if !args.listen.ip().is_loopback() || args.to.iter().any(|a| !a.ip().is_loopback()) {
        return Err(std::io::Error::other("loopback addresses only"));
    }
    let listener = TcpListener::bind(args.listen).await?;
    let next = AtomicUsize::new(0);
    loop {
        let (mut inbound, _) = listener.accept().await?;
        let to = args.to[next.fetch_add(1, Ordering::Relaxed) % args.to.len()];
        tokio::spawn(async move {
            if let Ok(mut outbound) = TcpStream::connect(to).await {
                let _ = outbound.set_nodelay(true);
                let _ = inbound.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            }
        });
    }
}
