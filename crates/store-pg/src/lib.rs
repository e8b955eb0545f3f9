#![doc = include_str!("../README.md")]

mod connect;
mod schema;
#[cfg(feature = "testkit")]
pub mod testkit;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use journal_core::append::{AppendFailure, AppendTxn, RunHead, append_heads, stored_run_id as run_id, write_batch};
use journal_core::group_commit::{BatchReplies, GroupCommit, fail_all};
use journal_core::heads::HeadEntry;
use journal_core::store::{AdmittedRun, CheckpointRows, SignedTree, stored_chain_hash};
use journal_core::{
    AppendRequest, BuildSkew, ChainHash, CollectSnapshot, ExpectedHead, JournalError, LogCounters, Outcome,
    RecordsInRunOrder, RunId, RunRows, SealEntry, SnapshotSink, StorageError, Store, StoredRecord, TenantId,
    TenantSnapshot,
};
use postgres::fallible_iterator::FallibleIterator as _;
use postgres::{Client, NoTls};
use r2d2_postgres::PostgresConnectionManager;
use tlog::{NodeHash, NodeId, RootHash, Tree};

pub use connect::{DEFAULT_CONNECT_TIMEOUT, OpenError, Target, redact};
pub use schema::{SCHEMA_VERSION, SESSION_SETTING};

/// The most appends one group commit carries.
pub const MAX_BATCH: usize = 256;
/// Read connections kept open.
const POOL_SIZE: u32 = 8;

type Pool = r2d2::Pool<PostgresConnectionManager<NoTls>>;

/// A failure of this backend's own machinery (its group commit).
fn machinery(what: &str) -> JournalError {
    JournalError::Io(StorageError::message(what))
}

/// A PostgreSQL failure, kept as the error's source; retryable when the same
/// call may succeed again (a lost connection, a serialization failure, a
/// deadlock): nothing of it was committed.
fn pg(context: &str, err: postgres::Error) -> JournalError {
    if let Some(skew) = err.as_db_error().filter(|db| db.code().code() == schema::SKEW_STATE) {
        return schema_skew(context, skew);
    }
    let retryable = err.is_closed()
        || err.code().is_some_and(|code| {
            let code = code.code();
            code.starts_with("08") || code == "40001" || code == "40P01" || code.starts_with("57P")
        })
        || err.code().is_none();
    // postgres::Error's Display says only "db error": the server's message is the useful part.
    let context = match err.as_db_error() {
        Some(db) => format!("{context}: {} ({})", db.message(), db.code().code()),
        None => context.to_owned(),
    };
    let storage = StorageError::new(context, err);
    JournalError::Io(if retryable { storage.retryable() } else { storage })
}

/// The schema-skew check's refusal (R-VER-4): the store's schema is at
/// another version than this process declared, because a newer build
/// migrated it after this process opened it. Build skew, never damage:
/// nothing of the write was kept.
fn schema_skew(context: &str, db: &postgres::error::DbError) -> JournalError {
    let detail = db.detail().unwrap_or_default();
    let field = |name: &str| {
        detail
            .split_once(&format!("{name}="))
            .map(|(_, rest)| if name == "migrated_by" { rest } else { rest.split(' ').next().unwrap_or_default() })
            .filter(|value| !value.is_empty())
    };
    let found = field("found").and_then(|found| found.parse::<i64>().ok());
    let declared = field("declared");
    let migrated_by = field("migrated_by").map(str::to_owned);
    let this_build = i64::from(SCHEMA_VERSION);
    // Named by the schema version it writes, not by name alone: builds of
    // one package version name themselves alike (`agentplane-store-pg 0.1.0`).
    let by = migrated_by.as_deref().map_or_else(String::new, |build| format!(" (by {build})"));
    let remedy = match found {
        // Every session of this build declares its version at connect time:
        // one that reached the server declaring none lost it on the way.
        Some(found) if found == this_build && declared.is_none() => format!(
            "the store is at this process's schema version {found}, but the session reached PostgreSQL without \
             the version this process declares at connect time ({SESSION_SETTING} in the connection's startup \
             options): something between them dropped the options, such as a connection pooler (PgBouncer with \
             `ignore_startup_parameters = options`); connect to PostgreSQL directly, or through a pooler that \
             passes the startup options on"
        ),
        Some(found) if found > this_build => format!(
            "the store was migrated to schema version {found}{by} after this process, a build of schema version \
             {this_build}, opened it; replace this process by a build of schema version {found} or later"
        ),
        // Lowered or deleted: no build migrates down or away, so the row
        // was changed behind the plane. Damage, not a build to change.
        lowered => {
            let said = lowered.map_or_else(
                || "is gone".to_owned(),
                |found| format!("says {found}, below this process's {this_build} ({THIS_BUILD})"),
            );
            return JournalError::SchemaDamage {
                store: "PostgreSQL".to_owned(),
                detail: format!(
                    "{context}: {} (nothing of it was written): the schema version row {said}, which no build's \
                     migration does: it was changed behind the plane; restore the version row (or the database) \
                     from a copy, and run `agentplane verify`",
                    db.message()
                ),
            };
        }
    };
    JournalError::BuildSkew(Box::new(BuildSkew::StoreSchema {
        store: "PostgreSQL".to_owned(),
        found,
        this_build,
        migrated_by,
        detail: format!("{context}: {} (nothing of it was written)", db.message()),
        remedy,
    }))
}

fn pool_error(err: r2d2::Error) -> JournalError {
    JournalError::Io(StorageError::new("postgres connection pool", err).retryable())
}

fn damaged(tenant: &TenantId, detail: String) -> JournalError {
    JournalError::StoreDamage { tenant: tenant.clone(), detail }
}

/// Column `index` of a row read from the store. A NULL where the schema has
/// none, or a column of another type (a table altered behind the plane), is
/// damage, never a panic (what `Row::get` does with either).
fn column<'a, T: postgres::types::FromSql<'a>>(
    tenant: &TenantId,
    row: &'a postgres::Row,
    index: usize,
) -> Result<T, JournalError> {
    row.try_get(index).map_err(|err| {
        let name = row.columns().get(index).map_or("?", postgres::Column::name);
        damaged(tenant, format!("a stored row's column {name} is not what the schema says: {err}"))
    })
}

fn to_i64(value: u64) -> Result<i64, JournalError> {
    i64::try_from(value).map_err(|_| JournalError::InvalidRecord(format!("{value} does not fit PostgreSQL's bigint")))
}

/// A bigint column the plane reads as a count, a seq or a position:
/// negative is a row written behind the plane, named by `row` (its table,
/// its key and the column: "the runs row of run r: head_seq").
fn to_u64(tenant: &TenantId, value: i64, row: impl FnOnce() -> String) -> Result<u64, JournalError> {
    u64::try_from(value).map_err(|_| {
        damaged(
            tenant,
            format!(
                "{} is negative ({value}), which no count, seq or position is: the row was written behind the \
                 plane (run `agentplane verify`)",
                row()
            ),
        )
    })
}

/// A `log_nodes` row's level: one past a `u8` (no tree has 256 levels) is
/// a row written behind the plane.
fn node_level(tenant: &TenantId, level: i16) -> Result<u8, JournalError> {
    u8::try_from(level).map_err(|_| {
        damaged(
            tenant,
            format!(
                "a log_nodes row is at level {level}, which no tree has: the row was written behind the plane \
                 (run `agentplane verify`)"
            ),
        )
    })
}

/// A journal store in one PostgreSQL database, shared by any number of
/// processes.
pub struct PgStore {
    pool: Pool,
    commit: GroupCommit,
    migrated: Option<(i32, i32)>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to `url` (a `postgres://` URL), applies the schema's
    /// migrations in one transaction (refusing a schema newer than this
    /// build's), and readies its group commit. For the commands that write.
    /// A URL without a password takes it from `PGPASSWORD` or the password
    /// file (`PGPASSFILE`, else `~/.pgpass`).
    pub fn open(url: &str) -> Result<Self, OpenError> {
        let (mut config, target) = connect::config(url)?;
        // The schema-skew check reads the version row a migration it waited
        // for committed only at READ COMMITTED (a fresh snapshot per query):
        // under a server default of REPEATABLE READ or SERIALIZABLE a write
        // that waited passed the check on its older snapshot (R-VER-4).
        add_options(
            &mut config,
            &format!(
                "-c {}={SCHEMA_VERSION} -c default_transaction_isolation=read\\ committed",
                schema::SESSION_SETTING
            ),
        );
        let mut client = connect::connect(&config, &target)?;
        let migrated = migrate(&mut client)?;
        let pool = r2d2::Pool::builder()
            .max_size(POOL_SIZE)
            .build(PostgresConnectionManager::new(config.clone(), NoTls))
            .map_err(pool_error)?;
        let commit = GroupCommit::start(MAX_BATCH, batch_writer(config, client));
        Ok(Self { pool, commit, migrated })
    }

    /// Opens the store for reading only: nothing is created or migrated, and
    /// every session is read-only (`default_transaction_read_only`), so the
    /// server itself refuses a write. A database without the schema is
    /// [`OpenError::NoStore`]; a schema of another version is refused with
    /// its remedy ([`OpenError::NewerSchema`], [`OpenError::OlderSchema`]).
    pub fn open_read_only(url: &str) -> Result<Self, OpenError> {
        let (mut config, target) = connect::config(url)?;
        add_options(&mut config, "-c default_transaction_read_only=on");
        let mut client = connect::connect(&config, &target)?;
        let version = schema_version(&mut client)?;
        match version {
            None => return Err(OpenError::NoStore { target }),
            Some(found) if found > SCHEMA_VERSION => {
                return Err(OpenError::NewerSchema { found, supported: SCHEMA_VERSION });
            }
            Some(found) if found < SCHEMA_VERSION => {
                return Err(OpenError::OlderSchema { found, supported: SCHEMA_VERSION });
            }
            Some(_) => {}
        }
        drop(client);
        let pool = r2d2::Pool::builder()
            .max_size(POOL_SIZE)
            .min_idle(Some(1))
            .build(PostgresConnectionManager::new(config, NoTls))
            .map_err(pool_error)?;
        let commit = GroupCommit::refusing("the store is open read-only");
        Ok(Self { pool, commit, migrated: None })
    }

    /// The schema versions this open migrated from and to, if it migrated
    /// (`None`: the schema was already this build's; another instance, or an
    /// earlier open, set it up).
    pub fn migrated(&self) -> Option<(i32, i32)> {
        self.migrated
    }

    /// How many transactions appends have committed: fewer than the appends
    /// when concurrent appenders share group commits.
    pub fn commits(&self) -> u64 {
        self.commit.commits()
    }

    fn conn(&self) -> Result<r2d2::PooledConnection<PostgresConnectionManager<NoTls>>, JournalError> {
        self.pool.get().map_err(pool_error)
    }

    fn read_trees(&self, table: &str, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        let mut conn = self.conn()?;
        let query = format!("SELECT {CHECKPOINT_COLUMNS} FROM {table} WHERE tenant = $1 ORDER BY n");
        let rows = conn.query(query.as_str(), &[&tenant.as_str()]).map_err(|err| pg(table, err))?;
        rows.iter().map(|row| signed_tree(tenant, table, row)).collect()
    }

    /// The newest `limit` rows of `table`, oldest first: read backwards
    /// along its key, so O(limit).
    fn read_newest_trees(&self, table: &str, tenant: &TenantId, limit: usize) -> Result<Vec<SignedTree>, JournalError> {
        let mut conn = self.conn()?;
        let query = format!("SELECT {CHECKPOINT_COLUMNS} FROM {table} WHERE tenant = $1 ORDER BY n DESC LIMIT $2");
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = conn.query(query.as_str(), &[&tenant.as_str(), &limit]).map_err(|err| pg(table, err))?;
        rows.iter().rev().map(|row| signed_tree(tenant, table, row)).collect()
    }
}

/// `options` added to the session options `config` has (the URL's own
/// first, so ours win where both set one).
fn add_options(config: &mut postgres::Config, options: &str) {
    let options = match config.get_options() {
        Some(before) => format!("{before} {options}"),
        None => options.to_owned(),
    };
    config.options(&options);
}

/// The build that migrates, as the version row names it for the remedy of a
/// build skew (R-VER-4).
const THIS_BUILD: &str = concat!(env!("CARGO_PKG_NAME"), " ", env!("CARGO_PKG_VERSION"));

/// The advisory lock every schema setup takes first (any constant of ours:
/// "agentplane schema" in ASCII, folded to 64 bits).
const SCHEMA_LOCK: i64 = 0x6167_706c_7363_6865;

/// The schema version of the database, without creating anything: `None`
/// when it has no agentplane schema.
/// The journal's tables without the version table is a store whose version
/// was deleted ([`OpenError::DamagedSchema`]), not "no store here".
fn schema_version(client: &mut Client) -> Result<Option<i32>, OpenError> {
    let row = client
        .query_one("SELECT to_regclass('agentplane_schema') IS NOT NULL, to_regclass('records') IS NOT NULL", &[])
        .map_err(|err| pg("looking for the schema", err))?;
    let (exists, holds_records): (bool, bool) =
        (row.try_get(0).map_err(schema_version_type)?, row.try_get(1).map_err(schema_version_type)?);
    match (exists, holds_records) {
        (false, false) => Ok(None),
        (false, true) => Err(OpenError::DamagedSchema {
            detail: "the journal's tables are here, its schema version table is not".into(),
        }),
        (true, _) => stored_version(client).map(Some),
    }
}

/// The one version row every migration leaves; 0 for a version table a
/// migration has not committed to yet (and no journal tables beside it).
/// No row beside the journal's tables, two rows, or a version below 1 were
/// never written by a plane: [`OpenError::DamagedSchema`], not a schema to
/// migrate or a build to change.
fn stored_version(client: &mut impl postgres::GenericClient) -> Result<i32, OpenError> {
    let row = client
        .query_one(
            "SELECT count(*), coalesce(min(version), 0), coalesce(max(version), 0), to_regclass('records') IS NOT NULL
             FROM agentplane_schema",
            &[],
        )
        .map_err(|err| pg("reading the schema version", err))?;
    let rows: i64 = row.try_get(0).map_err(schema_version_type)?;
    let least: i32 = row.try_get(1).map_err(schema_version_type)?;
    let version: i32 = row.try_get(2).map_err(schema_version_type)?;
    let holds_records: bool = row.try_get(3).map_err(schema_version_type)?;
    let detail = match rows {
        0 if holds_records => "the journal's tables are here, its schema version row is not".to_owned(),
        0 => return Ok(0),
        1 if version >= 1 => return Ok(version),
        1 => format!("the schema version row says {version}; no schema has that version"),
        _ => format!("the schema version table holds {rows} rows (versions {least} to {version}); a plane keeps one"),
    };
    Err(OpenError::DamagedSchema { detail })
}

/// The schema version table altered to hold another type: damage to
/// repair ([`OpenError::DamagedSchema`]), never a panic, nor a storage
/// failure to retry.
fn schema_version_type(err: postgres::Error) -> OpenError {
    OpenError::DamagedSchema { detail: format!("the schema version table does not hold what a plane writes: {err}") }
}

