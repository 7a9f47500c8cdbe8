//! A TCP relay on loopback in front of a server that counts the
//! connections open at once. A client sending one request after another
//! keeps one connection; requests in flight together need one each.

use std::io::{copy, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub struct Relay {
    pub url: String,
    peak: Arc<AtomicUsize>,
}

impl Relay {
    /// Relays to `upstream` (`host:port`).
    pub fn start(upstream: &str) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let peak = Arc::new(AtomicUsize::new(0));
        let open = Arc::new(AtomicUsize::new(0));
        let upstream = upstream.to_string();
        let counted = Arc::clone(&peak);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { continue };
                let Ok(mut server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let now = open.fetch_add(1, Ordering::SeqCst) + 1;
                counted.fetch_max(now, Ordering::SeqCst);
                let mut client_back = client.try_clone().unwrap();
                let mut server_back = server.try_clone().unwrap();
                std::thread::spawn(move || {
                    let _ = copy(&mut client, &mut server);
                    let _ = server.shutdown(Shutdown::Write);
                });
                let open = Arc::clone(&open);
                std::thread::spawn(move || {
                    let _ = copy(&mut server_back, &mut client_back);
                    let _ = client_back.flush();
                    let _ = client_back.shutdown(Shutdown::Both);
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Relay { url, peak }
    }

    /// The most connections that were open at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}
