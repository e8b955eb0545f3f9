//! Test support: a log (plane) that signs checkpoints, witness servers on
//! 127.0.0.1, and a misbehaving HTTP server.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tlog::{LeafHash, MemoryHashStore};
use witness::{
    ALG_COSIGNATURE_V1, ALG_ED25519, Checkpoint, Cosigner, LogKey, SignedCheckpoint, SignerKey, TrustedWitness,
};
use witness_server::{Clock, LogConfig, WitnessConfig, WitnessServer};

pub const ORIGIN: &str = "agentplane.test/plane";

/// A log: leaves, a key, an origin.
pub struct Plane {
    pub log: MemoryHashStore,
    pub key: LogKey,
    pub origin: String,
    /// Distinguishes forks: leaf data includes it.
    pub flavour: String,
}

impl Plane {
    pub fn new(seed: u8) -> Self {
        Self::forked(seed, "honest")
    }

    pub fn forked(seed: u8, flavour: &str) -> Self {
        let key = LogKey::new(SignerKey::from_seed(ORIGIN, ALG_ED25519, [seed; 32]).unwrap()).unwrap();
        Self { log: MemoryHashStore::new(), key, origin: ORIGIN.to_owned(), flavour: flavour.to_owned() }
    }

    /// Grows to `size` leaves; leaves below `shared` are the honest ones.
    pub fn grow_to(&mut self, size: u64, shared: u64) {
        while self.log.size() < size {
            let i = self.log.size();
            let data = if i < shared { format!("run {i}") } else { format!("run {i} {}", self.flavour) };
            self.log.append(LeafHash::of(data.as_bytes()));
        }
    }

    pub fn signed(&self) -> SignedCheckpoint {
        self.key.sign(&Checkpoint::new(&witness::Origin::new(&self.origin).unwrap(), self.log.tree())).unwrap()
    }

    pub fn log_config(&self) -> LogConfig {
        LogConfig { origin: self.origin.clone(), keys: vec![self.key.verifier_key()] }
    }
}

/// A clock tests control.
pub struct FixedClock(pub AtomicU64);

impl Clock for FixedClock {
    fn now(&self) -> u64 {
        self.0.fetch_add(1, Ordering::SeqCst)
    }
}

pub fn cosigner(seed: u8, name: &str) -> Cosigner {
    Cosigner::new(SignerKey::from_seed(name, ALG_COSIGNATURE_V1, [seed; 32]).unwrap()).unwrap()
}

pub fn trusted(cosigner: &Cosigner) -> TrustedWitness {
    TrustedWitness::new(cosigner.verifier_key()).unwrap()
}

/// Starts an in-process witness server on an ephemeral port.
pub fn start_witness(cosigner: Cosigner, logs: Vec<LogConfig>, state: &Path) -> WitnessServer {
    let config = WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner,
        logs,
        clock: Arc::new(FixedClock(AtomicU64::new(1_700_000_000))),
    };
    WitnessServer::start(config, state, "127.0.0.1:0").unwrap()
}

/// What the misbehaving server does with each connection.
#[derive(Clone)]
pub enum Misbehaviour {
    /// Answer with these raw bytes (status line, headers, body).
    Raw(Vec<u8>),
    /// Read the request and never answer; hold the connection until the client gives up.
    Silent,
    /// Answer 200 announcing a 64 KiB body and send it one byte every 50 ms
    /// (a slowloris witness: each read gets a byte well within any timeout),
    /// for 10 s, then close.
    Trickle,
    /// Answer the n-th request with the n-th response (the last one repeats).
    Sequence(Arc<Vec<Vec<u8>>>, Arc<AtomicU64>),
}

/// A hand-written HTTP server on 127.0.0.1 that misbehaves. Returns its URL.
pub fn misbehaving_server(behaviour: Misbehaviour) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let behaviour = behaviour.clone();
            std::thread::spawn(move || serve_one(stream, &behaviour));
        }
    });
    url
}

/// Reads one HTTP/1.1 request off `stream`, headers then as many body bytes
/// as its Content-Length says: the body, or `None` when the connection
/// closed before the headers ended.
pub fn read_request(stream: &TcpStream) -> Option<Vec<u8>> {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut content_length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            content_length = value.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; content_length];
    let _ = reader.read_exact(&mut body);
    Some(body)
}

fn serve_one(mut stream: TcpStream, behaviour: &Misbehaviour) {
    if read_request(&stream).is_none() {
        return;
    }
    match behaviour {
        Misbehaviour::Raw(bytes) => {
            let _ = stream.write_all(bytes);
            let _ = stream.flush();
        }
        Misbehaviour::Sequence(responses, served) => {
            let n = served.fetch_add(1, Ordering::SeqCst) as usize;
            let response = responses.get(n.min(responses.len().saturating_sub(1))).cloned().unwrap_or_default();
            let _ = stream.write_all(&response);
            let _ = stream.flush();
        }
        Misbehaviour::Trickle => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 65536\r\n\r\n";
            if stream.write_all(head.as_bytes()).is_err() {
                return;
            }
            for _ in 0..200 {
                if stream.write_all(b"a").and_then(|()| stream.flush()).is_err() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        Misbehaviour::Silent => {
            // Blocks until the client closes the connection.
            let mut sink = [0u8; 64];
            while (&stream).read(&mut sink).unwrap_or(0) > 0 {}
        }
    }
}

/// An HTTP/1.1 response with a body.
pub fn http_response(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}