/// Creates or upgrades the schema in one transaction. Any number of
/// processes may run this at once on a new or an existing database: each
/// first takes a transaction-scoped advisory lock, before anything is
/// created, so one sets up while the others wait and then find it done
/// (`CREATE TABLE IF NOT EXISTS` alone races a concurrent creator). A
/// migration is all or nothing: it commits with its version or not at all.
///
/// Each step first writes its version row and declares that version for the
/// transaction, so a step that writes rows passes the schema-skew check
/// (schema 6) of the tables it writes; the session declares this build's
/// version again when the transaction ends. The check takes this lock
/// shared: a migration waits for the writes under way.
fn migrate(client: &mut Client) -> Result<Option<(i32, i32)>, OpenError> {
    let mut txn = client.transaction().map_err(|err| pg("starting the migration", err))?;
    txn.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).map_err(|err| pg("the schema setup lock", err))?;
    txn.batch_execute("CREATE TABLE IF NOT EXISTS agentplane_schema (version integer NOT NULL)")
        .map_err(|err| pg("the schema version table", err))?;
    let version = stored_version(&mut txn)?;
    if version > SCHEMA_VERSION {
        return Err(OpenError::NewerSchema { found: version, supported: SCHEMA_VERSION });
    }
    let mut current = version;
    for (index, migration) in schema::MIGRATIONS.iter().enumerate() {
        let target = i32::try_from(index + 1).unwrap_or(i32::MAX);
        if target <= current {
            continue;
        }
        txn.execute("DELETE FROM agentplane_schema", &[]).map_err(|err| pg("the schema version", err))?;
        txn.execute("INSERT INTO agentplane_schema (version) VALUES ($1)", &[&target])
            .map_err(|err| pg("the schema version", err))?;
        txn.execute("SELECT set_config($1, $2, true)", &[&schema::SESSION_SETTING, &target.to_string()])
            .map_err(|err| pg("the schema version", err))?;
        txn.batch_execute(migration).map_err(|err| pg(&format!("migrating the schema to version {target}"), err))?;
        current = target;
    }
    if current != version {
        txn.execute("UPDATE agentplane_schema SET build = $1", &[&THIS_BUILD])
            .map_err(|err| pg("the schema version", err))?;
    }
    txn.commit().map_err(|err| pg("committing the migration", err))?;
    Ok((current != version).then_some((version, current)))
}

/// Group commit: the appends waiting when a transaction starts go into it,
/// each in a savepoint of its own (a refused one rolls back alone), and each
/// caller is answered only after that one commit is durable. A batch that
/// failed on the connection itself makes the next batch use a fresh one.
fn batch_writer(config: postgres::Config, mut client: Client) -> impl FnMut(&[&AppendRequest]) -> BatchReplies + Send {
    let mut suspect = false;
    let mut statements: Option<Statements> = None;
    move |batch| {
        if (suspect || client.is_closed())
            && let Ok(fresh) = config.connect(NoTls)
        {
            client = fresh;
            statements = None;
        }
        let prepared = match statements.take() {
            Some(prepared) => Ok(prepared),
            None => Statements::prepare(&mut client),
        };
        let replies = match &prepared {
            Ok(prepared) => commit_batch(&mut client, prepared, batch),
            Err(err) => fail_all(batch, err.clone()),
        };
        statements = prepared.ok();
        suspect = replies.iter().any(|reply| matches!(reply, Err(JournalError::Io(storage)) if storage.is_retryable()));
        replies
    }
}

/// The statements every append runs, prepared once per connection: each
/// append then costs one round trip per statement, not two.
struct Statements {
    select_run: postgres::Statement,
    insert_record: postgres::Statement,
    upsert_run: postgres::Statement,
    insert_record_and_upsert_run: postgres::Statement,
    write_buffered: postgres::Statement,
    write_plain: postgres::Statement,
    lock_runs: postgres::Statement,
    upsert_idempotency: postgres::Statement,
    insert_admission: postgres::Statement,
    delete_outcome: postgres::Statement,
    insert_outcome: postgres::Statement,
    lock_tenant_log: postgres::Statement,
    select_counter: postgres::Statement,
    select_node: postgres::Statement,
    insert_seal: postgres::Statement,
    insert_node: postgres::Statement,
    upsert_counter: postgres::Statement,
    intern_key: postgres::Statement,
    /// The `signing_keys` reference of each key this connection interned.
    key_refs: std::cell::RefCell<HashMap<String, i32>>,
}

impl Statements {
    fn prepare(client: &mut Client) -> Result<Self, JournalError> {
        let mut prepare = |sql: &str| client.prepare(sql).map_err(|err| pg("preparing the append statements", err));
        Ok(Self {
            select_run: prepare(
                "SELECT head_seq, head_hash, sealed, outcome FROM runs WHERE tenant = $1 AND run = $2 FOR UPDATE",
            )?,
            insert_record: prepare(
                "INSERT INTO records (tenant, run, seq, kind, effect_key, hash, bytes, encoding, key_ref, signature)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )?,
            upsert_run: prepare(
                "INSERT INTO runs (tenant, run, head_seq, head_hash, sealed, outcome) VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (tenant, run) DO UPDATE SET head_seq = excluded.head_seq, head_hash = excluded.head_hash,
                     sealed = excluded.sealed, outcome = excluded.outcome, covered = false",
            )?,
            // One round trip for an ordinary append's two writes. The runs row
            // is selected from the inserted record, so the record's insert (and
            // its sealed-run trigger, which must see the run as it was) runs
            // first, and no runs row moves without its record.
            insert_record_and_upsert_run: prepare(
                "WITH record AS (
                     INSERT INTO records (tenant, run, seq, kind, effect_key, hash, bytes, encoding, key_ref, signature)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                     RETURNING tenant, run)
                 INSERT INTO runs (tenant, run, head_seq, head_hash, sealed, outcome)
                     SELECT record.tenant, record.run, $3, $6, $11, $12 FROM record
                 ON CONFLICT (tenant, run) DO UPDATE SET head_seq = excluded.head_seq, head_hash = excluded.head_hash,
                     sealed = excluded.sealed, outcome = excluded.outcome, covered = false",
            )?,
            upsert_idempotency: prepare(
                "INSERT INTO idempotency (tenant, key, run) VALUES ($1, $2, $3)
                 ON CONFLICT (tenant, key) DO UPDATE SET run = excluded.run",
            )?,
            // A batch's ordinary appends in one statement: their records,
            // then each run's row moved to its last one. The runs rows are
            // updated from the inserted records, so the inserts (and their
            // sealed-run trigger) come first.
            write_buffered: prepare(
                "WITH record AS (
                     INSERT INTO records (tenant, run, seq, kind, effect_key, hash, bytes, encoding, key_ref, signature)
                     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::bytea[],
                                          $7::bytea[], $8::smallint[], $9::integer[], $10::bytea[])
                     RETURNING tenant, run, seq, hash)
                 UPDATE runs SET head_seq = last.seq, head_hash = last.hash, covered = false
                 FROM (SELECT DISTINCT ON (tenant, run) tenant, run, seq, hash FROM record
                       ORDER BY tenant, run, seq DESC) AS last
                 WHERE runs.tenant = last.tenant AND runs.run = last.run",
            )?,
            // A batch's plain appends of distinct runs, in one statement
            // that is its own transaction (see `write_plain`). Each run's row
            // is held to the head its append expects, unsealed, and locked
            // in run order, as `lock_runs` locks (two writers' batches that
            // share runs take them in one order: none holds one run's row
            // while it waits for a run before it, which is a deadlock whose
            // victim may be a batch's transaction); `FOR UPDATE` rechecks
            // the newest version of a row another writer moved. The records
            // are written first and the rows moved from them, as
            // `write_buffered` does, so no row moves without its record; a
            // statement that moved fewer rows than it locked (a record the
            // database did not write) fails, and nothing of it commits. A
            // row naming no outcome this build knows (`$13`: every outcome's
            // name) is not taken: the transaction refuses it as damage, as
            // it reads every row it locks.
            write_plain: prepare(
                "WITH batch AS (
                     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bytea[], $5::bigint[], $6::text[],
                                          $7::text[], $8::bytea[], $9::bytea[], $10::smallint[], $11::integer[],
                                          $12::bytea[])
                         AS b(tenant, run, expected_seq, expected_hash, seq, kind, effect_key, hash, bytes, encoding,
                              key_ref, signature)),
                 locked AS MATERIALIZED (
                     SELECT batch.* FROM batch JOIN runs ON runs.tenant = batch.tenant AND runs.run = batch.run
                     WHERE runs.head_seq = batch.expected_seq AND runs.head_hash = batch.expected_hash
                         AND NOT runs.sealed AND (runs.outcome IS NULL OR runs.outcome = ANY($13::text[]))
                     ORDER BY runs.tenant, runs.run
                     FOR UPDATE OF runs),
                 record AS (
                     INSERT INTO records (tenant, run, seq, kind, effect_key, hash, bytes, encoding, key_ref, signature)
                     SELECT tenant, run, seq, kind, effect_key, hash, bytes, encoding, key_ref, signature FROM locked
                     RETURNING tenant, run, seq, hash),
                 moved AS (
                     UPDATE runs SET head_seq = record.seq, head_hash = record.hash, covered = false
                     FROM record
                     WHERE runs.tenant = record.tenant AND runs.run = record.run
                     RETURNING runs.tenant, runs.run)
                 SELECT tenant, run FROM moved
                 UNION ALL
                 SELECT NULL, NULL
                 WHERE CASE WHEN (SELECT count(*) FROM moved) = (SELECT count(*) FROM locked) THEN false
                       ELSE ('agentplane: plain appends moved ' || (SELECT count(*) FROM moved) || ' runs rows of '
                             || (SELECT count(*) FROM locked))::integer IS NULL END",
            )?,
            // The rows of a batch's runs, locked in one round trip and in run
            // order, so two batches take the runs they share in one order.
            lock_runs: prepare(
                "SELECT head_seq, head_hash, sealed, outcome, run FROM runs WHERE tenant = $1 AND run = ANY($2)
                 ORDER BY run FOR UPDATE",
            )?,
            insert_admission: prepare(
                "INSERT INTO admission_order (tenant, at_millis, run) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )?,
            delete_outcome: prepare(DELETE_OUTCOME)?,
            insert_outcome: prepare("INSERT INTO outcome_index (tenant, outcome, run) VALUES ($1, $2, $3)")?,
            lock_tenant_log: prepare("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")?,
            select_counter: prepare("SELECT next_position FROM log_counter WHERE tenant = $1 FOR UPDATE")?,
            select_node: prepare(SELECT_NODES)?,
            insert_seal: prepare("INSERT INTO seals (tenant, position, run, leaf) VALUES ($1, $2, $3, $4)")?,
            insert_node: prepare("INSERT INTO log_nodes (tenant, level, index, hash) VALUES ($1, $2, $3, $4)")?,
            upsert_counter: prepare(
                "INSERT INTO log_counter (tenant, next_position) VALUES ($1, $2)
                 ON CONFLICT (tenant) DO UPDATE SET next_position = excluded.next_position",
            )?,
            // The update of a key already there makes RETURNING answer its
            // reference too (two writers interning one key get the same).
            intern_key: prepare(
                "INSERT INTO signing_keys (key_id) VALUES ($1)
                 ON CONFLICT (key_id) DO UPDATE SET key_id = excluded.key_id RETURNING ref",
            )?,
            key_refs: std::cell::RefCell::new(HashMap::new()),
        })
    }
}

/// An admission order row; an instant out of range is a damaged row.
fn admission_of_row(tenant: &TenantId, millis: i64, run: &str) -> Result<AdmittedRun, JournalError> {
    let at = journal_core::At::from_unix_millis(millis).map_err(|err| {
        damaged(tenant, format!("the admission_order row of run {run:?} has no valid instant: {err}"))
    })?;
    Ok(AdmittedRun { at, run: run_id(tenant, run)? })
}

/// Writes one group commit's appends in one transaction: the append
/// algorithm is journal-core's. The batch's runs rows are locked first, in
/// one statement; an append to a run whose row is locked cannot be refused
/// after its first write, so it runs without a savepoint, and an ordinary
/// one (no key, no conclusion) is buffered and written with the others in
/// one statement at the end. An append that creates a run (another writer
/// may create it too) gets a savepoint.
/// Should an append without a savepoint still fail after writing (a store
/// whose records disagree with its runs table), its transaction is rolled
/// back and the batch rewritten with a savepoint for every append, so each
/// caller still gets its own answer.
///
/// The batch's plain appends of runs it appends to once (most of a busy
/// plane's) go first, in one statement that is its own transaction
/// ([`write_plain`]): one round trip where the transaction takes four. The
/// others, and any plain one that statement did not write, go to the
/// transaction. Appends to distinct runs commute, so the split keeps each
/// run's order.
fn commit_batch(client: &mut Client, statements: &Statements, batch: &[&AppendRequest]) -> BatchReplies {
    if let Err(err) = intern_keys(client, statements, batch) {
        return fail_all(batch, err);
    }
    let mut appends_per_run: HashMap<(&str, &str), usize> = HashMap::new();
    for request in batch {
        *appends_per_run.entry((request.tenant.as_str(), request.run.as_str())).or_default() += 1;
    }
    let plain: Vec<&AppendRequest> = batch
        .iter()
        .copied()
        .filter(|request| {
            appends_per_run.get(&(request.tenant.as_str(), request.run.as_str())) == Some(&1)
                && journal_core::append::is_plain_append(request)
        })
        .collect();
    let mut answered: HashMap<(&str, &str), Result<Option<u64>, JournalError>> = HashMap::new();
    match write_plain(client, statements, &plain) {
        PlainWrite::Written(written) => {
            for request in &plain {
                if written.contains(&(request.tenant.as_str().to_owned(), request.run.as_str().to_owned())) {
                    answered.insert((request.tenant.as_str(), request.run.as_str()), Ok(None));
                }
            }
        }
        PlainWrite::NotWritten => {}
        PlainWrite::Unknown(err) => {
            for request in &plain {
                answered.insert((request.tenant.as_str(), request.run.as_str()), Err(err.clone()));
            }
        }
    }
    let rest: Vec<&AppendRequest> = batch
        .iter()
        .copied()
        .filter(|request| !answered.contains_key(&(request.tenant.as_str(), request.run.as_str())))
        .collect();
    let mut rest_replies =
        if rest.is_empty() { Vec::new() } else { commit_in_transaction(client, statements, &rest) }.into_iter();
    batch
        .iter()
        .map(|request| match answered.remove(&(request.tenant.as_str(), request.run.as_str())) {
            Some(reply) => reply,
            None => rest_replies.next().unwrap_or_else(|| Err(machinery("an append of the batch went unanswered"))),
        })
        .collect()
}

/// What [`write_plain`] did.
enum PlainWrite {
    /// Committed: the `(tenant, run)` of each append written.
    Written(HashSet<(String, String)>),
    /// Nothing was written (the statement failed on the server and rolled
    /// back, or a value does not fit a column): the transaction answers.
    NotWritten,
    /// The connection failed with the statement sent: it may have
    /// committed, so these appends are answered with the error, as a
    /// failed commit is.
    Unknown(JournalError),
}

/// Writes plain appends of distinct runs
/// ([`journal_core::append::is_plain_append`]) in one statement outside any
/// transaction, so it commits on its own: one round trip for them all.
fn write_plain(client: &mut Client, statements: &Statements, plain: &[&AppendRequest]) -> PlainWrite {
    if plain.is_empty() {
        return PlainWrite::NotWritten;
    }
    let Ok(columns) = PlainColumns::of(statements, plain) else { return PlainWrite::NotWritten };
    let outcomes: Vec<&str> = Outcome::ALL.iter().map(|outcome| outcome.as_str()).collect();
    let params: [&(dyn postgres::types::ToSql + Sync); 13] = [
        &columns.tenants,
        &columns.runs,
        &columns.expected_seqs,
        &columns.expected_hashes,
        &columns.seqs,
        &columns.kinds,
        &columns.effect_keys,
        &columns.hashes,
        &columns.bytes,
        &columns.encodings,
        &columns.key_refs,
        &columns.signatures,
        &outcomes,
    ];
    match client.query(&statements.write_plain, &params) {
        // Committed: a row this build cannot read leaves which appends were
        // written unknown, and they are answered as after a lost commit.
        Ok(rows) => rows
            .iter()
            .map(|row| Ok((row.try_get::<_, String>(0)?, row.try_get::<_, String>(1)?)))
            .collect::<Result<HashSet<_>, postgres::Error>>()
            .map_or_else(
                |err| PlainWrite::Unknown(pg("reading which plain appends were written", err)),
                PlainWrite::Written,
            ),
        Err(err) if err.as_db_error().is_some() => PlainWrite::NotWritten,
        Err(err) => PlainWrite::Unknown(pg("writing the batch's plain appends", err)),
    }
}

