//! Storage layouts (issue 25, R-STORE-3): a new file is of layout 2 (each
//! record's bytes compressed); a file of layout 1 is read and written as it
//! is until `RedbStore::migrate`; a build of layout 1 refuses a file of
//! layout 2 instead of reading no record; this build refuses a newer
//! layout as build skew; a forged compressed row is damage, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::path::Path;

use redb::ReadableTable as _;

use journal_core::testkit::{origin, sample_run, tenant};
use journal_core::{Journal, JournalError, Outcome, RunId, Store as _};
use store_redb::{OpenError, RedbStore};

type RecordValue<'a> = (&'a str, Option<&'a str>, &'a [u8], &'a [u8], &'a [u8], Option<&'a str>, Option<&'a [u8]>);
/// Layout 1's records table, as builds of layout 1 open it.
const LAYOUT_1_RECORDS: redb::TableDefinition<(&str, &str, u64), RecordValue> = redb::TableDefinition::new("records");
const LAYOUT_2_RECORDS: redb::TableDefinition<(&str, &str, u64), RecordValue> = redb::TableDefinition::new("records_z");
const META: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");

fn table_names(path: &Path) -> Vec<String> {
    let db = redb::Database::open(path).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    txn.list_tables().unwrap().map(|t| redb::TableHandle::name(&t).to_owned()).collect()
}

/// A file as builds of layout 1 made it: their records table exists before
/// this build first opens the file.
fn layout_1_file(path: &Path) {
    let db = redb::Database::create(path).unwrap();
    let txn = db.begin_write().unwrap();
    txn.open_table(LAYOUT_1_RECORDS).unwrap();
    txn.commit().unwrap();
}

/// `run`, a sample run ending in `outcome`, written through `store` (then
/// closed); its rows as read back.
fn one_run(store: RedbStore, run: &RunId, outcome: Outcome) -> Vec<journal_core::StoredRecord> {
    let (tenant, origin) = (tenant(), origin());
    sample_run(&Journal::new(&store, &tenant, &origin), run, outcome).unwrap();
    store.read_run(&tenant, run).unwrap().rows
}

#[test]
fn r_store_3_a_new_file_compresses_its_records_and_an_older_build_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let tenant = tenant();
    let run = RunId::new("run-a").unwrap();
    let rows = one_run(RedbStore::create(&path).unwrap(), &run, Outcome::Succeeded);
    let db = redb::Database::open(&path).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let stored = txn.open_table(LAYOUT_2_RECORDS).unwrap();
    let mut stored_bytes = 0;
    for row in &rows {
        let value = stored.get((tenant.as_str(), run.as_str(), row.seq)).unwrap().unwrap();
        let kept = value.value().4;
        assert_ne!(kept, row.bytes.as_slice(), "seq {}: not the bytes as written", row.seq);
        stored_bytes += kept.len();
    }
    let written: usize = rows.iter().map(|row| row.bytes.len()).sum();
    assert!(stored_bytes * 2 < written, "{stored_bytes} bytes kept for {written} written");
    // What a build of layout 1 does first with a file: open its records table.
    match txn.open_table(LAYOUT_1_RECORDS) {
        Err(redb::TableError::TableTypeMismatch { .. }) => {}
        other => panic!("a build of layout 1 must be refused, not handed a table: {:?}", other.map(|_| ())),
    }
}

