//! A rolling upgrade on one PostgreSQL database: see `tests/shared/rolling_upgrade.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../../tests/shared/rolling_upgrade.rs"]
mod shared;

use std::sync::Arc;

/// R-VER-4, R-RUN-5: see [`shared::an_effect_ended_past_a_newer_builds_conclusion_is_build_skew`].
#[test]
fn r_ver_4_an_effect_ended_past_a_newer_builds_conclusion_of_an_unknown_outcome_is_build_skew() {
    let store = Arc::new(store_pg::PgStore::temporary().unwrap());
    shared::an_effect_ended_past_a_newer_builds_conclusion_is_build_skew(store, store_pg::PgStore::name_outcome);
}

/// The steps of the schema-skew tests below.
mod schema_skew {
    use journal_core::{BuildSkew, Journal, JournalError, Origin, RunId, TenantId};
    use postgres::{Client, NoTls};
    use store_pg::{PgStore, SCHEMA_VERSION};

    pub fn tenant() -> TenantId {
        TenantId::new("t").unwrap()
    }

    pub fn origin() -> Origin {
        Origin::new("pg.test/schema-skew").unwrap()
    }

    pub fn step(name: &str) -> journal_core::RecordBody {
        journal_core::RecordBody::StepStarted(journal_core::record::StepMark { step: name.into() })
    }

    /// A session as `psql` or a build older than this one opens it: no
    /// schema version declared.
    pub fn undeclared(url: &str) -> Client {
        Client::connect(url, NoTls).unwrap()
    }