/// The parameters of [`Statements::write_plain`], a column each.
struct PlainColumns<'r> {
    tenants: Vec<&'r str>,
    runs: Vec<&'r str>,
    expected_seqs: Vec<i64>,
    expected_hashes: Vec<&'r [u8]>,
    seqs: Vec<i64>,
    kinds: Vec<&'r str>,
    effect_keys: Vec<Option<&'r str>>,
    hashes: Vec<&'r [u8]>,
    bytes: Vec<&'r [u8]>,
    encodings: Vec<i16>,
    key_refs: Vec<Option<i32>>,
    signatures: Vec<Option<&'r [u8]>>,
}

impl<'r> PlainColumns<'r> {
    fn of(statements: &Statements, plain: &[&'r AppendRequest]) -> Result<Self, JournalError> {
        let mut columns = Self {
            tenants: Vec::with_capacity(plain.len()),
            runs: Vec::with_capacity(plain.len()),
            expected_seqs: Vec::with_capacity(plain.len()),
            expected_hashes: Vec::with_capacity(plain.len()),
            seqs: Vec::with_capacity(plain.len()),
            kinds: Vec::with_capacity(plain.len()),
            effect_keys: Vec::with_capacity(plain.len()),
            hashes: Vec::with_capacity(plain.len()),
            bytes: Vec::with_capacity(plain.len()),
            encodings: Vec::with_capacity(plain.len()),
            key_refs: Vec::with_capacity(plain.len()),
            signatures: Vec::with_capacity(plain.len()),
        };
        for request in plain {
            let row = &request.row;
            let expected = request.expected_head.as_ref().ok_or_else(|| machinery("a plain append expects no head"))?;
            let (bytes, encoding) = stored_bytes(request);
            columns.tenants.push(request.tenant.as_str());
            columns.runs.push(request.run.as_str());
            columns.expected_seqs.push(to_i64(expected.seq)?);
            columns.expected_hashes.push(expected.hash.as_bytes().as_slice());
            columns.seqs.push(to_i64(row.seq)?);
            columns.kinds.push(row.kind.as_str());
            columns.effect_keys.push(row.effect_key.as_deref());
            columns.hashes.push(row.hash.as_bytes().as_slice());
            columns.bytes.push(bytes);
            columns.encodings.push(encoding);
            columns.key_refs.push(key_ref(statements, request)?);
            columns.signatures.push(row.signature.as_ref().map(|s| s.signature.as_slice()));
        }
        Ok(columns)
    }
}

/// Writes appends in one transaction (see [`commit_batch`]).
fn commit_in_transaction(client: &mut Client, statements: &Statements, batch: &[&AppendRequest]) -> BatchReplies {
    match commit_batch_once(client, statements, batch, false) {
        Err(Retry::WithSavepoints) => match commit_batch_once(client, statements, batch, true) {
            Ok(replies) => replies,
            Err(Retry::WithSavepoints) => fail_all(batch, machinery("an isolated append asked for isolation")),
            Err(Retry::Failed(replies)) => replies,
        },
        Ok(replies) | Err(Retry::Failed(replies)) => replies,
    }
}

/// Why one attempt at a batch did not commit.
enum Retry {
    /// An append without a savepoint failed after writing.
    WithSavepoints,
    /// The batch failed: every caller's answer.
    Failed(BatchReplies),
}

fn commit_batch_once(
    client: &mut Client,
    statements: &Statements,
    batch: &[&AppendRequest],
    savepoint_every_append: bool,
) -> Result<BatchReplies, Retry> {
    let mut txn = match client.transaction() {
        Ok(txn) => txn,
        Err(err) => return Err(Retry::Failed(fail_all(batch, pg("starting a transaction", err)))),
    };
    let mut append = PgAppend::new(&mut txn, statements, savepoint_every_append);
    if !savepoint_every_append && let Err(err) = append.lock_runs(batch) {
        return Err(Retry::Failed(fail_all(batch, err)));
    }
    let written = write_batch(&mut append, batch).and_then(|replies| {
        append.write_buffered().map_err(AppendFailure::into_error)?;
        Ok(replies)
    });
    let failed_unisolated = append.failed_unisolated;
    match written {
        Ok(replies) => match txn.commit() {
            Ok(()) => Ok(replies),
            Err(err) => Err(Retry::Failed(fail_all(batch, pg("committing", err)))),
        },
        // Nothing of this batch may commit: dropping the transaction rolls it back.
        Err(_) if failed_unisolated && !savepoint_every_append => Err(Retry::WithSavepoints),
        Err(err) => Err(Retry::Failed(fail_all(batch, err))),
    }
}

/// A database error inside one append: a unique violation is another writer
/// who got there first (a conflict), the trigger's refusal is a sealed run,
/// a text the database cannot hold (a NUL character in an idempotency or
/// effect key: PostgreSQL's text has none) is that append's own, anything
/// else breaks the batch.
fn classify(request: &AppendRequest, context: &str, err: postgres::Error) -> AppendFailure {
    match err.code().map(postgres::error::SqlState::code) {
        Some("23505") => AppendFailure::Refused(JournalError::Conflict {
            run: request.run.clone(),
            expected_seq: request.expected_head.map_or(0, |h| h.seq),
            found_seq: request.row.seq,
        }),
        Some("AP001") => AppendFailure::Refused(JournalError::Sealed { run: request.run.clone() }),
        // character_not_in_repertoire, untranslatable_character
        Some("22021" | "22P05") => AppendFailure::Refused(JournalError::InvalidRecord(format!(
            "{context}: a text of run {} seq {} cannot be stored in PostgreSQL ({}): an idempotency or effect key \
             with a NUL character, or one the database's encoding lacks",
            request.run,
            request.row.seq,
            err.as_db_error().map_or_else(|| err.to_string(), |db| db.message().to_owned())
        ))),
        _ => AppendFailure::Broken(pg(context, err)),
    }
}

fn head_of(tenant: &TenantId, run: &RunId, seq: i64, hash: &[u8]) -> Result<ExpectedHead, JournalError> {
    let seq = to_u64(tenant, seq, || format!("the runs row of run {run}: head_seq"))?;
    let hash = stored_chain_hash(run, seq, hash, "the runs table's head hash")?;
    Ok(ExpectedHead { seq, hash })
}

/// The append algorithm's transaction on this backend: the batch's
/// transaction, with a savepoint for each append that may be refused after
/// its first write (see [`commit_batch`]).
struct PgAppend<'a, 'conn> {
    txn: &'a mut postgres::Transaction<'conn>,
    statements: &'a Statements,
    /// Every append in a savepoint of its own (the fallback).
    savepoint_every_append: bool,
    /// The current append holds a savepoint.
    in_savepoint: bool,
    /// The current append's record waits to be written with its run's row.
    record_pending: bool,
    /// The heads of the batch's runs as this transaction has them: read
    /// (and locked) once, then moved by its own appends. Unused in the
    /// fallback, which reads every head.
    heads: HashMap<(String, String), RunHead>,
    /// The current append is an ordinary one (a run that exists, no
    /// idempotency key, no conclusion), written with the others at the end.
    buffering: bool,
    /// How many appends were buffered when the current one began.
    buffered_before: usize,
    /// Ordinary appends waiting to be written in one statement.
    buffered: Vec<BufferedRecord>,
    /// A statement failed in an append without a savepoint: the
    /// transaction is aborted and the batch must be rewritten.
    failed_unisolated: bool,
}

impl<'a, 'conn> PgAppend<'a, 'conn> {
    fn new(
        txn: &'a mut postgres::Transaction<'conn>,
        statements: &'a Statements,
        savepoint_every_append: bool,
    ) -> Self {
        Self {
            txn,
            statements,
            savepoint_every_append,
            in_savepoint: false,
            record_pending: false,
            heads: HashMap::new(),
            buffering: false,
            buffered_before: 0,
            buffered: Vec::new(),
            failed_unisolated: false,
        }
    }
}

/// An ordinary append's record, owned until the batch's one write.
struct BufferedRecord {
    tenant: String,
    run: String,
    seq: i64,
    kind: String,
    effect_key: Option<String>,
    hash: Vec<u8>,
    /// As stored: encoded when `encoding` is [`ENCODED`].
    bytes: Vec<u8>,
    encoding: i16,
    key_ref: Option<i32>,
    signature: Option<Vec<u8>>,
}

/// A runs row's outcome as a read sees it: one this build knows, or the
/// text of one it does not (a newer build's conclusion, or a forged row),
/// which the reader holds to the run's chain ([`RunRows::unknown_outcome`]):
/// build skew when a record of it is unreadable here, damage when none is.
fn read_outcome(outcome: Option<String>) -> (Option<Outcome>, Option<String>) {
    match outcome.as_deref().map(Outcome::parse) {
        Some(Some(known)) => (Some(known), None),
        Some(None) => (None, outcome.as_deref().map(Outcome::unknown_name)),
        None => (None, None),
    }
}

/// A runs row's head, from a row whose first columns are `head_seq,
/// head_hash, sealed, outcome`, as an append sees it (an outcome this build
/// does not know reads as none, its name in `unknown_outcome`).
fn run_head_of_row(tenant: &TenantId, run: &RunId, row: &postgres::Row) -> Result<RunHead, JournalError> {
    let hash: Vec<u8> = column(tenant, row, 1)?;
    let head = head_of(tenant, run, column(tenant, row, 0)?, &hash)?;
    let (outcome, unknown) = read_outcome(column(tenant, row, 3)?);
    Ok(RunHead { head, sealed: column(tenant, row, 2)?, outcome, unknown_outcome: unknown })
}

impl PgAppend<'_, '_> {
    /// Locks and reads the rows of every run of `batch` that exists.
    fn lock_runs(&mut self, batch: &[&AppendRequest]) -> Result<(), JournalError> {
        let mut by_tenant: BTreeMap<&TenantId, Vec<&str>> = BTreeMap::new();
        for request in batch {
            by_tenant.entry(&request.tenant).or_default().push(request.run.as_str());
        }
        for (tenant, runs) in by_tenant {
            let rows = self
                .txn
                .query(&self.statements.lock_runs, &[&tenant.as_str(), &runs])
                .map_err(|err| pg("locking the batch's runs", err))?;
            for row in rows {
                let run = run_id(tenant, column(tenant, &row, 4)?)?;
                // A row naming an outcome this build does not know is
                // left to its own append to answer (`run_head`), never the
                // whole batch's failure, every tenant's appends in it.
                let head = run_head_of_row(tenant, &run, &row)?;
                if head.unknown_outcome.is_none() {
                    self.heads.insert((tenant.as_str().to_owned(), run.as_str().to_owned()), head);
                }
            }
        }
        Ok(())
    }

    /// Writes the buffered ordinary appends, in one statement.
    fn write_buffered(&mut self) -> Result<(), AppendFailure> {
        let buffered = std::mem::take(&mut self.buffered);
        if buffered.is_empty() {
            return Ok(());
        }
        let column = |pick: fn(&BufferedRecord) -> Option<&str>| buffered.iter().map(pick).collect::<Vec<_>>();
        let bytes = |pick: fn(&BufferedRecord) -> Option<&[u8]>| buffered.iter().map(pick).collect::<Vec<_>>();
        let tenants = column(|r| Some(r.tenant.as_str()));
        let runs = column(|r| Some(r.run.as_str()));
        let seqs: Vec<i64> = buffered.iter().map(|r| r.seq).collect();
        let kinds = column(|r| Some(r.kind.as_str()));
        let effect_keys = column(|r| r.effect_key.as_deref());
        let hashes = bytes(|r| Some(r.hash.as_slice()));
        let bodies = bytes(|r| Some(r.bytes.as_slice()));
        let encodings: Vec<i16> = buffered.iter().map(|r| r.encoding).collect();
        let key_refs: Vec<Option<i32>> = buffered.iter().map(|r| r.key_ref).collect();
        let signatures = bytes(|r| r.signature.as_deref());
        let runs_moved: BTreeSet<(&str, &str)> = buffered.iter().map(|r| (r.tenant.as_str(), r.run.as_str())).collect();
        let written = self.txn.execute(
            &self.statements.write_buffered,
            &[&tenants, &runs, &seqs, &kinds, &effect_keys, &hashes, &bodies, &encodings, &key_refs, &signatures],
        );
        let outcome = match written {
            Ok(moved) if usize::try_from(moved).is_ok_and(|moved| moved == runs_moved.len()) => Ok(()),
            Ok(moved) => Err(AppendFailure::Broken(machinery(&format!(
                "the batch's ordinary appends moved {moved} runs rows of {}",
                runs_moved.len()
            )))),
            Err(err) => Err(AppendFailure::Broken(pg("writing the batch's appends", err))),
        };
        // The callers of these appends were answered already: any failure
        // here rewrites the batch (see `commit_batch`).
        self.failed_unisolated |= outcome.is_err();
        outcome
    }

