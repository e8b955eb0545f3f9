//! A run made large behind the plane (write access to the file, no key): a
//! bounded read stops at its bound on the file itself, never reading the
//! run whole (R-STORE-1, R-UX-3).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use journal_core::testkit::{origin, sample_run, tenant};
use journal_core::{Journal, JournalError, Outcome, RunId, Store as _};
use store_redb::RedbStore;

/// R-STORE-1, R-UX-3: four rows of 1 MiB added to a run behind the plane,
/// then a row that does not decode: a read bounded at 2 MiB is
/// `RunTooLarge` (naming the run and the bound) without reaching that row,
/// where the whole read meets it; a run within the bound still reads whole.
#[test]
fn r_store_1_r_ux_3_a_run_made_large_behind_the_plane_is_refused_without_reading_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plane.redb");
    let (tenant, origin) = (tenant(), origin());
    let (small, large) = (RunId::new("run-small").unwrap(), RunId::new("run-large").unwrap());
    {
        let store = RedbStore::create(&path).unwrap();
        let journal = Journal::new(&store, &tenant, &origin);
        sample_run(&journal, &small, Outcome::Succeeded).unwrap();
        sample_run(&journal, &large, Outcome::Succeeded).unwrap();
        journal_core::testkit::grow_run_behind_the_plane(&store, &tenant, &large, 4);
    }
    {
        // Raw, past the large rows: a row whose bytes name an encoding no
        // build writes, which a read of the whole run meets.
        type RecordValue = (
            &'static str,
            Option<&'static str>,
            &'static [u8],
            &'static [u8],
            &'static [u8],
            Option<&'static str>,
            Option<&'static [u8]>,
        );
        let records: redb::TableDefinition<(&str, &str, u64), RecordValue> = redb::TableDefinition::new("records_z");
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let hash = [7u8; 32];
        txn.open_table(records)
            .unwrap()
            .insert(
                (tenant.as_str(), large.as_str(), 12),
                ("StepStarted", None, &hash[..], &hash[..], &[0xEE, 1, 2][..], None, None),
            )
            .unwrap();
        txn.commit().unwrap();
    }
    let store = RedbStore::open_read_only(&path).unwrap();
    let whole = store.read_run(&tenant, &large);
    assert!(matches!(whole, Err(JournalError::StoreDamage { .. })), "the whole read meets the raw row: {whole:?}");
    journal_core::testkit::a_read_bounded_at_two_mib_stops_past_the_bound(&store, &tenant, &large, &small);
}