#[test]
fn r_store_3_a_layout_1_file_is_read_and_written_as_it_is_until_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    layout_1_file(&path);
    let (tenant, origin) = (tenant(), origin());
    let run = RunId::new("run-a").unwrap();
    let rows = one_run(RedbStore::open(&path).unwrap(), &run, Outcome::Failed);
    assert!(!table_names(&path).contains(&"records_z".to_owned()), "{:?}", table_names(&path));
    {
        // A build of layout 1 reads the appends of this one as its own.
        let db = redb::Database::open(&path).unwrap();
        let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
        let records = txn.open_table(LAYOUT_1_RECORDS).unwrap();
        for row in &rows {
            let value = records.get((tenant.as_str(), run.as_str(), row.seq)).unwrap().unwrap();
            assert_eq!(value.value().4, row.bytes.as_slice());
        }
    }
    let migration = RedbStore::migrate(&path).unwrap();
    assert_eq!((migration.from, migration.to), (1, store_redb::LAYOUT));
    let backup = migration.backup.unwrap();
    assert_eq!(backup, RedbStore::backup_path(&path));
    for (file, layout) in [(&path, store_redb::LAYOUT), (&backup, 1)] {
        let store = RedbStore::open_read_only(file).unwrap();
        assert_eq!(store.read_run(&tenant, &run).unwrap().rows, rows, "{} (layout {layout})", file.display());
    }
    // Appends go on after the migration, compressed, behind the moved rows.
    {
        let store = RedbStore::open(&path).unwrap();
        let more = RunId::new("run-b").unwrap();
        sample_run(&Journal::new(&store, &tenant, &origin), &more, Outcome::Succeeded).unwrap();
        assert_eq!(store.read_run(&tenant, &run).unwrap().rows, rows);
        assert!(!store.read_run(&tenant, &more).unwrap().rows.is_empty());
    }
    let again = RedbStore::migrate(&path).unwrap();
    assert_eq!((again.from, again.to, again.backup), (store_redb::LAYOUT, store_redb::LAYOUT, None));
}

/// A new store file whose bookkeeping then names `layout`, as someone with
/// the file (or a build of that layout) left it.
fn a_file_naming_layout(path: &Path, layout: u64) {
    drop(RedbStore::create(path).unwrap());
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    txn.open_table(META).unwrap().insert("layout", layout).unwrap();
    txn.commit().unwrap();
}

#[test]
fn r_store_3_a_newer_layout_is_build_skew_for_every_opening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    a_file_naming_layout(&path, 3);
    let newer = |result: Result<(), OpenError>| match result {
        Err(OpenError::NewerLayout { layout: 3, .. }) => {}
        other => panic!("a file of layout 3 must be refused as build skew: {other:?}"),
    };
    newer(RedbStore::open(&path).map(drop));
    newer(RedbStore::open_read_only(&path).map(drop));
    newer(RedbStore::open_read_only_or_repaired_copy(&path).map(drop));
    newer(RedbStore::migrate(&path).map(drop));
}

/// Someone with the file and no key rewrites a compressed row with bytes
/// that are no zstd frame, or a frame claiming a terabyte: reading the run
/// is a typed store damage finding, never a panic or an allocation.
#[test]
fn r_aud_1_a_forged_compressed_row_is_store_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let (tenant, origin) = (tenant(), origin());
    let run = RunId::new("run-a").unwrap();
    {
        let store = RedbStore::create(&path).unwrap();
        sample_run(&Journal::new(&store, &tenant, &origin), &run, Outcome::Succeeded).unwrap();
    }
    let mut huge = vec![1_u8, 0x28, 0xb5, 0x2f, 0xfd, 0xe0];
    huge.extend_from_slice(&(1_u64 << 40).to_le_bytes());
    for forged in [vec![1_u8, 0, 1, 2, 3], huge, vec![7_u8, b'{'], Vec::new()] {
        {
            let db = redb::Database::open(&path).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut records = txn.open_table(LAYOUT_2_RECORDS).unwrap();
                let key = (tenant.as_str(), run.as_str(), 2_u64);
                let value = records.get(key).unwrap().unwrap();
                let (kind, effect_key, prev, hash, _, key_id, signature) = value.value();
                let (kind, effect_key, prev, hash) =
                    (kind.to_owned(), effect_key.map(str::to_owned), prev.to_vec(), hash.to_vec());
                let (key_id, signature) = (key_id.map(str::to_owned), signature.map(<[u8]>::to_vec));
                drop(value);
                records
                    .insert(
                        key,
                        (
                            kind.as_str(),
                            effect_key.as_deref(),
                            prev.as_slice(),
                            hash.as_slice(),
                            forged.as_slice(),
                            key_id.as_deref(),
                            signature.as_deref(),
                        ),
                    )
                    .unwrap();
            }
            txn.commit().unwrap();
        }
        let store = RedbStore::open_read_only(&path).unwrap();
        match store.read_run(&tenant, &run) {
            Err(JournalError::StoreDamage { detail, .. }) => assert!(detail.contains("record 2"), "{detail}"),
            other => panic!("{forged:?}: {:?}", other.map(|rows| rows.rows.len())),
        }
        let report = audit::audit(&store, &audit::AuditInputs::new(tenant.clone(), origin.clone())).unwrap();
        assert!(
            report
                .findings
                .iter()
                .any(|finding| finding.code == audit::FindingCode::ChainBroken && finding.seq == Some(2)),
            "{forged:?}: the audit finds the forged row: {:#?}",
            report.findings
        );
    }
}