    fn execute(
        &mut self,
        request: &AppendRequest,
        context: &'static str,
        statement: fn(&Statements) -> &postgres::Statement,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<(), AppendFailure> {
        self.flush_record(request)?;
        self.run(request, context, statement, params)
    }

    fn run(
        &mut self,
        request: &AppendRequest,
        context: &'static str,
        statement: fn(&Statements) -> &postgres::Statement,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<(), AppendFailure> {
        self.write(statement, params).map_err(|err| classify(request, context, err))
    }

    /// One write; a failure outside a savepoint marks the batch for the
    /// rewrite (see [`commit_batch`]).
    fn write(
        &mut self,
        statement: fn(&Statements) -> &postgres::Statement,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<(), postgres::Error> {
        let done = self.txn.execute(statement(self.statements), params).map(drop);
        self.failed_unisolated |= done.is_err() && !self.in_savepoint;
        done
    }

    /// Writes a record still waiting for its run's row: another write of the
    /// same append comes first.
    fn flush_record(&mut self, request: &AppendRequest) -> Result<(), AppendFailure> {
        if !std::mem::take(&mut self.record_pending) {
            return Ok(());
        }
        let record = RecordParams::new(request, self.statements)?;
        self.run(request, "inserting the record", |s| &s.insert_record, &record.list())
    }

    /// A write of the tenant's log: any failure breaks the batch (positions
    /// are taken under the tenant's lock, so no other writer races them).
    fn execute_log(
        &mut self,
        context: &'static str,
        statement: fn(&Statements) -> &postgres::Statement,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<(), AppendFailure> {
        self.write(statement, params).map_err(|err| AppendFailure::Broken(pg(context, err)))
    }

    /// A new row of the tenant's log (a leaf, a node): one there already
    /// was written behind the plane (the counter moved back below a leaf it
    /// gave, or a node planted for a position not sealed yet; no other
    /// writer races a position, see [`Self::execute_log`]), and so was a
    /// seal count the trigger cannot add one to. That append is refused as
    /// damage naming `row`, rolled back alone: the rest of its batch commits.
    fn insert_log_row(
        &mut self,
        tenant: &TenantId,
        row: impl FnOnce() -> String,
        statement: fn(&Statements) -> &postgres::Statement,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<(), AppendFailure> {
        self.write(statement, params).map_err(|err| match err.code() {
            Some(&postgres::error::SqlState::UNIQUE_VIOLATION) => AppendFailure::Refused(damaged(
                tenant,
                format!(
                    "{} is stored already, though the log counter gives it only now: the counter was moved back, \
                     or the row written, behind the plane. Nothing was appended; run `agentplane verify`",
                    row()
                ),
            )),
            // The seals trigger adding one to a seal count at the largest bigint.
            Some(&postgres::error::SqlState::NUMERIC_VALUE_OUT_OF_RANGE) => AppendFailure::Refused(damaged(
                tenant,
                format!(
                    "{} cannot be counted: the log_counter row's seal_count is at the largest bigint, which no log \
                     reaches: the row was written behind the plane. Nothing was appended; run `agentplane verify`",
                    row()
                ),
            )),
            _ => AppendFailure::Broken(pg("storing a log leaf or node", err)),
        })
    }

    fn savepoint(&mut self, sql: &str) -> Result<(), JournalError> {
        self.txn.batch_execute(sql).map_err(|err| pg("an append's savepoint", err))
    }
}

/// A record's columns, in the order of the record insert's parameters.
struct RecordParams<'r> {
    request: &'r AppendRequest,
    tenant: &'r str,
    run: &'r str,
    seq: i64,
    hash: &'r [u8],
    bytes: &'r [u8],
    encoding: i16,
    key_ref: Option<i32>,
    signature: Option<&'r [u8]>,
}

impl<'r> RecordParams<'r> {
    fn new(request: &'r AppendRequest, statements: &Statements) -> Result<Self, AppendFailure> {
        let row = &request.row;
        let (bytes, encoding) = stored_bytes(request);
        Ok(Self {
            request,
            tenant: request.tenant.as_str(),
            run: request.run.as_str(),
            seq: to_i64(row.seq).map_err(refused)?,
            hash: row.hash.as_bytes().as_slice(),
            bytes,
            encoding,
            key_ref: key_ref(statements, request).map_err(AppendFailure::Broken)?,
            signature: row.signature.as_ref().map(|s| s.signature.as_slice()),
        })
    }

    fn list(&self) -> [&(dyn postgres::types::ToSql + Sync); 10] {
        let row = &self.request.row;
        [
            &self.tenant,
            &self.run,
            &self.seq,
            &row.kind,
            &row.effect_key,
            &self.hash,
            &self.bytes,
            &self.encoding,
            &self.key_ref,
            &self.signature,
        ]
    }
}

/// A row's `encoding` (schema 5): its bytes as `journal_core::encoding`
/// stores them. Rows written before are 0, the bytes as written.
const ENCODED: i16 = 1;
/// The bytes as written, every row of schema 4 and before.
const AS_WRITTEN: i16 = 0;

/// The bytes a request's row is stored as, with their `encoding`: as the
/// appender encoded them ([`Store::append`]), else as written.
fn stored_bytes(request: &AppendRequest) -> (&[u8], i16) {
    match &request.encoded_bytes {
        Some(encoded) => (encoded.as_slice(), ENCODED),
        None => (request.row.bytes.as_slice(), AS_WRITTEN),
    }
}

/// The `signing_keys` reference of the key that signed a request's row,
/// interned before its batch ([`intern_keys`]).
fn key_ref(statements: &Statements, request: &AppendRequest) -> Result<Option<i32>, JournalError> {
    let Some(signature) = &request.row.signature else { return Ok(None) };
    statements
        .key_refs
        .borrow()
        .get(&signature.key_id)
        .copied()
        .map(Some)
        .ok_or_else(|| machinery(&format!("the signing key {:?} was not interned before its batch", signature.key_id)))
}

/// Interns every signing key of `batch` this connection has not seen yet,
/// each in a statement of its own before the batch's transaction (a key
/// interned for a batch that then fails is harmless).
fn intern_keys(client: &mut Client, statements: &Statements, batch: &[&AppendRequest]) -> Result<(), JournalError> {
    for request in batch {
        let Some(signature) = &request.row.signature else { continue };
        if statements.key_refs.borrow().contains_key(&signature.key_id) {
            continue;
        }
        let rows = client
            .query(&statements.intern_key, &[&signature.key_id])
            .map_err(|err| pg("interning a signing key", err))?;
        // The insert answers one reference, inserted or met. No row (a
        // trigger or rule skipping the write, behind the plane) is damage,
        // never the row-count failure `query_one` makes of it, which `pg`
        // calls retryable: every signed append would be retried for ever.
        let Some(row) = at_most_one(&request.tenant, "signing_keys", &signature.key_id, rows)? else {
            return Err(damaged(
                &request.tenant,
                format!("interning the signing key {:?} returned no reference", signature.key_id),
            ));
        };
        let key_ref: i32 = column(&request.tenant, &row, 0)?;
        statements.key_refs.borrow_mut().insert(signature.key_id.clone(), key_ref);
    }
    Ok(())
}

fn refused(err: JournalError) -> AppendFailure {
    AppendFailure::Refused(err)
}

impl AppendTxn for PgAppend<'_, '_> {
    fn begin_append(&mut self) -> Result<(), JournalError> {
        self.record_pending = false;
        self.buffering = false;
        self.buffered_before = self.buffered.len();
        self.in_savepoint = self.savepoint_every_append;
        if self.in_savepoint { self.savepoint("SAVEPOINT append") } else { Ok(()) }
    }

    fn end_append(&mut self, kept: bool) -> Result<(), JournalError> {
        if !kept {
            // A refused ordinary append leaves nothing buffered.
            self.buffered.truncate(self.buffered_before);
        }
        self.buffering = false;
        // A refused append may leave its record unwritten: nothing to undo.
        if std::mem::take(&mut self.record_pending) && kept {
            return Err(machinery("an append ended with its record unwritten"));
        }
        if std::mem::take(&mut self.in_savepoint) {
            return self.savepoint(if kept { "RELEASE SAVEPOINT append" } else { "ROLLBACK TO SAVEPOINT append" });
        }
        if self.failed_unisolated {
            // Nothing undoes a failed write without a savepoint: the batch
            // is rewritten with one for every append (see `commit_batch`).
            return Err(machinery("an append failed after writing without a savepoint"));
        }
        Ok(())
    }

    fn run_head(&mut self, request: &AppendRequest) -> Result<Option<RunHead>, AppendFailure> {
        let (tenant, run) = (request.tenant.as_str(), request.run.as_str());
        if !self.savepoint_every_append
            && let Some(head) = self.heads.get(&(tenant.to_owned(), run.to_owned())).cloned()
        {
            self.buffering = request.idempotency_key.is_none() && request.conclusion.is_none();
            if !self.buffering {
                // Statements stay in the order of the appends.
                self.write_buffered()?;
            }
            return Ok(Some(head));
        }
        self.write_buffered()?;
        let current = self.txn.query(&self.statements.select_run, &[&tenant, &run]);
        self.failed_unisolated |= current.is_err() && !self.in_savepoint;
        let current = current.map_err(|err| classify(request, "reading the run", err))?;
        // Two runs rows for one key (its primary key dropped behind the
        // plane) are damage, refused, never a retryable failure.
        let Some(row) = at_most_one(&request.tenant, "runs", &run, current).map_err(refused)? else {
            // A new run: another writer may create it meanwhile, so this
            // append's writes can be refused (a unique violation) and must
            // roll back alone. The read above wrote nothing.
            if !self.in_savepoint {
                self.savepoint("SAVEPOINT append").map_err(AppendFailure::Broken)?;
                self.in_savepoint = true;
            }
            return Ok(None);
        };
        let head = run_head_of_row(&request.tenant, &request.run, &row).map_err(refused)?;
        if head.unknown_outcome.is_some() {
            // Never cached: the fold refuses it at the caller's head.
            return Ok(Some(head));
        }
        if !self.savepoint_every_append {
            self.heads.insert((tenant.to_owned(), run.to_owned()), head.clone());
        }
        Ok(Some(head))
    }

    fn next_position(&mut self, tenant: &TenantId) -> Result<u64, AppendFailure> {
        // R-LOG-5: the tenant's positions are taken under a transaction lock
        // held until commit, so the next sealer reads the counter only after
        // this one is committed: positions follow commit order.
        self.execute_log("the tenant's sealing lock", |s| &s.lock_tenant_log, &[&tenant.as_str()])?;
        let rows = self
            .txn
            .query(&self.statements.select_counter, &[&tenant.as_str()])
            .map_err(|err| AppendFailure::Broken(pg("the log counter", err)))?;
        let next: i64 = at_most_one(tenant, "log_counter", &tenant.as_str(), rows)
            .map_err(refused)?
            .map_or(Ok(0), |row| column(tenant, &row, 0))
            .map_err(refused)?;
        to_u64(tenant, next, || "the log_counter row: next_position".to_owned()).map_err(refused)
    }

    fn log_nodes(&mut self, tenant: &TenantId, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
        read_nodes(&mut *self.txn, &self.statements.select_node, tenant, ids)
    }

    fn put_record(&mut self, request: &AppendRequest) -> Result<(), AppendFailure> {
        if self.buffering {
            let row = &request.row;
            let (bytes, encoding) = stored_bytes(request);
            self.buffered.push(BufferedRecord {
                tenant: request.tenant.as_str().to_owned(),
                run: request.run.as_str().to_owned(),
                seq: to_i64(row.seq).map_err(refused)?,
                kind: row.kind.clone(),
                effect_key: row.effect_key.clone(),
                hash: row.hash.as_bytes().to_vec(),
                bytes: bytes.to_vec(),
                encoding,
                key_ref: key_ref(self.statements, request).map_err(AppendFailure::Broken)?,
                signature: row.signature.as_ref().map(|s| s.signature.clone()),
            });
            return Ok(());
        }
        // Written with the run's row (one round trip), or before any other
        // write of this append.
        self.record_pending = true;
        Ok(())
    }

    fn put_idempotency_key(&mut self, request: &AppendRequest, key: &str) -> Result<(), AppendFailure> {
        let params: [&(dyn postgres::types::ToSql + Sync); 3] = [&request.tenant.as_str(), &key, &request.run.as_str()];
        self.execute(request, "indexing the idempotency key", |s| &s.upsert_idempotency, &params)
    }

    fn put_admission(&mut self, request: &AppendRequest, at: journal_core::At) -> Result<(), AppendFailure> {
        let params: [&(dyn postgres::types::ToSql + Sync); 3] =
            [&request.tenant.as_str(), &at.unix_millis(), &request.run.as_str()];
        self.execute(request, "the admission order", |s| &s.insert_admission, &params)
    }

    fn put_outcome(
        &mut self,
        request: &AppendRequest,
        old: Option<Outcome>,
        new: Outcome,
    ) -> Result<(), AppendFailure> {
        let (tenant, run) = (request.tenant.as_str(), request.run.as_str());
        if let Some(old) = old {
            self.execute(request, "the outcome index", |s| &s.delete_outcome, &[&tenant, &old.as_str(), &run])?;
        }
        self.execute(request, "the outcome index", |s| &s.insert_outcome, &[&tenant, &new.as_str(), &run])
    }

    fn put_leaf(&mut self, tenant: &TenantId, run: &str, position: u64, leaf: &[u8]) -> Result<(), AppendFailure> {
        if self.record_pending {
            return Err(AppendFailure::Broken(machinery("a log leaf came before its record")));
        }
        let at = to_i64(position).map_err(refused)?;
        let params: [&(dyn postgres::types::ToSql + Sync); 4] = [&tenant.as_str(), &at, &run, &leaf];
        let row = || format!("a seals row at log position {position}");
        self.insert_log_row(tenant, row, |s| &s.insert_seal, &params)
    }

    fn put_log_node(&mut self, tenant: &TenantId, id: NodeId, hash: &NodeHash) -> Result<(), AppendFailure> {
        let index = to_i64(id.index).map_err(refused)?;
        let params: [&(dyn postgres::types::ToSql + Sync); 4] =
            [&tenant.as_str(), &i16::from(id.level), &index, &hash.as_bytes().as_slice()];
        let row = || format!("a log_nodes row at level {} index {}", id.level, id.index);
        self.insert_log_row(tenant, row, |s| &s.insert_node, &params)
    }

    fn put_next_position(&mut self, tenant: &TenantId, next: u64) -> Result<(), AppendFailure> {
        let next = to_i64(next).map_err(refused)?;
        self.execute_log("advancing the log counter", |s| &s.upsert_counter, &[&tenant.as_str(), &next])
    }

    fn moved_heads(&mut self, tenant: &TenantId) -> Result<Vec<(HeadEntry, bool)>, AppendFailure> {
        self.write_buffered()?;
        // Read under the tenant's log lock (taken again by `next_position`,
        // which stacks): a signer that read the moved runs before waiting
        // for that lock read them before the signer ahead of it committed,
        // and put stale heads in a later leaf than the fresh ones (a run
        // covered at seq 12 by one leaf, then "newest" at seq 10 in the
        // next), which the audit then read as a moved mark deleted.
        self.execute_log("the tenant's sealing lock", |s| &s.lock_tenant_log, &[&tenant.as_str()])?;
        let rows = self
            .txn
            .query(
                "SELECT run, head_seq, head_hash, EXISTS (SELECT 1 FROM records r WHERE r.tenant = runs.tenant \
                 AND r.run = runs.run AND r.seq = runs.head_seq AND r.hash = runs.head_hash) \
                 FROM runs WHERE tenant = $1 AND NOT covered AND NOT sealed",
                &[&tenant.as_str()],
            )
            .map_err(|err| AppendFailure::Broken(pg("reading the moved runs", err)))?;
        rows.iter()
            .map(|row| {
                let run = run_id(tenant, column(tenant, row, 0)?)?;
                let hash: Vec<u8> = column(tenant, row, 2)?;
                let head = head_of(tenant, &run, column(tenant, row, 1)?, &hash)?;
                Ok((HeadEntry::new(&run, head), column(tenant, row, 3)?))
            })
            .collect::<Result<Vec<_>, JournalError>>()
            .map_err(refused)
    }

    fn put_heads_entries(
        &mut self,
        tenant: &TenantId,
        position: u64,
        entries: &[HeadEntry],
    ) -> Result<(), AppendFailure> {
        let at = to_i64(position).map_err(refused)?;
        let broken = |err: postgres::Error| match err.code() {
            // Entries where no heads leaf was yet: rows written behind the plane.
            Some(&postgres::error::SqlState::UNIQUE_VIOLATION) => AppendFailure::Refused(damaged(
                tenant,
                format!(
                    "heads_entries rows at log position {position} are stored already, though the heads leaf \
                     there is appended only now: they were written behind the plane. Nothing was appended; run \
                     `agentplane verify`"
                ),
            )),
            _ => AppendFailure::Broken(pg("storing heads entries", err)),
        };
        // One statement for the whole leaf, not one per entry.
        let runs: Vec<&str> = entries.iter().map(|entry| entry.run.as_str()).collect();
        let seqs = entries.iter().map(|entry| to_i64(entry.seq)).collect::<Result<Vec<i64>, _>>().map_err(refused)?;
        let hashes: Vec<&[u8]> = entries.iter().map(|entry| entry.hash.as_bytes().as_slice()).collect();
        let t = tenant.as_str();
        self.txn
            .execute(
                "INSERT INTO heads_entries (tenant, position, run, seq, hash)
                 SELECT $1, $2, e.run, e.seq, e.hash FROM unnest($3::text[], $4::bigint[], $5::bytea[]) AS e(run, seq, hash)",
                &[&t, &at, &runs, &seqs, &hashes],
            )
            .map_err(broken)?;
        // Covered only where the head is still the one entered: a run that
        // moved on meanwhile stays moved for the next heads leaf. A runs row
        // an append batch holds is skipped, never waited for: that batch
        // holds it while it waits for this tenant's log lock, which this
        // transaction holds (waiting would be a deadlock), and the run is
        // moving anyway, so it stays moved and the next heads leaf enters it.
        self.txn
            .execute(
                "UPDATE runs SET covered = true WHERE (tenant, run) IN (
                     SELECT runs.tenant, runs.run FROM runs
                     JOIN unnest($2::text[], $3::bigint[]) AS e(run, seq) ON runs.run = e.run AND runs.head_seq = e.seq
                     WHERE runs.tenant = $1
                     FOR UPDATE OF runs SKIP LOCKED)",
                &[&t, &runs, &seqs],
            )
            .map_err(broken)?;
        Ok(())
    }

    fn put_run_head(&mut self, request: &AppendRequest, row: RunHead) -> Result<(), AppendFailure> {
        let written = self.write_run_head(request, &row);
        if written.is_ok() && !self.savepoint_every_append {
            self.heads.insert((request.tenant.as_str().to_owned(), request.run.as_str().to_owned()), row);
        }
        written
    }
}

impl PgAppend<'_, '_> {
    fn write_run_head(&mut self, request: &AppendRequest, row: &RunHead) -> Result<(), AppendFailure> {
        if self.buffering {
            // The batch's one statement moves the row to its last record.
            let last = self.buffered.last().map(|r| (r.seq, r.hash.as_slice()));
            if row.sealed || last != Some((to_i64(row.head.seq).map_err(refused)?, row.head.hash.as_bytes().as_slice()))
            {
                return Err(AppendFailure::Broken(machinery("a buffered append's head is not its record")));
            }
            return Ok(());
        }
        let seq = to_i64(row.head.seq).map_err(refused)?;
        if std::mem::take(&mut self.record_pending) {
            if request.row.seq != row.head.seq || request.row.hash != row.head.hash {
                return Err(AppendFailure::Broken(machinery("a run's new head is not its new record")));
            }
            let record = RecordParams::new(request, self.statements)?;
            let outcome = row.outcome.map(|o| o.as_str());
            let mut params = record.list().to_vec();
            params.extend([&row.sealed as &(dyn postgres::types::ToSql + Sync), &outcome]);
            let written = self.txn.execute(&self.statements.insert_record_and_upsert_run, &params);
            self.failed_unisolated |= written.is_err() && !self.in_savepoint;
            return match written.map_err(|err| classify(request, "inserting the record", err))? {
                1 => Ok(()),
                // The database kept neither the record nor its run's row: a
                // trigger or rule behind the plane skipped the write. The
                // append did not happen, and neither may the batch.
                written => {
                    self.failed_unisolated |= !self.in_savepoint;
                    Err(AppendFailure::Broken(damaged(
                        &request.tenant,
                        format!(
                            "the database wrote {written} rows for the record of run {} seq {} where it takes one \
                             (a trigger or rule on `records` or `runs` behind the plane?)",
                            request.run, request.row.seq
                        ),
                    )))
                }
            };
        }
        let params: [&(dyn postgres::types::ToSql + Sync); 6] = [
            &request.tenant.as_str(),
            &request.run.as_str(),
            &seq,
            &row.head.hash.as_bytes().as_slice(),
            &row.sealed,
            &row.outcome.map(|o| o.as_str()),
        ];
        self.execute(request, "the runs table", |s| &s.upsert_run, &params)
    }
}

/// A run's row of the outcome index under the outcome its runs row holds,
/// by the whole primary key. Keyed by the run alone, the delete read every
/// row of the tenant's outcomes (the key leads with the outcome): 2.8 ms a
/// conclusion at a million records, most of the appends' time there.
const DELETE_OUTCOME: &str = "DELETE FROM outcome_index WHERE tenant = $1 AND outcome = $2 AND run = $3";

/// The hashes of `ids`, in their order, in one query: a seal reads about
/// log2(n) nodes and a proof twice that, so one round trip each would make
/// both grow with the log on a server a network away.
/// `read_nodes`'s query: the nodes of a tenant whose (level, index) pairs
/// are given as two arrays.
const SELECT_NODES: &str = "SELECT n.level, n.index, n.hash FROM log_nodes n
     JOIN unnest($2::smallint[], $3::bigint[]) AS wanted(level, index) USING (level, index)
     WHERE n.tenant = $1";

fn read_nodes(
    conn: &mut impl postgres::GenericClient,
    statement: &postgres::Statement,
    tenant: &TenantId,
    ids: &[NodeId],
) -> Result<Vec<NodeHash>, JournalError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let levels: Vec<i16> = ids.iter().map(|id| i16::from(id.level)).collect();
    let indexes = ids.iter().map(|id| to_i64(id.index)).collect::<Result<Vec<i64>, _>>()?;
    let rows =
        conn.query(statement, &[&tenant.as_str(), &levels, &indexes]).map_err(|err| pg("reading log nodes", err))?;
    let mut found: HashMap<NodeId, Vec<u8>> = HashMap::with_capacity(rows.len());
    for row in rows {
        let level = node_level(tenant, column(tenant, &row, 0)?)?;
        let index = to_u64(tenant, column(tenant, &row, 1)?, || format!("a log_nodes row at level {level}: index"))?;
        let id = NodeId::new(level, index);
        // A node asked twice comes twice; two hashes for it are two rows.
        let hash: Vec<u8> = column(tenant, &row, 2)?;
        if found.insert(id, hash.clone()).is_some_and(|other| other != hash) {
            return Err(twice(tenant, "log_nodes", &id));
        }
    }
    ids.iter()
        .map(|id| {
            let hash = found.get(id).ok_or_else(|| damaged(tenant, format!("log node {id:?} is missing")))?;
            NodeHash::try_from(hash.as_slice()).map_err(|_| damaged(tenant, format!("log node {id:?} is not 32 bytes")))
        })
        .collect()
}

/// The columns of a records row from column `first` on: `seq, kind,
/// effect_key, prev_hash, hash, bytes, key_id, signature, encoding,
/// key_ref, octet_length(bytes)`, the bytes null past
/// [`MAX_STORED_RECORD`] (spelt in each query that reads them), so a row
/// grown behind the plane is never read whole. `before` is the hash of the run's
/// row read before it (the genesis hash for its first), which a row without
/// a previous hash (schema 5) links to; `keys` the signing keys by
/// reference, for a row that names its key by reference alone.
fn stored_record(
    tenant: &TenantId,
    run: &RunId,
    row: &postgres::Row,
    first: usize,
    before: ChainHash,
    keys: &HashMap<i32, String>,
) -> Result<StoredRecord, JournalError> {
    let seq = to_u64(tenant, column(tenant, row, first)?, || format!("a records row of run {run}: seq"))?;
    let key_id: Option<String> = column(tenant, row, first + 6)?;
    let key_ref: Option<i32> = column(tenant, row, first + 9)?;
    let key_id = key_id.or_else(|| key_ref.and_then(|key_ref| keys.get(&key_ref).cloned()));
    let signature: Option<Vec<u8>> = column(tenant, row, first + 7)?;
    if let (None, Some(key_ref)) = (&key_id, key_ref) {
        // A reference that resolves to nothing is its own damage: said as
        // such, not as half a signature pair (the signature is there) and
        // never as bytes that do not hash (they do).
        return Err(JournalError::Tamper {
            run: run.clone(),
            seq,
            kind: journal_core::TamperKind::MalformedRow,
            detail: Some(format!("the row's signing key reference {key_ref} names no `signing_keys` row")),
        });
    }
    Ok(StoredRecord {
        signature: journal_core::store::stored_signature(run, seq, key_id, signature)?,
        ..stored_record_unsigned(tenant, run, row, first, before, true)?
    })
}

/// The record of a row read at column `first` on (see [`stored_record`]),
/// its signature columns left unread, and its bytes too unless `decode`.
fn stored_record_unsigned(
    tenant: &TenantId,
    run: &RunId,
    row: &postgres::Row,
    first: usize,
    before: ChainHash,
    decode: bool,
) -> Result<StoredRecord, JournalError> {
    let seq = to_u64(tenant, column(tenant, row, first)?, || format!("a records row of run {run}: seq"))?;
    let hash_of = |bytes: Vec<u8>| stored_chain_hash(run, seq, &bytes, "a stored record hash");
    let prev_hash: Option<Vec<u8>> = column(tenant, row, first + 3)?;
    let stored: Vec<u8> = if decode {
        let bytes: Option<Vec<u8>> = column(tenant, row, first + 5)?;
        match bytes {
            Some(bytes) => bytes,
            None => {
                let length: Option<i32> = column(tenant, row, first + 10)?;
                return Err(damaged(
                    tenant,
                    format!(
                        "run {run}, record {seq}: the row keeps {} bytes, past the {MAX_STORED_RECORD} a record is \
                         ever stored as: it was written behind the plane, and was not read (run `agentplane verify`)",
                        length.unwrap_or_default()
                    ),
                ));
            }
        }
    } else {
        Vec::new()
    };
    let bytes = match column::<i16>(tenant, row, first + 8)? {
        _ if !decode => stored,
        AS_WRITTEN => stored,
        ENCODED => journal_core::encoding::decode(&stored)
            .map_err(|err| damaged(tenant, format!("run {run}, record {seq}: {err}")))?,
        other => {
            return Err(damaged(
                tenant,
                format!("run {run}, record {seq}: the row names encoding {other}, which no build writes"),
            ));
        }
    };
    Ok(StoredRecord {
        seq,
        kind: column(tenant, row, first + 1)?,
        effect_key: column(tenant, row, first + 2)?,
        prev_hash: prev_hash.map_or(Ok(before), hash_of)?,
        hash: hash_of(column(tenant, row, first + 4)?)?,
        bytes,
        signature: None,
    })
}

/// The most bytes a records row keeps: a record's bound and its encoding's
/// tag byte (a record is compressed only where that is smaller).
const MAX_STORED_RECORD: usize = journal_core::record::MAX_RECORD_BYTES + 1;
// The bound spelt in the queries that read records' bytes.
const _: () = assert!(MAX_STORED_RECORD == 16_777_217);

/// A heads entries row `position, run, seq, hash`.
/// Heads entry rows by position, each position's in run id order by bytes
/// (the order its leaf commits to): sorted here, because `ORDER BY run`
/// follows the database's text collation, which need not be byte order.
fn heads_entries_of_rows(
    tenant: &TenantId,
    rows: &[postgres::Row],
) -> Result<journal_core::store::HeadsByPosition, JournalError> {
    let mut entries = journal_core::store::HeadsByPosition::new();
    for row in rows {
        let (position, entry) = head_entry_of_row(tenant, row)?;
        entries.entry(position).or_default().push(entry);
    }
    for held in entries.values_mut() {
        held.sort_unstable();
    }
    Ok(entries)
}

fn head_entry_of_row(tenant: &TenantId, row: &postgres::Row) -> Result<(u64, HeadEntry), JournalError> {
    let run = run_id(tenant, column(tenant, row, 1)?)?;
    let position = to_u64(tenant, column(tenant, row, 0)?, || format!("a heads_entries row of run {run}: position"))?;
    let seq = to_u64(tenant, column(tenant, row, 2)?, || {
        format!("the heads_entries row of run {run} at position {position}: seq")
    })?;
    let hash: Vec<u8> = column(tenant, row, 3)?;
    let hash = stored_chain_hash(&run, seq, &hash, "a heads entry's hash")?;
    Ok((position, HeadEntry { run, seq, hash }))
}

/// The columns of a checkpoints row [`signed_tree`] reads: its note only
/// when it is within [`MAX_NOTE`] (a value may be a gigabyte), and the
/// note's length.
const CHECKPOINT_COLUMNS: &str =
    "size, root, CASE WHEN octet_length(note) <= 2097152 THEN note END, octet_length(note)";
// The bound spelled in `CHECKPOINT_COLUMNS`.
const _: () = assert!(MAX_NOTE == 2_097_152);

/// A checkpoints row of [`CHECKPOINT_COLUMNS`]. A note past the bound is
/// damage, and was not read.
fn signed_tree(tenant: &TenantId, table: &str, row: &postgres::Row) -> Result<SignedTree, JournalError> {
    let size = to_u64(tenant, column(tenant, row, 0)?, || format!("a {table} row: size"))?;
    let root: Vec<u8> = column(tenant, row, 1)?;
    let root = RootHash::try_from(root.as_slice())
        .map_err(|_| damaged(tenant, format!("a {table} root at size {size} is not 32 bytes")))?;
    let length: Option<i32> = column(tenant, row, 3)?;
    if let Some(length) = length.filter(|length| usize::try_from(*length).is_ok_and(|l| l > MAX_NOTE)) {
        return Err(damaged(
            tenant,
            format!(
                "the {table} row at size {size} keeps a note of {length} bytes, past the {MAX_NOTE} a signed note \
                 can be: it was written behind the plane, and was not read (run `agentplane verify`)"
            ),
        ));
    }
    Ok(SignedTree { tree: Tree::new(size, root), note: column(tenant, row, 2)? })
}

const MAX_NOTE: usize = journal_core::store::MAX_STORED_NOTE_BYTES;

/// Everything of `tenant` in one read-only repeatable-read transaction, one
/// query per table (never one per run).
/// How the snapshot's reads are planned. Every one wants rows in its primary
/// key's order, which the key's index gives as it goes: a sort instead (what
/// the planner picks when its statistics are stale, as after a bulk load)
/// holds back every row until the last is read, so the audit's workers idle
/// meanwhile, and spills to disk past `work_mem`. Measured on 70,000 records
/// before any ANALYZE: 145 ms sorted on disk, 77 ms by the index.
const SNAPSHOT_PLANS: &str = "SET LOCAL enable_sort = off";

/// A tenant's records for the snapshot: each run's together, in seq order.
const SELECT_SNAPSHOT_RECORDS: &str = concat!(
    "SELECT r.run, ",
    "r.seq, r.kind, r.effect_key, r.prev_hash, r.hash, ",
    "CASE WHEN octet_length(r.bytes) <= 16777217 THEN r.bytes END, ",
    "r.key_id, r.signature, r.encoding, r.key_ref, octet_length(r.bytes)",
    " FROM records r WHERE r.tenant = $1 ORDER BY r.run, r.seq"
);

fn read_snapshot(conn: &mut Client, tenant: &TenantId, sink: &mut dyn SnapshotSink) -> Result<(), JournalError> {
    let fail = |what: &'static str| move |err| pg(what, err);
    let mut txn = conn
        .build_transaction()
        .read_only(true)
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .start()
        .map_err(fail("starting the snapshot"))?;
    txn.batch_execute(SNAPSHOT_PLANS).map_err(fail("starting the snapshot"))?;
    sink.tables(read_tables(&mut txn, tenant)?)?;
    let keys = signing_keys(&mut txn, tenant)?;
    // Streamed, not collected: the sink verifies runs while later rows
    // are still arriving, and the tenant is never held whole in memory.
    let mut rows =
        txn.query_raw(SELECT_SNAPSHOT_RECORDS, std::iter::once(tenant.as_str())).map_err(fail("reading records"))?;
    let mut in_order = RecordsInRunOrder::new(sink);
    let mut before: Option<(RunId, ChainHash)> = None;
    while let Some(row) = rows.next().map_err(fail("reading records"))? {
        let run = in_order.run_named(column(tenant, &row, 0)?, |name| run_id(tenant, name))?;
        let linked = before.take().filter(|(last, _)| *last == run).map_or(ChainHash::GENESIS, |(_, hash)| hash);
        match stored_record(tenant, &run, &row, 1, linked, &keys) {
            Ok(record) => {
                before = Some((run.clone(), record.hash));
                in_order.push(run, record)?;
            }
            // A row whose bytes do not decode, or whose signature columns
            // are half a pair, is handed on with no bytes and no signature,
            // which no chain hash covers: the audit finds its run's chain
            // broken at this seq and goes on to every other run (as redb's
            // snapshot does), where an error would end the snapshot here.
            Err(
                why @ (JournalError::StoreDamage { .. }
                | JournalError::Tamper { kind: journal_core::TamperKind::MalformedRow, .. }),
            ) => {
                // A row whose very seq cannot be read (negative: written
                // behind the plane) stands where it came, at the position it
                // takes among the run's rows, with no bytes and no hash: its
                // run's chain breaks there, named by `why`, and the audit
                // gives its verdict on every other run, where an error here
                // ended the whole snapshot.
                let record =
                    stored_record_unsigned(tenant, &run, &row, 1, linked, false).unwrap_or_else(|_| StoredRecord {
                        seq: in_order.next_position(&run),
                        kind: String::new(),
                        effect_key: None,
                        prev_hash: ChainHash::GENESIS,
                        hash: ChainHash::GENESIS,
                        bytes: Vec::new(),
                        signature: None,
                    });
                before = Some((run.clone(), record.hash));
                in_order.push_unreadable(run, record, &why)?;
            }
            Err(err) => return Err(err),
        }
    }
    in_order.finish()?;
    drop(rows);
    txn.commit().map_err(fail("ending the snapshot"))
}

/// The signing keys by reference (schema 5), read in the snapshot's
/// transaction: a small table, read once instead of joined to every row, so
/// the records are still read by their key's index.
fn signing_keys(txn: &mut postgres::Transaction<'_>, tenant: &TenantId) -> Result<HashMap<i32, String>, JournalError> {
    let rows = txn.query("SELECT ref, key_id FROM signing_keys", &[]).map_err(|err| pg("reading signing keys", err))?;
    let mut keys = HashMap::with_capacity(rows.len());
    for row in &rows {
        let key_ref: i32 = column(tenant, row, 0)?;
        if keys.insert(key_ref, column(tenant, row, 1)?).is_some() {
            return Err(twice(tenant, "signing_keys", &key_ref));
        }
    }
    Ok(keys)
}

/// Every table of `tenant` but the records, in the snapshot's transaction.
fn read_tables(txn: &mut postgres::Transaction<'_>, tenant: &TenantId) -> Result<TenantSnapshot, JournalError> {
    let fail = |what: &'static str| move |err| pg(what, err);
    let t = tenant.as_str();
    let mut snapshot = TenantSnapshot::empty(tenant);
    for row in txn
        .query(
            "SELECT run, head_seq, head_hash, sealed, outcome, NOT covered AND NOT sealed FROM runs WHERE tenant = $1",
            &[&t],
        )
        .map_err(fail("reading runs"))?
    {
        let run = run_id(tenant, column(tenant, &row, 0)?)?;
        let hash: Vec<u8> = column(tenant, &row, 2)?;
        let head = head_of(tenant, &run, column(tenant, &row, 1)?, &hash)?;
        let outcome: Option<String> = column(tenant, &row, 4)?;
        let (outcome, unknown) = read_outcome(outcome);
        let head = RunHead { head, sealed: column(tenant, &row, 3)?, outcome, unknown_outcome: unknown };
        if column::<bool>(tenant, &row, 5)? {
            snapshot.moved.insert(run.clone());
        }
        let stored = snapshot.runs.entry(run.clone()).or_default();
        if stored.head.replace(head).is_some() {
            return Err(twice(tenant, "runs", &run));
        }
    }
    for row in txn
        .query("SELECT outcome, run FROM outcome_index WHERE tenant = $1", &[&t])
        .map_err(fail("reading the outcome index"))?
    {
        let outcome: String = column(tenant, &row, 0)?;
        let run = run_id(tenant, column(tenant, &row, 1)?)?;
        // An outcome this build does not know is a newer build's, or
        // forged: the audit holds it to the run's chain (R-VER-4).
        match Outcome::parse(&outcome) {
            Some(known) => snapshot.outcome_index.insert((known, run)),
            None => snapshot.unknown_outcomes.insert((Outcome::unknown_name(&outcome), run)),
        };
    }
    for row in txn
        .query("SELECT key, run FROM idempotency WHERE tenant = $1", &[&t])
        .map_err(fail("reading the idempotency index"))?
    {
        let key: String = column(tenant, &row, 0)?;
        if snapshot.idempotency.insert(key.clone(), run_id(tenant, column(tenant, &row, 1)?)?).is_some() {
            return Err(twice(tenant, "idempotency", &key));
        }
    }
    for row in txn
        .query("SELECT at_millis, run FROM admission_order WHERE tenant = $1", &[&t])
        .map_err(fail("reading the admission order"))?
    {
        snapshot.admissions.insert(admission_of_row(tenant, column(tenant, &row, 0)?, column(tenant, &row, 1)?)?);
    }
    for row in txn
        .query("SELECT position, run, leaf FROM seals WHERE tenant = $1 ORDER BY position", &[&t])
        .map_err(fail("reading seals"))?
    {
        let seal = seal_of_row(tenant, &row)?;
        let position = seal.position;
        if snapshot.seals.insert(position, seal).is_some() {
            return Err(twice(tenant, "seals", &position));
        }
    }
    snapshot.index_seals_by_run();
    // The seal count too: the plane reads it to tell whether positions have
    // holes, so the audit holds it to the seals read here.
    let counters = txn
        .query("SELECT next_position, seal_count FROM log_counter WHERE tenant = $1", &[&t])
        .map_err(fail("reading the log counter"))?;
    let counters = at_most_one(tenant, "log_counter", &t, counters)?
        .map(|row| -> Result<(i64, i64), JournalError> { Ok((column(tenant, &row, 0)?, column(tenant, &row, 1)?)) })
        .transpose()?;
    let (next, seal_count) = counters.map_or((0, None), |(next, count)| (next, Some(count)));
    snapshot.next_position = to_u64(tenant, next, || "the log_counter row: next_position".to_owned())?;
    snapshot.stored_seal_count =
        seal_count.map(|count| to_u64(tenant, count, || "the log_counter row: seal_count".to_owned())).transpose()?;
    for row in txn
        .query("SELECT level, index, hash FROM log_nodes WHERE tenant = $1", &[&t])
        .map_err(fail("reading log nodes"))?
    {
        let level = node_level(tenant, column(tenant, &row, 0)?)?;
        let index = to_u64(tenant, column(tenant, &row, 1)?, || format!("a log_nodes row at level {level}: index"))?;
        let id = NodeId::new(level, index);
        let hash: Vec<u8> = column(tenant, &row, 2)?;
        let hash = NodeHash::try_from(hash.as_slice())
            .map_err(|_| damaged(tenant, format!("log node {id:?} is not 32 bytes")))?;
        if snapshot.nodes.insert(id, hash).is_some() {
            return Err(twice(tenant, "log_nodes", &id));
        }
    }
    let rows = txn
        .query("SELECT position, run, seq, hash FROM heads_entries WHERE tenant = $1 ORDER BY position", &[&t])
        .map_err(fail("reading heads entries"))?;
    snapshot.heads_entries = heads_entries_of_rows(tenant, &rows)?;
    snapshot.index_heads_by_run();
    for (table, trees) in
        [("signed_checkpoints", &mut snapshot.signed), ("cosigned_checkpoints", &mut snapshot.cosigned)]
    {
        let query = format!("SELECT {CHECKPOINT_COLUMNS} FROM {table} WHERE tenant = $1 ORDER BY n");
        for row in txn.query(query.as_str(), &[&t]).map_err(fail("reading checkpoints"))? {
            trees.push(signed_tree(tenant, table, &row)?);
        }
    }
    Ok(snapshot)
}

/// A key the snapshot met twice in `table`: its primary key was dropped and
/// a second row written behind the plane. Keeping either would hide the
/// other from the audit, and a reader may be served the other.
fn twice(tenant: &TenantId, table: &str, key: &dyn std::fmt::Debug) -> JournalError {
    damaged(tenant, format!("the {table} table holds the key {key:?} twice"))
}

/// The row of a key, if any: two are a dropped primary key (see [`twice`]),
/// damage, not the retryable failure `query_opt` would make of it.
fn at_most_one(
    tenant: &TenantId,
    table: &str,
    key: &dyn std::fmt::Debug,
    rows: Vec<postgres::Row>,
) -> Result<Option<postgres::Row>, JournalError> {
    let mut rows = rows.into_iter();
    let first = rows.next();
    if rows.next().is_some() {
        return Err(twice(tenant, table, key));
    }
    Ok(first)
}

fn seal_of_row(tenant: &TenantId, row: &postgres::Row) -> Result<SealEntry, JournalError> {
    let run: String = column(tenant, row, 1)?;
    Ok(SealEntry {
        position: to_u64(tenant, column(tenant, row, 0)?, || format!("the seals row of run {run:?}: position"))?,
        run: run_id(tenant, &run)?,
        leaf_bytes: column(tenant, row, 2)?,
    })
}

impl Store for PgStore {
    fn append(&self, mut request: AppendRequest) -> Result<Option<u64>, JournalError> {
        // Encoded here, on the appender's thread, not by the thread that
        // commits the batch; always by the store itself, whatever a caller
        // put there, so the row decodes to the bytes the chain commits to.
        journal_core::record::within_record_bound(&request.run, request.row.seq, request.row.bytes.len())?;
        request.encoded_bytes = Some(journal_core::encoding::encode(&request.row.bytes));
        self.commit.append(request)
    }

    fn read_run(&self, tenant: &TenantId, run: &RunId) -> Result<RunRows, JournalError> {
        self.read_run_within(tenant, run, usize::MAX)
    }

    fn read_run_within(&self, tenant: &TenantId, run: &RunId, max_bytes: usize) -> Result<RunRows, JournalError> {
        let mut conn = self.conn()?;
        // One snapshot for the run, its rows and its seal.
        let mut txn = conn
            .build_transaction()
            .read_only(true)
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .start()
            .map_err(|err| pg("reading a run", err))?;
        let (t, r) = (tenant.as_str(), run.as_str());
        let heads = txn
            .query("SELECT head_seq, head_hash, sealed, outcome FROM runs WHERE tenant = $1 AND run = $2", &[&t, &r])
            .map_err(|err| pg("reading a run", err))?;
        let Some(head) = at_most_one(tenant, "runs", &r, heads)? else {
            return Err(JournalError::NotFound { tenant: tenant.clone(), run: run.clone() });
        };
        let hash: Vec<u8> = column(tenant, &head, 1)?;
        let expected = head_of(tenant, run, column(tenant, &head, 0)?, &hash)?;
        let outcome: Option<String> = column(tenant, &head, 3)?;
        // The key by a subquery, not a join: a join serves a row once per
        // `signing_keys` row of its reference, so a reference written twice
        // (its primary key dropped behind the plane) doubled every signed
        // row. The subquery refuses it (a cardinality violation): damage,
        // as it is to the snapshot.
        //
        // Bounded on the server, in this one query (R-UX-3): each row's size
        // is summed in seq order (`upto`, from the columns' stored lengths,
        // never more than what it holds read: an encoded row's bytes decode
        // to at least their stored length less the tag), and only the rows
        // before the sum passes `max_bytes` are sent, then the row that
        // passes it with its sum alone (its columns NULL). A run of a few
        // rows costs the round trip it always did; a portal fetched in
        // batches would cost one more each, and a batch of rows is no bound
        // on bytes. What a row holds read is counted again as it is
        // decoded ([`journal_core::store::RunBound`]): decoding stops there too.
        let bound = i64::try_from(max_bytes).unwrap_or(i64::MAX);
        let stored = txn
            .query(
                "SELECT w.upto, r.seq, r.kind, r.effect_key, r.prev_hash, r.hash,
                        CASE WHEN octet_length(r.bytes) <= 16777217 THEN r.bytes END,
                        coalesce(r.key_id, (SELECT k.key_id FROM signing_keys k WHERE k.ref = r.key_ref)),
                        r.signature, r.encoding, r.key_ref, octet_length(r.bytes)
                 FROM (SELECT q.seq, s.size, (sum(s.size) OVER (ORDER BY q.seq ROWS UNBOUNDED PRECEDING))::bigint AS upto
                       FROM records q, LATERAL (SELECT 8::bigint + octet_length(q.kind) + octet_length(q.hash)
                           + coalesce(octet_length(q.prev_hash), 32) + coalesce(octet_length(q.effect_key), 0)
                           + coalesce(octet_length(q.key_id), 0) + coalesce(octet_length(q.signature), 0)
                           + greatest(octet_length(q.bytes) - CASE WHEN q.encoding = 0 THEN 0 ELSE 1 END, 0) AS size) s
                       WHERE q.tenant = $1 AND q.run = $2) w
                 LEFT JOIN records r ON r.tenant = $1 AND r.run = $2 AND r.seq = w.seq AND w.upto <= $3::bigint
                 WHERE w.upto - w.size <= $3::bigint
                 ORDER BY w.seq",
                &[&t, &r, &bound],
            )
            .map_err(|err| match err.code() {
                Some(&postgres::error::SqlState::CARDINALITY_VIOLATION) => {
                    twice(tenant, "signing_keys", &"a reference of this run's records")
                }
                _ => pg("reading records", err),
            })?;
        let mut rows = Vec::with_capacity(stored.len());
        let mut held = journal_core::store::RunBound::new(tenant, run, max_bytes);
        for row in &stored {
            let upto: i64 = column(tenant, row, 0)?;
            if upto > bound {
                return Err(JournalError::RunTooLarge {
                    tenant: tenant.clone(),
                    run: run.clone(),
                    bound: max_bytes,
                    held: usize::try_from(upto).unwrap_or(usize::MAX),
                });
            }
            let before = rows.last().map_or(ChainHash::GENESIS, |last: &StoredRecord| last.hash);
            let row = stored_record(tenant, run, row, 1, before, &HashMap::new())?;
            held.hold(&row)?;
            rows.push(row);
        }
        let seal = txn
            .query_opt(
                "SELECT position, run, leaf FROM seals WHERE tenant = $1 AND run = $2 ORDER BY position LIMIT 1",
                &[&t, &r],
            )
            .map_err(|err| pg("reading a seal", err))?
            .map(|row| seal_of_row(tenant, &row))
            .transpose()?;
        txn.commit().map_err(|err| pg("reading a run", err))?;
        let (known, unknown_outcome) = read_outcome(outcome);
        Ok(RunRows {
            rows,
            head: Some(expected),
            sealed: column(tenant, &head, 2)?,
            seal,
            outcome: known,
            unknown_outcome,
        })
    }

    fn runs(&self, tenant: &TenantId, outcome: Option<Outcome>) -> Result<Vec<RunId>, JournalError> {
        let mut conn = self.conn()?;
        let rows = match outcome {
            Some(outcome) => conn.query(
                "SELECT run FROM outcome_index WHERE tenant = $1 AND outcome = $2 ORDER BY run",
                &[&tenant.as_str(), &outcome.as_str()],
            ),
            None => conn.query("SELECT run FROM runs WHERE tenant = $1 ORDER BY run", &[&tenant.as_str()]),
        }
        .map_err(|err| pg("listing runs", err))?;
        rows.iter().map(|row| run_id(tenant, column(tenant, row, 0)?)).collect()
    }

    fn admissions(
        &self,
        tenant: &TenantId,
        before: Option<&AdmittedRun>,
        outcome: Option<Outcome>,
        limit: usize,
    ) -> Result<Vec<AdmittedRun>, JournalError> {
        let mut conn = self.conn()?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let outcome = outcome.map(|outcome| outcome.as_str());
        // A backward scan of the primary key from the cursor; the outcome is
        // a filter on the runs row each admission joins.
        let select = "SELECT a.at_millis, a.run FROM admission_order a
             LEFT JOIN runs r ON r.tenant = a.tenant AND r.run = a.run
             WHERE a.tenant = $1 AND ($2::text IS NULL OR r.outcome = $2)";
        let rows = match before {
            None => conn.query(
                &format!("{select} ORDER BY a.at_millis DESC, a.run DESC LIMIT $3"),
                &[&tenant.as_str(), &outcome, &limit],
            ),
            Some(before) => conn.query(
                &format!("{select} AND (a.at_millis, a.run) < ($4, $5) ORDER BY a.at_millis DESC, a.run DESC LIMIT $3"),
                &[&tenant.as_str(), &outcome, &limit, &before.at.unix_millis(), &before.run.as_str()],
            ),
        }
        .map_err(|err| pg("the admission order", err))?;
        rows.iter().map(|row| admission_of_row(tenant, column(tenant, row, 0)?, column(tenant, row, 1)?)).collect()
    }

    fn run_by_idempotency_key(&self, tenant: &TenantId, key: &str) -> Result<Option<RunId>, JournalError> {
        let mut conn = self.conn()?;
        let rows = conn
            .query("SELECT run FROM idempotency WHERE tenant = $1 AND key = $2", &[&tenant.as_str(), &key])
            .map_err(|err| pg("the idempotency index", err))?;
        at_most_one(tenant, "idempotency", &key, rows)?.map(|row| run_id(tenant, column(tenant, &row, 0)?)).transpose()
    }

    fn tenants(&self) -> Result<Vec<TenantId>, JournalError> {
        let mut conn = self.conn()?;
        let rows = conn
            .query("SELECT DISTINCT tenant FROM runs ORDER BY tenant", &[])
            .map_err(|err| pg("listing tenants", err))?;
        rows.iter()
            .map(|row| {
                let tenant: String = row.try_get(0).map_err(|err| {
                    JournalError::Io(StorageError::message(format!("a stored tenant id is not text: {err}")))
                })?;
                TenantId::new(&tenant).map_err(|_| {
                    JournalError::Io(StorageError::message(format!("a stored tenant id {tenant:?} is invalid")))
                })
            })
            .collect()
    }

    fn seals(&self, tenant: &TenantId) -> Result<Vec<SealEntry>, JournalError> {
        let mut conn = self.conn()?;
        let rows = conn
            .query("SELECT position, run, leaf FROM seals WHERE tenant = $1 ORDER BY position", &[&tenant.as_str()])
            .map_err(|err| pg("reading seals", err))?;
        rows.iter().map(|row| seal_of_row(tenant, row)).collect()
    }

    fn seals_in(&self, tenant: &TenantId, positions: std::ops::Range<u64>) -> Result<Vec<SealEntry>, JournalError> {
        let (from, to) = (to_i64(positions.start)?, i64::try_from(positions.end).unwrap_or(i64::MAX));
        let mut conn = self.conn()?;
        let rows = conn
            .query(
                "SELECT position, run, leaf FROM seals WHERE tenant = $1 AND position >= $2 AND position < $3
                 ORDER BY position",
                &[&tenant.as_str(), &from, &to],
            )
            .map_err(|err| pg("reading seals", err))?;
        rows.iter().map(|row| seal_of_row(tenant, row)).collect()
    }

    fn seal_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<SealEntry>, JournalError> {
        let mut conn = self.conn()?;
        conn.query_opt(
            "SELECT position, run, leaf FROM seals WHERE tenant = $1 AND run = $2 ORDER BY position LIMIT 1",
            &[&tenant.as_str(), &run.as_str()],
        )
        .map_err(|err| pg("reading a seal", err))?
        .map(|row| seal_of_row(tenant, &row))
        .transpose()
    }

    fn log_counters(&self, tenant: &TenantId) -> Result<LogCounters, JournalError> {
        let mut conn = self.conn()?;
        // One row for both (the seal count is kept by a trigger, schema v4),
        // so a seal committing between them is not a hole, and opening the
        // log of a million records costs what opening one of ten does.
        let rows = conn
            .query("SELECT next_position, seal_count FROM log_counter WHERE tenant = $1", &[&tenant.as_str()])
            .map_err(|err| pg("the log counters", err))?;
        Ok(match at_most_one(tenant, "log_counter", &tenant.as_str(), rows)? {
            Some(row) => LogCounters {
                next_position: to_u64(tenant, column(tenant, &row, 0)?, || {
                    "the log_counter row: next_position".to_owned()
                })?,
                seal_count: to_u64(tenant, column(tenant, &row, 1)?, || "the log_counter row: seal_count".to_owned())?,
            },
            None => LogCounters { next_position: 0, seal_count: 0 },
        })
    }

    fn read_log_nodes(&self, tenant: &TenantId, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
        let mut conn = self.conn()?;
        let statement = conn.prepare(SELECT_NODES).map_err(|err| pg("reading log nodes", err))?;
        read_nodes(&mut *conn, &statement, tenant, ids)
    }

    fn signed_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        self.read_trees("signed_checkpoints", tenant)
    }

    fn last_signed_checkpoint(&self, tenant: &TenantId) -> Result<Option<SignedTree>, JournalError> {
        let mut conn = self.conn()?;
        let table = "signed_checkpoints";
        conn.query_opt(
            &format!("SELECT {CHECKPOINT_COLUMNS} FROM signed_checkpoints WHERE tenant = $1 ORDER BY n DESC LIMIT 1"),
            &[&tenant.as_str()],
        )
        .map_err(|err| pg(table, err))?
        .map(|row| signed_tree(tenant, table, &row))
        .transpose()
    }

    fn record_signed_checkpoint(
        &self,
        tenant: &TenantId,
        previous: Option<Tree>,
        signed: SignedTree,
    ) -> Result<(), JournalError> {
        let mut conn = self.conn()?;
        let mut txn = conn.transaction().map_err(|err| pg("recording a signed checkpoint", err))?;
        let t = tenant.as_str();
        txn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 1))", &[&t])
            .map_err(|err| pg("the tenant's checkpoint lock", err))?;
        let last = txn
            .query_opt("SELECT n, size, root FROM signed_checkpoints WHERE tenant = $1 ORDER BY n DESC LIMIT 1", &[&t])
            .map_err(|err| pg("reading the last signed checkpoint", err))?;
        let (next, last_tree) = match last {
            Some(row) => {
                let root: Vec<u8> = column(tenant, &row, 2)?;
                let root = RootHash::try_from(root.as_slice())
                    .map_err(|_| damaged(tenant, "a signed checkpoint's root is not 32 bytes".into()))?;
                let next = column::<i64>(tenant, &row, 0)?
                    .checked_add(1)
                    .ok_or_else(|| damaged(tenant, "the last signed checkpoint's number is the largest".into()))?;
                let size = to_u64(tenant, column(tenant, &row, 1)?, || {
                    format!("the signed_checkpoints row numbered {}: size", next - 1)
                })?;
                (next, Some(Tree::new(size, root)))
            }
            None => (0, None),
        };
        journal_core::store::check_last_signed(tenant, last_tree, previous)?;
        txn.execute(
            "INSERT INTO signed_checkpoints (tenant, n, size, root, note) VALUES ($1, $2, $3, $4, $5)",
            &[&t, &next, &to_i64(signed.tree.size)?, &signed.tree.root.as_bytes().as_slice(), &signed.note],
        )
        .map_err(|err| pg("recording a signed checkpoint", err))?;
        txn.commit().map_err(|err| pg("recording a signed checkpoint", err))
    }

