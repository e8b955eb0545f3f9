//! Group commit of the witness's state (issue 25's witness figure): logs
//! submitting at once share write transactions, and each is still cosigned
//! only on top of its own last cosigned checkpoint, durably (R-WIT-6).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use support::*;
use tlog::MemoryHashStore;
use witness::{ALG_ED25519, HttpWitness, LogKey, SignerKey, Witness as _, WitnessReader};

const LOGS: u8 = 8;
const ROUNDS: u64 = 20;

fn plane(index: u8) -> Plane {
    let origin = format!("agentplane.test/plane-{index}");
    let key = LogKey::new(SignerKey::from_seed(&origin, ALG_ED25519, [index + 100; 32]).unwrap()).unwrap();
    Plane { log: MemoryHashStore::new(), key, origin, flavour: "honest".to_owned() }
}

/// Eight logs submit twenty growing checkpoints each, all at once: every
/// submission is cosigned, each origin's stored note is its own latest
/// checkpoint (after a restart too: the state was durable before the
/// answers), and the 160 submissions took fewer write transactions than
/// submissions (a log's own submissions are sequential, so at least 20).
#[test]
fn r_wit_6_logs_submitting_at_once_share_commits_and_each_is_cosigned_on_its_own_state() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let key = cosigner(7, "witness.test/group");
    let trusted = trusted(&key);
    let planes: Vec<Plane> = (0..LOGS).map(plane).collect();
    let configs: Vec<_> = planes.iter().map(Plane::log_config).collect();
    let server = start_witness(key.clone(), configs.clone(), &state);
    let url = server.url();
    let finished: Vec<(String, tlog::Tree)> = std::thread::scope(|scope| {
        let running: Vec<_> = planes
            .into_iter()
            .map(|mut plane| {
                let (url, trusted) = (&url, &trusted);
                scope.spawn(move || {
                    let client = HttpWitness::new(url, vec![trusted.clone()]).unwrap();
                    for round in 1..=ROUNDS {
                        plane.grow_to(round * 3, u64::MAX);
                        let signed = plane.signed();
                        let cosigned = client
                            .add_checkpoint(&signed, &plane.log)
                            .unwrap_or_else(|err| panic!("{} refused at round {round}: {err}", plane.origin));
                        assert_eq!(cosigned.checkpoint.tree(), plane.log.tree());
                    }
                    (plane.origin.clone(), plane.log.tree())
                })
            })
            .collect();
        running.into_iter().map(|handle| handle.join().unwrap()).collect()
    });
    let submissions = u64::from(LOGS) * ROUNDS;
    let commits = server.state_commits();
    assert!(commits >= ROUNDS && commits < submissions, "{commits} commits for {submissions} submissions");
    let reader = WitnessReader::new(&url, vec![trusted.clone()]).unwrap();
    for (origin, tree) in &finished {
        assert_eq!(reader.latest(origin).unwrap().checkpoint.tree(), *tree, "{origin}");
    }
    server.shutdown();
    let restarted = start_witness(key, configs, &state);
    let reader = WitnessReader::new(&restarted.url(), vec![trusted]).unwrap();
    for (origin, tree) in &finished {
        assert_eq!(reader.latest(origin).unwrap().checkpoint.tree(), *tree, "{origin} after a restart");
    }
}