/// R-STORE-3: `migrate` writes its backup under a temporary name beside the
/// file. Someone who may write to that directory plants a symlink at the
/// name it used (`journal.redb.layout1.partial`) pointing at a file of the
/// operator's: the copy went through the link and overwrote that file. The
/// copy is now made in a file created fresh (never through a link).
#[cfg(unix)]
#[test]
fn r_store_3_migrate_never_writes_its_backup_through_a_planted_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    layout_1_file(&path);
    let tenant = tenant();
    let run = RunId::new("run-a").unwrap();
    let rows = one_run(RedbStore::open(&path).unwrap(), &run, Outcome::Succeeded);
    let victim = dir.path().join("precious.txt");
    std::fs::write(&victim, b"the operator's own file").unwrap();
    let mut partial = RedbStore::backup_path(&path).into_os_string();
    partial.push(".partial");
    std::os::unix::fs::symlink(&victim, &partial).unwrap();
    let migration = RedbStore::migrate(&path).unwrap();
    assert!(std::fs::read(&victim).unwrap() == b"the operator's own file", "written through the symlink");
    let backup = migration.backup.unwrap();
    assert!(!std::fs::symlink_metadata(&backup).unwrap().file_type().is_symlink(), "the backup is a file");
    assert_eq!(RedbStore::open_read_only(&backup).unwrap().read_run(&tenant, &run).unwrap().rows, rows);
    assert_eq!(RedbStore::open_read_only(&path).unwrap().read_run(&tenant, &run).unwrap().rows, rows);
}

/// R-STORE-3: a file naming a layout newer than this build's is refused by
/// every opening as build skew, `compact` included: it opened the file and
/// rewrote every table it knows by the types of its own layout.
#[test]
fn r_store_3_compact_refuses_a_newer_layout_as_build_skew() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    a_file_naming_layout(&path, 3);
    match RedbStore::compact(&path) {
        Err(OpenError::NewerLayout { layout: 3, .. }) => {}
        other => panic!("a file of layout 3 must be refused as build skew: {other:?}"),
    }
}

/// R-STORE-3, R-AUD-1: a layout-2 file whose `meta` no longer names its
/// layout, its `records` marker gone or kept (deleted by someone with the
/// file). With the marker gone a writer took it for layout 2 (its only
/// records table is `records_z`), but a read-only opening, the audit's,
/// took it for layout 1 and read no record at all: two openings of one file
/// read different tables. With the marker kept every opening took it for
/// layout 1 and failed with redb's "table type mismatch", an I/O error that
/// named nothing (noted in session 19). Every opening now decides the
/// layout by the same rule: a file holding `records_z` is layout 2.
#[test]
fn r_store_3_a_file_stripped_of_its_layout_name_reads_alike_for_every_opening() {
    for keep_marker in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.redb");
        let tenant = tenant();
        let run = RunId::new("run-a").unwrap();
        let rows = one_run(RedbStore::create(&path).unwrap(), &run, Outcome::Succeeded);
        {
            let db = redb::Database::open(&path).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(META).unwrap().remove("layout").unwrap();
            if !keep_marker {
                txn.delete_table(redb::TableDefinition::<&str, &str>::new("records")).unwrap();
            }
            txn.commit().unwrap();
        }
        assert_eq!(table_names(&path).contains(&"records".to_owned()), keep_marker);
        let read_only = RedbStore::open_read_only(&path).unwrap();
        let read = read_only.read_run(&tenant, &run).map(|run| run.rows);
        assert!(read.as_ref().ok() == Some(&rows), "read-only, marker kept {keep_marker}: {:?}", read.map(|r| r.len()));
        assert_eq!(read_only.snapshot(&tenant).unwrap().runs.get(&run).map(|r| r.rows.len()), Some(rows.len()));
        drop(read_only);
        let writer = RedbStore::open(&path).unwrap();
        assert!(writer.read_run(&tenant, &run).unwrap().rows == rows, "writer, marker kept {keep_marker}");
    }
}