    fn cosigned_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        self.read_trees("cosigned_checkpoints", tenant)
    }

    fn newest_checkpoints(
        &self,
        tenant: &TenantId,
        kind: CheckpointRows,
        limit: usize,
    ) -> Result<Vec<SignedTree>, JournalError> {
        let table = match kind {
            CheckpointRows::Signed => "signed_checkpoints",
            CheckpointRows::Cosigned => "cosigned_checkpoints",
        };
        self.read_newest_trees(table, tenant, limit)
    }

    fn snapshot(&self, tenant: &TenantId) -> Result<TenantSnapshot, JournalError> {
        let mut collect = CollectSnapshot::default();
        read_snapshot(&mut *self.conn()?, tenant, &mut collect)?;
        collect.finish()
    }

    fn snapshot_streamed(&self, tenant: &TenantId, sink: &mut dyn SnapshotSink) -> Result<(), JournalError> {
        read_snapshot(&mut *self.conn()?, tenant, sink)
    }

    fn append_heads(&self, tenant: &TenantId, origin: &journal_core::Origin) -> Result<Vec<u64>, JournalError> {
        let mut conn = self.conn()?;
        let statements = Statements::prepare(&mut conn)?;
        let mut txn = conn.transaction().map_err(|err| pg("appending heads leaves", err))?;
        let positions = append_heads(&mut PgAppend::new(&mut txn, &statements, false), tenant, origin)
            .map_err(AppendFailure::into_error)?;
        txn.commit().map_err(|err| pg("appending heads leaves", err))?;
        Ok(positions)
    }

    fn newest_heads_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<u64>, JournalError> {
        let mut conn = self.conn()?;
        let newest = conn
            .query_one(
                "SELECT max(position) FROM heads_entries WHERE tenant = $1 AND run = $2",
                &[&tenant.as_str(), &run.as_str()],
            )
            .map_err(|err| pg("reading a run's newest heads entry", err))?;
        let newest: Option<i64> = column(tenant, &newest, 0)?;
        newest
            .map(|position| to_u64(tenant, position, || format!("a heads_entries row of run {run}: position")))
            .transpose()
    }

    fn stored_hashes(
        &self,
        tenant: &TenantId,
        records: &[(RunId, u64)],
    ) -> Result<Vec<Option<ChainHash>>, JournalError> {
        // A seq past bigint is no stored record's: asked as -1, which none has.
        let runs: Vec<&str> = records.iter().map(|(run, _)| run.as_str()).collect();
        let seqs: Vec<i64> = records.iter().map(|(_, seq)| i64::try_from(*seq).unwrap_or(-1)).collect();
        let mut conn = self.conn()?;
        let rows = conn
            .query(
                "SELECT r.hash FROM unnest($2::text[], $3::bigint[]) WITH ORDINALITY AS q(run, seq, n)
                 LEFT JOIN records r ON r.tenant = $1 AND r.run = q.run AND r.seq = q.seq
                 ORDER BY q.n",
                &[&tenant.as_str(), &runs, &seqs],
            )
            .map_err(|err| pg("reading records' hashes", err))?;
        if rows.len() != records.len() {
            return Err(damaged(tenant, "two records are stored under one run and seq".into()));
        }
        rows.iter()
            .zip(records)
            .map(|(row, (run, seq))| {
                let hash: Option<Vec<u8>> = column(tenant, row, 0)?;
                hash.map(|hash| {
                    ChainHash::from_slice(&hash).ok_or_else(|| {
                        damaged(tenant, format!("record {seq} of run {run} has a hash column that is not 32 bytes"))
                    })
                })
                .transpose()
            })
            .collect()
    }

    fn seal_at(&self, tenant: &TenantId, position: u64) -> Result<Option<SealEntry>, JournalError> {
        let mut conn = self.conn()?;
        let rows = conn
            .query(
                "SELECT position, run, leaf FROM seals WHERE tenant = $1 AND position = $2",
                &[&tenant.as_str(), &to_i64(position)?],
            )
            .map_err(|err| pg("reading a log leaf", err))?;
        at_most_one(tenant, "seals", &position, rows)?.map(|row| seal_of_row(tenant, &row)).transpose()
    }

    fn heads_entries(&self, tenant: &TenantId, position: u64) -> Result<Vec<HeadEntry>, JournalError> {
        let mut conn = self.conn()?;
        let rows = conn
            .query(
                "SELECT position, run, seq, hash FROM heads_entries WHERE tenant = $1 AND position = $2",
                &[&tenant.as_str(), &to_i64(position)?],
            )
            .map_err(|err| pg("reading heads entries", err))?;
        Ok(heads_entries_of_rows(tenant, &rows)?.remove(&position).unwrap_or_default())
    }

    fn heads_entries_in(
        &self,
        tenant: &TenantId,
        positions: std::ops::Range<u64>,
    ) -> Result<journal_core::store::HeadsByPosition, JournalError> {
        let (from, to) = (to_i64(positions.start)?, i64::try_from(positions.end).unwrap_or(i64::MAX));
        let mut conn = self.conn()?;
        let rows = conn
            .query(
                "SELECT position, run, seq, hash FROM heads_entries WHERE tenant = $1 AND position >= $2 AND position < $3
                 ORDER BY position",
                &[&tenant.as_str(), &from, &to],
            )
            .map_err(|err| pg("reading heads entries", err))?;
        heads_entries_of_rows(tenant, &rows)
    }

    fn record_cosigned_checkpoint(&self, tenant: &TenantId, cosigned: SignedTree) -> Result<(), JournalError> {
        let mut conn = self.conn()?;
        let mut txn = conn.transaction().map_err(|err| pg("recording a cosigned checkpoint", err))?;
        let t = tenant.as_str();
        txn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 2))", &[&t])
            .map_err(|err| pg("the tenant's checkpoint lock", err))?;
        let last = txn
            .query_one("SELECT max(n) FROM cosigned_checkpoints WHERE tenant = $1", &[&t])
            .map_err(|err| pg("recording a cosigned checkpoint", err))?;
        // A row numbered the largest bigint (written behind the plane) is
        // damage, not an overflow the server reports as a failed statement.
        let next = match column::<Option<i64>>(tenant, &last, 0)? {
            None => 0,
            Some(last) => last.checked_add(1).ok_or_else(|| {
                damaged(
                    tenant,
                    "the last cosigned checkpoint is numbered the largest bigint: a row written behind the plane; \
                     run `agentplane verify`"
                        .into(),
                )
            })?,
        };
        txn.execute(
            "INSERT INTO cosigned_checkpoints (tenant, n, size, root, note) VALUES ($1, $2, $3, $4, $5)",
            &[&t, &next, &to_i64(cosigned.tree.size)?, &cosigned.tree.root.as_bytes().as_slice(), &cosigned.note],
        )
        .map_err(|err| pg("recording a cosigned checkpoint", err))?;
        txn.commit().map_err(|err| pg("recording a cosigned checkpoint", err))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use journal_core::record::StepMark;
    use journal_core::{Journal, MemoryStore, Origin, RecordBody};

    use super::*;

    /// Two runs of two records each, as rows a store would be asked to append.
    fn rows() -> Vec<Vec<StoredRecord>> {
        let store = MemoryStore::new();
        let tenant = TenantId::new("t").unwrap();
        let origin = Origin::new("pg.test/plane").unwrap();
        let journal = Journal::new(&store, &tenant, &origin);
        ["a", "b", "c"]
            .iter()
            .map(|name| {
                let run = RunId::new(name).unwrap();
                let mut head = None;
                for step in 0..3 {
                    let body = RecordBody::StepStarted(StepMark { step: format!("step {step}") });
                    head = Some(journal.append(&run, head, None, body).unwrap().head);
                }
                store.read_run(&tenant, &run).unwrap().rows
            })
            .collect()
    }

    fn request(run: &str, row: &StoredRecord, previous: Option<&StoredRecord>) -> AppendRequest {
        AppendRequest {
            tenant: TenantId::new("t").unwrap(),
            run: RunId::new(run).unwrap(),
            expected_head: previous.map(|p| ExpectedHead { seq: p.seq, hash: p.hash }),
            row: row.clone(),
            idempotency_key: None,
            conclusion: None,
            encoded_bytes: None,
        }
    }

    type TestClient = r2d2::PooledConnection<r2d2_postgres::PostgresConnectionManager<postgres::NoTls>>;

    /// A temporary store where one batch began runs `a` and `b` (the first of
    /// `rows()` each), with the connection and statements that wrote it.
    fn two_runs_begun() -> (PgStore, Vec<Vec<StoredRecord>>, TestClient, Statements) {
        let store = PgStore::temporary().unwrap();
        let rows = rows();
        let mut client = store.raw();
        let statements = Statements::prepare(&mut client).unwrap();
        let (a, b) = (&rows[0], &rows[1]);
        let first = commit_batch(&mut client, &statements, &[&request("a", &a[0], None), &request("b", &b[0], None)]);
        assert!(first.iter().all(Result::is_ok), "{first:?}");
        (store, rows, client, statements)
    }

    /// R-AUD-7, issue 21's one snapshot read in bulk: on a table the planner
    /// has no statistics of (a fresh database, a bulk load before ANALYZE),
    /// the snapshot reads the records by the primary key's index, streaming
    /// from the first row, never through a sort that waits for the last.
    #[test]
    fn r_aud_7_the_snapshot_streams_records_by_the_key_index_without_a_sort() {
        let store = PgStore::temporary().unwrap();
        let mut client = store.raw();
        // Rows as a bulk load leaves them (only their order and size matter
        // to the plan): 20,000 records of 1,000 runs, interleaved.
        client
            .execute(
                "INSERT INTO records (tenant, run, seq, kind, prev_hash, hash, bytes)
                 SELECT 't', 'run-' || (i % 1000), i, 'StepStarted', '\\x00', '\\x00', convert_to(repeat('x', 300), 'UTF8')
                 FROM generate_series(1, 20000) AS i",
                &[],
            )
            .unwrap();
        let mut txn = client.build_transaction().read_only(true).start().unwrap();
        txn.batch_execute(SNAPSHOT_PLANS).unwrap();
        let plan: Vec<String> = txn
            .query(&format!("EXPLAIN {SELECT_SNAPSHOT_RECORDS}"), &[&"t"])
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let plan = plan.join("\n");
        assert!(plan.contains("Index Scan using records_pkey"), "{plan}");
        assert!(!plan.contains("Sort"), "{plan}");
    }

    /// Issue 25 (appends at a million records, 0.37 of the small plane): a
    /// conclusion moves its run's outcome index row by the whole primary
    /// key. The delete named the tenant and the run alone, and the key leads
    /// with the outcome, so it read every row of the tenant's index: at a
    /// million records 71,058 conclusions took 202 s of statement time
    /// (pg_stat_statements over the bench's scale group, 2.85 ms each, 24
    /// million buffers read), more than every other statement together.
    #[test]
    fn a_conclusion_moves_its_outcome_row_by_the_whole_key() {
        let store = PgStore::temporary().unwrap();
        let mut client = store.raw();
        client
            .execute(
                "INSERT INTO outcome_index (tenant, outcome, run)
                 SELECT 't', (ARRAY['failed', 'withheld', 'succeeded'])[1 + i % 3], 'run-' || i
                 FROM generate_series(1, 20000) AS i",
                &[],
            )
            .unwrap();
        let mut txn = client.transaction().unwrap();
        // Never executed: the plan is only looked at.
        txn.batch_execute(&format!("PREPARE delete_outcome AS {DELETE_OUTCOME}")).unwrap();
        let plan: Vec<String> = txn
            .query("EXPLAIN EXECUTE delete_outcome('t', 'failed', 'run-3')", &[])
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let plan = plan.join("\n");
        let keyed = plan.lines().any(|line| {
            line.contains("Index Cond") && line.contains("outcome = 'failed'") && line.contains("run = 'run-3'")
        });
        assert!(keyed, "{plan}");
        assert!(!plan.contains("Seq Scan"), "{plan}");
    }

    /// R-STORE-3: a plain append is written in one statement outside the
    /// append algorithm, held by SQL to the head it expects, the hash as well
    /// as the seq: an append linked to another chain's record at the head's
    /// seq is a conflict, never a fork of the run.
    #[test]
    fn a_plain_append_expecting_the_right_seq_with_another_hash_is_a_conflict() {
        let (_store, rows, mut client, statements) = two_runs_begun();
        let (a, c) = (&rows[0], &rows[2]);
        let replies = commit_batch(&mut client, &statements, &[&request("a", &c[1], Some(&c[0]))]);
        assert!(matches!(replies[0], Err(JournalError::Conflict { .. })), "{replies:?}");
        let (head, records): (i64, i64) = {
            let row = client
                .query_one(
                    "SELECT head_seq, (SELECT count(*) FROM records WHERE tenant = 't' AND run = 'a') FROM runs
                     WHERE tenant = 't' AND run = 'a'",
                    &[],
                )
                .unwrap();
            (row.get(0), row.get(1))
        };
        assert_eq!((head, records), (1, 1), "a record linked to another chain was appended to run a");
        let next = commit_batch(&mut client, &statements, &[&request("a", &a[1], Some(&a[0]))]);
        assert_eq!(next[0].as_ref().ok(), Some(&None), "{next:?}");
    }

    /// R-STORE-3, issue 25's batched append attacked: an append to an existing
    /// run runs without a savepoint, so a store whose records disagree with
    /// its runs table (a record forged at the head's next seq) makes its
    /// write fail inside the batch. The batch is rewritten with a savepoint
    /// per append: that caller gets a conflict and the other append of the
    /// same batch commits (without the rewrite both fail).
    #[test]
    fn a_write_refused_without_a_savepoint_rewrites_the_batch_so_each_caller_gets_its_own_answer() {
        let (_store, rows, mut client, statements) = two_runs_begun();
        let (a, b) = (&rows[0], &rows[1]);

        client
            .execute(
                "INSERT INTO records (tenant, run, seq, kind, prev_hash, hash, bytes) VALUES ('t', 'a', 2, 'Forged', $1, $2, $3)",
                &[&a[0].hash.as_bytes().as_slice(), &a[1].hash.as_bytes().as_slice(), &b"forged".as_slice()],
            )
            .unwrap();
        let second = commit_batch(
            &mut client,
            &statements,
            &[&request("a", &a[1], Some(&a[0])), &request("b", &b[1], Some(&b[0]))],
        );
        assert!(matches!(second[0], Err(JournalError::Conflict { .. })), "{second:?}");
        assert_eq!(second[1].as_ref().ok(), Some(&None), "{second:?}");
        let stored: i64 =
            client.query_one("SELECT head_seq FROM runs WHERE tenant = 't' AND run = 'b'", &[]).unwrap().get(0);
        assert_eq!(stored, 2);
        let stored: i64 =
            client.query_one("SELECT head_seq FROM runs WHERE tenant = 't' AND run = 'a'", &[]).unwrap().get(0);
        assert_eq!(stored, 1, "the refused append moved nothing");
    }

    /// R-STORE-3, R-RUN-4 (attacker review 14): PostgreSQL's text holds no
    /// NUL character, which an idempotency key or an effect key may carry
    /// (a job submitter picks the key; redb and memory store it). The
    /// server's refusal broke the whole group commit, so every other append
    /// committed with it, another tenant's included, failed too (an
    /// `EffectDone` lost that way leaves a doubt on a run whose effect ran).
    /// It is that append's own refusal now, and the others commit.
    #[test]
    fn a_text_postgresql_cannot_hold_is_refused_alone_never_the_whole_batch() {
        let (store, rows, mut client, statements) = two_runs_begun();
        let (a, b) = (&rows[0], &rows[1]);
        // An effect key with a NUL (on a row whose body this test does not need to agree).
        let mut nul_effect = request("a", &a[1], Some(&a[0]));
        nul_effect.row.effect_key = Some("ek:\0".to_owned());
        // A run admitted under an idempotency key with a NUL.
        let memory = MemoryStore::new();
        let (tenant, run) = (TenantId::new("t").unwrap(), RunId::new("c").unwrap());
        let admitted = journal_core::record::RunAdmitted {
            tenant: "t".into(),
            idempotency_key: "job\0".into(),
            budget: journal_core::Budget::default(),
        };
        Journal::new(&memory, &tenant, &Origin::new("pg.test/plane").unwrap())
            .append(&run, None, None, RecordBody::RunAdmitted(admitted))
            .unwrap();
        let mut nul_key = request("c", &memory.read_run(&tenant, &run).unwrap().rows[0], None);
        nul_key.idempotency_key = Some("job\0".to_owned());
        for odd in [nul_effect, nul_key] {
            let innocent_seq =
                store.read_run(&TenantId::new("t").unwrap(), &RunId::new("b").unwrap()).unwrap().rows.len();
            let innocent = request("b", &b[innocent_seq], Some(&b[innocent_seq - 1]));
            let replies = commit_batch(&mut client, &statements, &[&odd, &innocent]);
            assert!(matches!(replies[0], Err(JournalError::InvalidRecord(_))), "{replies:?}");
            assert_eq!(replies[1].as_ref().ok(), Some(&None), "the other append commits: {replies:?}");
        }
        let records: i64 = client.query_one("SELECT count(*) FROM records", &[]).unwrap().get(0);
        assert_eq!(records, 4, "a's first record and b's three, nothing of the refused appends");
    }

    /// R-STORE-3, R-UX-3 (attacker review 50): the log counter moved back
    /// with SQL below a leaf it gave, or a log node planted for a position
    /// not sealed yet (or the seal count set to the largest bigint, which the
    /// trigger that counts seals cannot add one to: "bigint out of range"). The next seal's insert met the row already there and
    /// failed as a storage error (exit 2, the server's "duplicate key"),
    /// which broke its whole group commit: every other append committed with
    /// it, another tenant's included, failed with it. The seal alone is
    /// refused now, as damage naming the tenant and the row, and the others
    /// commit.
    #[test]
    fn r_store_3_a_log_counter_moved_back_refuses_the_seal_alone_as_damage() {
        for (forgery, names) in [
            (
                "INSERT INTO seals (tenant, position, run, leaf) VALUES ('t', 0, 'earlier', '\\x00');
                 UPDATE log_counter SET next_position = 0 WHERE tenant = 't'",
                "position 0",
            ),
            (
                "INSERT INTO log_nodes (tenant, level, index, hash) VALUES ('t', 0, 0, sha256('\\x00'))",
                "level 0 index 0",
            ),
            (
                "INSERT INTO log_counter (tenant, next_position, seal_count) VALUES ('t', 0, 9223372036854775807)
                 ON CONFLICT (tenant) DO UPDATE SET seal_count = excluded.seal_count",
                "seal_count",
            ),
        ] {
            let (_store, rows, mut client, statements) = two_runs_begun();
            let (a, c) = (&rows[0], &rows[2]);
            client.batch_execute(forgery).unwrap();
            let mut seal = request("a", &a[1], Some(&a[0]));
            let sealed_at = ExpectedHead { seq: a[1].seq, hash: a[1].hash };
            let leaf = journal_core::SealLeaf::new(&Origin::new("pg.test/plane").unwrap(), &seal.run, sealed_at);
            seal.conclusion = Some(journal_core::Conclusion { outcome: Outcome::Succeeded, seal: Some(leaf) });
            let replies = commit_batch(&mut client, &statements, &[&seal, &request("c", &c[0], None)]);
            match &replies[0] {
                Err(JournalError::StoreDamage { tenant, detail }) => {
                    assert_eq!(tenant.as_str(), "t");
                    assert!(detail.contains(names) && detail.contains("agentplane verify"), "{detail}");
                }
                other => panic!("{forgery}: the seal is not refused as damage: {other:?}"),
            }
            assert_eq!(replies[1].as_ref().ok(), Some(&None), "{forgery}: the other append commits: {replies:?}");
            let sealed: bool =
                client.query_one("SELECT sealed FROM runs WHERE tenant = 't' AND run = 'a'", &[]).unwrap().get(0);
            assert!(!sealed, "{forgery}: the refused seal wrote nothing");
        }
    }

    /// R-STORE-3, R-CHAIN-1: issue 25's batched writes: two appends of one run in one batch (the
    /// runs row moves to the later), a stale append refused alone, and a new
    /// run between them, all in one transaction; what is stored is exactly
    /// what was acknowledged.
    #[test]
    fn a_batch_of_ordinary_appends_stores_exactly_what_it_acknowledged() {
        let (store, rows, mut client, statements) = two_runs_begun();
        let (a, b, c) = (&rows[0], &rows[1], &rows[2]);
        let second = commit_batch(
            &mut client,
            &statements,
            &[
                &request("a", &a[1], Some(&a[0])),
                &request("b", &b[2], Some(&b[1])), // stale: b is at seq 1
                &request("c", &c[0], None),
                &request("a", &a[2], Some(&a[1])),
                &request("b", &b[1], Some(&b[0])),
            ],
        );
        assert!(second[0].is_ok() && second[2].is_ok() && second[3].is_ok() && second[4].is_ok(), "{second:?}");
        assert!(matches!(second[1], Err(JournalError::Conflict { .. })), "{second:?}");
        let mut head = |run: &str| -> (i64, Vec<u8>) {
            let row = client
                .query_one("SELECT head_seq, head_hash FROM runs WHERE tenant = 't' AND run = $1", &[&run])
                .unwrap();
            (row.get(0), row.get(1))
        };
        assert_eq!(head("a"), (3, a[2].hash.as_bytes().to_vec()));
        assert_eq!(head("b"), (2, b[1].hash.as_bytes().to_vec()));
        assert_eq!(head("c"), (1, c[0].hash.as_bytes().to_vec()));
        let stored = store.read_run(&TenantId::new("t").unwrap(), &RunId::new("a").unwrap()).unwrap().rows;
        assert_eq!(&stored, a);
        let records: i64 = client.query_one("SELECT count(*) FROM records", &[]).unwrap().get(0);
        assert_eq!(records, 6);
    }

    /// R-VER-4: a session of this build that reached the server without the
    /// schema version it declares at connect time (a connection pooler such
    /// as PgBouncer with `ignore_startup_parameters = options` drops the
    /// startup options) is refused by the check with the version it is at,
    /// this build's own. The remedy said the version row "says 6, not this
    /// process's 6" and was changed behind the plane: it now says the
    /// declaration was lost on the way and what to connect through instead.
    #[test]
    fn r_ver_4_a_write_whose_declaration_was_dropped_on_the_way_says_so() {
        let store = PgStore::temporary().unwrap();
        let mut client = store.raw();
        // What a pooler that drops the startup options leaves: no declaration.
        client.batch_execute(&format!("SET {SESSION_SETTING} = ''")).unwrap();
        let err = client.execute("DELETE FROM runs WHERE false", &[]).unwrap_err();
        let refused = pg("appending", err);
        let JournalError::BuildSkew(skew) = &refused else { panic!("{refused:?}") };
        assert!(
            matches!(skew.as_ref(), BuildSkew::StoreSchema { found: Some(found), .. } if *found == i64::from(SCHEMA_VERSION)),
            "{skew:?}"
        );
        let message = refused.to_string();
        assert!(!message.contains("behind the plane"), "{message}");
        assert!(message.contains("declare") && message.contains("pooler") && message.contains("options"), "{message}");
        client.batch_execute(&format!("RESET {SESSION_SETTING}")).unwrap();
    }

    /// R-VER-4, R-STORE-1: the schema version row lowered or deleted behind
    /// a running process is damage (the tamper class: exit 1), saying what
    /// was found and what to do; it was build skew (exit 3), as if a build
    /// were to be changed, when no build's migration lowers it.
    #[test]
    fn r_ver_4_a_schema_version_lowered_or_deleted_behind_the_plane_is_damage_not_skew() {
        let store = PgStore::temporary().unwrap();
        let mut client = store.raw();
        let tenant = TenantId::new("t").unwrap();
        let origin = journal_core::testkit::origin();
        let journal = journal_core::Journal::new(&store, &tenant, &origin);
        let run = RunId::new("run-1").unwrap();
        let step = || journal_core::RecordBody::StepStarted(journal_core::record::StepMark { step: "s".into() });
        let head = journal.append(&run, None, None, step()).unwrap().head;
        for (change, said) in [
            (format!("UPDATE agentplane_schema SET version = {}", SCHEMA_VERSION - 1), "says 5"),
            ("DELETE FROM agentplane_schema".to_owned(), "is gone"),
        ] {
            client.batch_execute(&change).unwrap();
            let refused = journal.append(&run, Some(head), None, step()).unwrap_err();
            assert!(matches!(&refused, JournalError::SchemaDamage { .. }), "{refused:?}");
            assert_eq!(refused.class(), journal_core::error::ErrorClass::Tamper);
            let message = refused.to_string();
            assert!(message.contains(said) && message.contains("behind the plane"), "{message}");
            assert!(message.contains("restore the version row"), "{message}");
            client.batch_execute("DELETE FROM agentplane_schema").unwrap();
            client.execute("INSERT INTO agentplane_schema (version) VALUES ($1)", &[&SCHEMA_VERSION]).unwrap();
        }
        assert_eq!(store.read_run(&tenant, &run).unwrap().rows.len(), 1, "nothing was written");
    }
}