    /// Every table of the schema but the version's own: what a writer writes.
    pub fn journal_tables(client: &mut Client) -> Vec<String> {
        client
            .query(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()
                 AND tablename <> 'agentplane_schema' ORDER BY 1",
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect()
    }

    /// The tables on which a write of `client`'s session is not refused
    /// with the schema-skew SQLSTATE (`AP002`); a statement-level check fires
    /// for a statement that touches no row too.
    pub fn tables_not_guarded(client: &mut Client) -> Vec<String> {
        let mut open = Vec::new();
        for table in journal_tables(client) {
            match client.batch_execute(&format!("DELETE FROM {table} WHERE false")) {
                Err(err) if err.code().map(|c| c.code()) == Some("AP002") => {}
                other => open.push(format!("{table}: {other:?}")),
            }
        }
        open
    }

    pub fn count(client: &mut Client, table: &str) -> i64 {
        client.query_one(&format!("SELECT count(*) FROM {table}"), &[]).unwrap().get(0)
    }

    /// An append of `store` is a typed build skew naming `found` and this build's version.
    pub fn assert_schema_skew(refused: &JournalError, found: i32) {
        assert!(refused.is_build_skew(), "{refused:?}");
        let JournalError::BuildSkew(skew) = refused else { panic!("{refused:?}") };
        assert!(
            matches!(skew.as_ref(), BuildSkew::StoreSchema { found: Some(f), this_build, .. }
                if *f == i64::from(found) && *this_build == i64::from(SCHEMA_VERSION)),
            "{skew:?}"
        );
        let message = refused.to_string();
        assert!(message.contains(&format!("version {found}")) && message.contains("replace"), "{message}");
    }

    pub fn appends(store: &PgStore, run: &str) -> Result<(), JournalError> {
        let (tenant, origin) = (tenant(), origin());
        let journal = Journal::new(store, &tenant, &origin);
        let run = RunId::new(run).unwrap();
        let head = journal.append(&run, None, None, step("a"))?.head;
        journal.append(&run, Some(head), None, step("b")).map(|_| ())
    }
}

/// R-VER-4, R-STORE-3: a newer build migrates the database (its version
/// row raised) behind a process of this build that opened it before: that
/// process's next append, plain (one statement) or not (a transaction), is
/// refused as build skew naming the version and the remedy, and nothing of
/// it is written (it used to go on writing under its old idea of the schema).
#[test]
fn r_ver_4_appends_of_a_process_whose_store_a_newer_build_migrated_are_build_skew() {
    use journal_core::{Journal, RunId};
    let url = store_pg::testkit::fresh_database();
    let store = store_pg::PgStore::open(&url).unwrap();
    let (tenant, origin) = (schema_skew::tenant(), schema_skew::origin());
    let journal = Journal::new(&store, &tenant, &origin);
    let run = RunId::new("run-1").unwrap();
    let head = journal.append(&run, None, None, schema_skew::step("a")).unwrap().head;
    let mut newer = schema_skew::undeclared(&url);
    let (records, runs) = (schema_skew::count(&mut newer, "records"), schema_skew::count(&mut newer, "runs"));
    let raised = store_pg::SCHEMA_VERSION + 1;
    newer.execute("UPDATE agentplane_schema SET version = $1", &[&raised]).unwrap();

    let plain = journal.append(&run, Some(head), None, schema_skew::step("b")).unwrap_err();
    schema_skew::assert_schema_skew(&plain, raised);
    let new_run = journal.append(&RunId::new("run-2").unwrap(), None, None, schema_skew::step("a")).unwrap_err();
    schema_skew::assert_schema_skew(&new_run, raised);
    assert_eq!(schema_skew::count(&mut newer, "records"), records, "nothing was written");
    assert_eq!(schema_skew::count(&mut newer, "runs"), runs, "nothing was written");
}

/// R-VER-4: a session that declares no schema version (a build older than
/// this one, or `psql` by hand) writes no table of the journal, and one that
/// declares another version is refused as well; declaring the store's
/// version is what lets a write through. Every table of the schema is
/// guarded, tables a later migration adds included.
#[test]
fn r_ver_4_a_session_that_does_not_declare_the_schema_version_writes_nothing() {
    let url = store_pg::testkit::fresh_database();
    let store = store_pg::PgStore::open(&url).unwrap();
    schema_skew::appends(&store, "run-1").unwrap();
    let mut raw = schema_skew::undeclared(&url);
    let refused = raw
        .execute(
            "INSERT INTO records (tenant, run, seq, kind, effect_key, prev_hash, hash, bytes)
             VALUES ('t', 'run-1', 3, 'StepStarted', NULL, '\\x00', '\\x00', '\\x00')",
            &[],
        )
        .unwrap_err();
    assert_eq!(refused.code().map(|c| c.code()), Some("AP002"), "{refused}");
    let message = refused.as_db_error().map(|db| db.message().to_owned()).unwrap_or_default();
    assert!(message.contains("agentplane.schema_version"), "{message}");
    let tables = schema_skew::journal_tables(&mut raw);
    assert!(tables.len() >= 12, "{tables:?}");
    assert_eq!(schema_skew::tables_not_guarded(&mut raw), Vec::<String>::new());
    raw.batch_execute(&format!("SET agentplane.schema_version = '{}'", store_pg::SCHEMA_VERSION - 1)).unwrap();
    assert_eq!(schema_skew::tables_not_guarded(&mut raw), Vec::<String>::new(), "an older build's version");
    raw.batch_execute(&format!("SET agentplane.schema_version = '{}'", store_pg::SCHEMA_VERSION)).unwrap();
    raw.batch_execute("DELETE FROM idempotency WHERE false").unwrap();
    assert_eq!(schema_skew::count(&mut raw, "records"), 2);
}

/// R-STORE-3, R-VER-4: a database at every older schema version is migrated
/// to this one (5 -> 6 is the one that guards the tables), takes this
/// build's appends, and then refuses a session that declares no version.
#[test]
fn r_store_3_every_older_schema_migrates_to_this_one_and_is_guarded() {
    for version in 1..store_pg::SCHEMA_VERSION {
        let url = store_pg::testkit::database_at_version(version);
        let mut raw = schema_skew::undeclared(&url);
        raw.batch_execute(
            "INSERT INTO idempotency (tenant, key, run) VALUES ('t', 'before', 'run-0');
             INSERT INTO seals (tenant, position, run, leaf) VALUES ('t', 0, 'run-0', '\\x00')",
        )
        .unwrap();
        let store = store_pg::PgStore::open(&url).unwrap();
        assert_eq!(store.migrated(), Some((version, store_pg::SCHEMA_VERSION)), "from version {version}");
        schema_skew::appends(&store, "run-1").unwrap_or_else(|err| panic!("from version {version}: {err}"));
        assert_eq!(schema_skew::count(&mut raw, "idempotency"), 1, "from version {version}");
        assert_eq!(schema_skew::tables_not_guarded(&mut raw), Vec::<String>::new(), "from version {version}");
    }
}

/// R-VER-4: the schema-skew check reads the version row after waiting for a
/// migration under way, which sees what the migration committed only at
/// READ COMMITTED. A database whose default isolation is REPEATABLE READ
/// (`ALTER DATABASE ... SET default_transaction_isolation`, as some
/// deployments set it) gave the waiting write its snapshot from before the
/// migration: it passed the check and wrote under the old schema. Every
/// session of a store opened to write now runs at READ COMMITTED, whatever
/// the server's default, and the waiting append is refused as build skew.
#[test]
fn r_ver_4_an_append_that_waited_for_a_migration_is_refused_whatever_the_default_isolation() {
    let url = store_pg::testkit::fresh_database();
    let mut admin = schema_skew::undeclared(&url);
    let database: String = admin.query_one("SELECT current_database()::text", &[]).unwrap().get(0);
    admin
        .batch_execute(&format!("ALTER DATABASE \"{database}\" SET default_transaction_isolation = 'repeatable read'"))
        .unwrap();
    let store = Arc::new(store_pg::PgStore::open(&url).unwrap());
    schema_skew::appends(&store, "run-1").unwrap();
    let runs = schema_skew::count(&mut admin, "runs");

    // A newer build migrating: the schema lock held exclusive, the version raised, not yet committed.
    let mut newer = schema_skew::undeclared(&url);
    let mut migration = newer.transaction().unwrap();
    migration.execute("SELECT pg_advisory_xact_lock($1)", &[&0x6167_706c_7363_6865_i64]).unwrap();
    let raised = store_pg::SCHEMA_VERSION + 1;
    migration.execute("UPDATE agentplane_schema SET version = $1", &[&raised]).unwrap();
    let writer = std::thread::spawn({
        let store = Arc::clone(&store);
        move || schema_skew::appends(&store, "run-2")
    });
    // The append waits for the schema lock: the migration commits under it.
    store_pg::testkit::await_an_advisory_lock_waiter(&mut admin, "the migration's schema lock");
    migration.commit().unwrap();

    let refused = writer.join().unwrap().unwrap_err();
    schema_skew::assert_schema_skew(&refused, raised);
    assert_eq!(schema_skew::count(&mut admin, "runs"), runs, "nothing was written under the old schema");
}

/// R-VER-4 (rolling upgrade review): a process of a build from before schema
/// version 6 declares no version, so its write is refused by the trigger, and
/// the trigger's message is all its operator sees (that build classes it as
/// I/O and adds no remedy of its own). It said only "a build older than the
/// one that migrated it, or SQL by hand, writes nothing"; it now says the
/// version the store was migrated to, that nothing was kept, and the remedy:
/// replace the process by a build of that version, or `SET` it by hand.
#[test]
fn r_ver_4_a_write_of_a_build_from_before_schema_6_is_told_what_happened_and_the_remedy() {
    let url = store_pg::testkit::fresh_database();
    let store = store_pg::PgStore::open(&url).unwrap();
    schema_skew::appends(&store, "run-1").unwrap();
    let mut older = schema_skew::undeclared(&url);
    let refused = older.batch_execute("DELETE FROM signed_checkpoints WHERE false").unwrap_err();
    let message = refused.as_db_error().map(|db| db.message().to_owned()).unwrap_or_default();
    let version = store_pg::SCHEMA_VERSION;
    for said in [
        format!("the store was migrated to schema version {version}"),
        "nothing of this write was kept".to_owned(),
        format!("replace the process by a build of schema version {version} or later"),
        format!("SET agentplane.schema_version = '{version}'"),
    ] {
        assert!(message.contains(&said), "{said:?} in {message}");
    }
}

/// R-VER-4 (rolling upgrade review): every crate of the workspace is version
/// 0.1.0, so the build that migrated the store and this one name themselves
/// alike (`agentplane-store-pg 0.1.0`), and the remedy read "replace this
/// process by that build (or a later one), not agentplane-store-pg 0.1.0":
/// itself. It now names the build to run by the schema version it writes.
#[test]
fn r_ver_4_the_remedy_names_the_schema_version_to_run_when_both_builds_share_a_name() {
    let url = store_pg::testkit::fresh_database();
    let store = store_pg::PgStore::open(&url).unwrap();
    schema_skew::appends(&store, "run-1").unwrap();
    let mut newer = schema_skew::undeclared(&url);
    let same_name: String = newer.query_one("SELECT build FROM agentplane_schema", &[]).unwrap().get(0);
    let raised = store_pg::SCHEMA_VERSION + 1;
    newer.execute("UPDATE agentplane_schema SET version = $1", &[&raised]).unwrap();
    let refused = schema_skew::appends(&store, "run-2").unwrap_err();
    schema_skew::assert_schema_skew(&refused, raised);
    let message = refused.to_string();
    assert!(message.contains(&format!("a build of schema version {raised} or later")), "{message}");
    assert!(!message.contains(&format!("not {same_name}")), "{message}");
}
