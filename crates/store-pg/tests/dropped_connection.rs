//! A connection to the server dropped while the plane reads the proof that
//! the log extends its last signature (review 44: `agentplane checkpoint`
//! run while a DBA or a failover ends sessions): the failure is I/O, never
//! a verdict on the log's history.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

use journal_core::log::{HighWater, HighWaterMark, sign_head};
use journal_core::testkit::{MemoryHighWater, sample_run};
use journal_core::testkit_faults::{RoutedStore, StoreCall};
use journal_core::{ErrorClass, Journal, JournalError, LogView, Outcome, RunId, Store};
use store_pg::PgStore;

/// Takes an exclusive lock on `log_nodes` in a session of its own, says so,
/// waits until a session queues behind it, ends that session with
/// `pg_terminate_backend` (as a DBA, a failover or a pooler does), then
/// lets the lock go. Returns once the lock is held.
fn terminate_the_next_reader_of_log_nodes(url: &str) {
    let (locked, held) = mpsc::channel();
    let url = url.to_owned();
    std::thread::spawn(move || {
        let mut holder = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let mut killer = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        holder.batch_execute("BEGIN; LOCK TABLE log_nodes IN ACCESS EXCLUSIVE MODE").unwrap();
        locked.send(()).unwrap();
        let holder_pid: i32 = holder.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
        // Bounded: the reader queues within milliseconds of the lock.
        for _ in 0..2_000 {
            let ended: i64 = killer
                .query_one(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
                     WHERE wait_event_type = 'Lock' AND pid <> $1 AND query LIKE '%log_nodes%'",
                    &[&holder_pid],
                )
                .unwrap()
                .get(0);
            if ended > 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        holder.batch_execute("ROLLBACK").unwrap();
    });
    held.recv().unwrap();
}

/// R-PLANE-2 (review 44): the plane signed size 3 (its mark), two more runs
/// sealed, and the connection reading the consistency proof from 3 to 5 was
/// terminated by the server. `checkpoint` said "the log of 5 does not extend
/// the checkpoint of 3 this plane signed before (no consistency proof:
/// storage: reading log nodes: terminating connection ...): its history was
/// rewritten", `WouldSignRollback`, exit 1: a tamper alarm over a dropped
/// connection, seen in a live plane whose sessions were being ended. It is
/// the store's I/O failure (retryable), nothing is signed, and the next
/// checkpoint signs the log of 5.
#[test]
fn r_plane_2_a_connection_dropped_while_the_extension_proof_is_read_is_io_never_a_rewritten_history() {
    let url = store_pg::testkit::fresh_database();
    let pg: Arc<dyn Store> = Arc::new(PgStore::open(&url).unwrap());
    let tenant = journal_core::testkit::tenant();
    let origin = journal_core::testkit::origin();
    let journal = Journal::new(&*pg, &tenant, &origin);
    let signer = witness::SignerKey::from_seed(journal_core::testkit::ORIGIN, witness::ALG_ED25519, [44; 32]).unwrap();
    let key = witness::LogKey::new(signer).unwrap();
    let mark = MemoryHighWater::default();
    for i in 0..3 {
        sample_run(&journal, &RunId::new(&format!("run-{i}")).unwrap(), Outcome::Succeeded).unwrap();
    }
    let view = LogView::open(&*pg, &tenant).unwrap();
    sign_head(&*pg, &view, &origin, &key, Some(&mark)).unwrap();
    for i in 3..5 {
        sample_run(&journal, &RunId::new(&format!("run-{i}")).unwrap(), Outcome::Succeeded).unwrap();
    }

    // The head is read; the origin of its leaves checked (`seal_at`); the
    // next read of log nodes is the proof that 5 extends the mark's 3.
    let armed = Arc::new(AtomicBool::new(false));
    let route = {
        let (pg, armed, url) = (Arc::clone(&pg), Arc::clone(&armed), url.clone());
        move |call: StoreCall| {
            if call == StoreCall::SealAt {
                armed.store(true, Ordering::SeqCst);
            }
            if call == StoreCall::ReadLogNodes && armed.swap(false, Ordering::SeqCst) {
                terminate_the_next_reader_of_log_nodes(&url);
            }
            Arc::clone(&pg)
        }
    };
    let routed = RoutedStore::new(Box::new(route));
    let view = LogView::open(&routed, &tenant).unwrap();
    let dropped = sign_head(&routed, &view, &origin, &key, Some(&mark));
    assert!(
        matches!(&dropped, Err(err) if err.class() == ErrorClass::Io && !err.is_tamper()),
        "a dropped connection is I/O, never a rewritten history: {dropped:?}"
    );
    assert!(!matches!(dropped, Err(JournalError::WouldSignRollback { .. })));
    assert_eq!(mark.last(&origin).unwrap(), HighWaterMark::Signed(pg.signed_checkpoints(&tenant).unwrap()[0].tree));

    let view = LogView::open(&*pg, &tenant).unwrap();
    let signed = sign_head(&*pg, &view, &origin, &key, Some(&mark)).unwrap();
    assert_eq!(signed.checkpoint().tree().size, 5, "the next checkpoint signs the log as it is");
}
