//! Witnesses that misbehave over real TCP: one that answers a fixed response
//! (a lying witness, a witness without the monitor endpoint), one that accepts
//! and never answers (a stalled witness), and a closed port.
//!
//! Shared by the audit's and the CLI's tests (`#[path]`): std only.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};

/// A server answering every request with `status` and `body`; its URL.
pub fn canned(status: u16, body: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            if read_head(&mut stream).is_none() {
                continue;
            }
            let reason = if status == 200 { "OK" } else { "Not Found" };
            let _ = write!(
                stream,
                "HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// A server that accepts every connection and never answers; its URL.
pub fn silent() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    url
}

/// A URL on a port nothing listens on (bound, then released).
pub fn closed() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(buf.get(..n)?);
    }
    Some(head)
}
