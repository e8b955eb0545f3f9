//! The witness under load, over real HTTP: 1,000 concurrent connections
//! (held open mid-request, as slow or hostile clients do, beside a mix of
//! valid, stale, forking and malformed submissions against one origin) for a
//! bounded time. The witness never cosigns two roots for one size, its
//! memory stays bounded, and it answers an honest client throughout.
//! `AGENTPLANE_LOAD_SECONDS` sets the time (default 6).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::net::TcpStream;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use support::*;
use witness::{HttpWitness, SignedCheckpoint, Witness as _};

/// Connections held open mid-request, plus the submitters below: 1,000.
const HELD: usize = 990;
const ATTACKERS: usize = 9;

fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:")?.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Every (size, root) a trusted cosignature vouched for, seen by any client.
type Vouched = Mutex<BTreeMap<u64, BTreeSet<String>>>;

fn note_cosigned(vouched: &Vouched, signed: &SignedCheckpoint) {
    let tree = signed.checkpoint().tree();
    vouched.lock().unwrap().entry(tree.size).or_default().insert(tree.root.to_string());
}

#[test]
fn under_load_the_witness_never_cosigns_two_roots_for_one_size_and_answers_an_honest_client() {
    let seconds = std::env::var("AGENTPLANE_LOAD_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    let mut honest = Plane::new(1);
    honest.grow_to(2, u64::MAX);
    let dir = tempfile::tempdir().unwrap();
    let key = cosigner(7, "witness.test/load");
    let trusted = trusted(&key);
    let server = start_witness(key, vec![honest.log_config()], &dir.path().join("witness.redb"));
    let url = server.url();
    let address = url.trim_start_matches("http://").to_owned();

    let held: Vec<TcpStream> = (0..HELD)
        .map(|_| {
            let mut stream = TcpStream::connect(&address).unwrap();
            stream.write_all(b"POST /add-checkpoint HTTP/1.1\r\nHost: witness\r\nContent-Length: 100\r\n").unwrap();
            stream
        })
        .collect();

    let vouched: Vouched = Mutex::default();
    let history: Mutex<Vec<SignedCheckpoint>> = Mutex::new(vec![honest.signed()]);
    let stop = AtomicBool::new(false);
    let (answered, attacks, refused_attacks) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let start_memory = resident_kib();
    let peak = AtomicU64::new(start_memory);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    std::thread::scope(|scope| {
        // The honest log: grows and submits, and must be cosigned every time.
        scope.spawn(|| {
            let client = HttpWitness::new(&url, vec![trusted.clone()]).unwrap();
            while Instant::now() < deadline {
                let size = honest.log.size() + 1 + answered.load(Ordering::Relaxed) % 3;
                honest.grow_to(size, u64::MAX);
                let signed = honest.signed();
                history.lock().unwrap().push(signed.clone());
                let cosigned = client
                    .add_checkpoint(&signed, &honest.log)
                    .unwrap_or_else(|err| panic!("the honest client was refused at size {size}: {err}"));
                assert!(!cosigned.cosignatures.is_empty());
                note_cosigned(&vouched, &signed);
                answered.fetch_add(1, Ordering::Relaxed);
            }
            stop.store(true, Ordering::Relaxed);
        });
        // Memory, sampled while the load runs.
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(resident_kib(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        for attacker in 0..ATTACKERS {
            let (vouched, history, stop, attacks, refused_attacks, url, trusted) =
                (&vouched, &history, &stop, &attacks, &refused_attacks, &url, &trusted);
            scope.spawn(move || {
                let raw = reqwest::blocking::Client::new();
                let mut round = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    round += 1;
                    let known = history.lock().unwrap().clone();
                    let latest = known.last().unwrap().clone();
                    let size = latest.checkpoint().tree().size;
                    let body = match (attacker + round as usize) % 4 {
                        // Valid: the latest honest checkpoint again, as its own size.
                        0 => witness::protocol::AddCheckpointRequest {
                            old_size: size,
                            proof: tlog::ConsistencyProof::default(),
                            checkpoint_note: latest.note().to_owned(),
                        }
                        .to_body()
                        .into_bytes(),
                        // Stale: an older honest checkpoint, claiming the witness knows nothing.
                        1 => witness::protocol::AddCheckpointRequest {
                            old_size: 0,
                            proof: tlog::ConsistencyProof::default(),
                            checkpoint_note: known[known.len() / 2].note().to_owned(),
                        }
                        .to_body()
                        .into_bytes(),
                        // A fork, signed by the log's own key: same size, other leaves.
                        2 => {
                            let mut fork = Plane::forked(1, &format!("fork {attacker} {round}"));
                            fork.grow_to(size, size / 2);
                            let proof = fork.log.prove_consistency(size, size).unwrap_or_default();
                            witness::protocol::AddCheckpointRequest {
                                old_size: size,
                                proof,
                                checkpoint_note: fork.signed().note().to_owned(),
                            }
                            .to_body()
                            .into_bytes()
                        }
                        // Malformed.
                        _ => (0..200u64).map(|i| (i * 31 + round * 7 + attacker as u64) as u8).collect(),
                    };
                    attacks.fetch_add(1, Ordering::Relaxed);
                    let Ok(response) = raw.post(format!("{url}/add-checkpoint")).body(body.clone()).send() else {
                        continue;
                    };
                    let status = response.status().as_u16();
                    let text = response.text().unwrap_or_default();
                    if status != 200 {
                        refused_attacks.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    // A 200: whatever it vouched for goes into the record.
                    let Ok(request) = witness::protocol::AddCheckpointRequest::parse(&body) else {
                        panic!("the witness cosigned a malformed request: {text}");
                    };
                    let (signed, _) = SignedCheckpoint::open(
                        request.checkpoint_note.as_bytes(),
                        &[&Plane::new(1).key.verifier_key()],
                    )
                    .unwrap();
                    let cosigned = witness::quorum::verified_cosignatures(
                        url,
                        signed.checkpoint(),
                        &text,
                        std::slice::from_ref(trusted),
                        200,
                    );
                    if cosigned.is_ok() {
                        note_cosigned(vouched, &signed);
                    }
                }
            });
        }
    });
    drop(held);
    let vouched = vouched.into_inner().unwrap();
    for (size, roots) in &vouched {
        assert_eq!(roots.len(), 1, "the witness cosigned {} roots for size {size}: {roots:?}", roots.len());
    }
    let answered = answered.load(Ordering::Relaxed);
    assert!(answered >= 5, "the honest client was answered {answered} times in {seconds} s");
    assert!(refused_attacks.load(Ordering::Relaxed) > 0, "the forks, stale and malformed submissions were refused");
    let grown = peak.load(Ordering::Relaxed).saturating_sub(start_memory);
    assert!(grown < 256 * 1024, "memory grew by {grown} KiB under load");
    eprintln!(
        "load: {HELD} held connections, {} attacks ({} refused), honest client cosigned {answered} times, {} sizes \
         vouched, memory +{grown} KiB",
        attacks.load(Ordering::Relaxed),
        refused_attacks.load(Ordering::Relaxed),
        vouched.len()
    );
}