/// R-STORE-3, R-CHAIN-1: the chain commits to `row.bytes`, so what a
/// layout-2 file keeps must decode to exactly them. `AppendRequest` carries
/// a public `encoded_bytes`, and the store kept whatever a caller put there
/// instead of encoding `row.bytes` itself: a request whose encoding is of
/// other bytes was stored as those, and read back as bytes no chain hash
/// covers. The store now always encodes the row itself.
#[test]
fn r_store_3_an_append_keeps_the_encoding_of_its_own_row_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let tenant = tenant();
    let run = RunId::new("run-a").unwrap();
    let rows = one_run(RedbStore::create(&dir.path().join("source.redb")).unwrap(), &run, Outcome::Failed);
    let store = RedbStore::create(&dir.path().join("journal.redb")).unwrap();
    let mut head = None;
    for row in &rows {
        let request = journal_core::AppendRequest {
            tenant: tenant.clone(),
            run: run.clone(),
            expected_head: head,
            row: row.clone(),
            idempotency_key: (row.seq == 1).then(|| "idem-run-a".to_owned()),
            conclusion: None,
            // Tag 0 (plain), then bytes that are not the row's.
            encoded_bytes: Some(b"\0{\"kind\":\"something else\"}".to_vec()),
        };
        store.append(request).unwrap();
        head = Some(journal_core::ExpectedHead { seq: row.seq, hash: row.hash });
    }
    let read = store.read_run(&tenant, &run).unwrap().rows;
    let same = read.iter().zip(&rows).filter(|(read, row)| read.bytes == row.bytes).count();
    assert_eq!((read.len(), same), (rows.len(), rows.len()), "every row reads back as its own bytes");
}

/// R-STORE-3: a `meta` naming layout 0, which no build writes, is damage,
/// never build skew: it was refused as "storage layout 0, newer than this
/// build reads ... use that build or a later one" (exit 3), sending the
/// operator after a build that does not exist. Its own variant, so the
/// command line's exit is damage's (1), not I/O's (review 65's note).
#[test]
fn r_store_3_a_layout_no_build_writes_is_damage_not_build_skew() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    a_file_naming_layout(&path, 0);
    let damaged = |what: &str, result: Result<(), OpenError>| match result {
        Err(err @ OpenError::DamagedLayout { .. }) => assert!(err.to_string().contains("is damaged"), "{what}: {err}"),
        other => panic!("{what}: a file naming layout 0 is damage: {other:?}"),
    };
    damaged("open", RedbStore::open(&path).map(drop));
    damaged("open_read_only", RedbStore::open_read_only(&path).map(drop));
    damaged("migrate", RedbStore::migrate(&path).map(drop));
    damaged("compact", RedbStore::compact(&path).map(drop));
}

/// Noted in session 19, fixed in session 20: a writer opening a redb
/// database of another program (given by mistake as `--store`) added
/// agentplane's tables to it. It is refused now and left as it was.
#[test]
fn r_store_3_a_writer_never_adds_its_tables_to_another_programs_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.redb");
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(redb::TableDefinition::<&str, &str>::new("settings")).unwrap().insert("theme", "dark").unwrap();
        txn.commit().unwrap();
    }
    let before = table_names(&path);
    for opened in [RedbStore::open(&path).map(drop), RedbStore::create(&path).map(drop)] {
        let err = opened.unwrap_err();
        assert!(err.to_string().contains("another program"), "{err}");
    }
    assert_eq!(table_names(&path), before, "none of agentplane's tables were added");
}
