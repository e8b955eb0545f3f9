//! For tests: a fresh database per test on the server `AGENTPLANE_PG_URL`
//! names (`cargo xtask test` starts a throwaway one and sets it), and raw SQL
//! access to the tables, as a database administrator could.
// Test helpers: their failures are the test's.
#![allow(clippy::expect_used, clippy::panic)]

use std::str::FromStr as _;
use std::sync::atomic::{AtomicU64, Ordering};

use journal_core::testkit::{TamperAccess, dense_log_nodes, node_ends_before};
use journal_core::{ExpectedHead, JournalError, Outcome, RunId, StoredRecord, TenantId};
use postgres::{Client, NoTls};
use tlog::{NodeHash, NodeId};

use crate::PgStore;

/// The environment variable naming the server tests use.
pub const URL_VARIABLE: &str = "AGENTPLANE_PG_URL";

/// The server's URL. A test that cannot reach one fails, naming itself and
/// the command that runs it with a server; it is never skipped.
pub fn server_url() -> String {
    std::env::var(URL_VARIABLE).unwrap_or_else(|_| {
        let thread = std::thread::current();
        let test = thread.name().unwrap_or("this test");
        panic!(
            "{URL_VARIABLE} is not set: `{test}` is a PostgreSQL test and needs a server. Run the tests with \
             `cargo xtask with-pg cargo test ...` (the same arguments after it: a throwaway server, stopped \
             afterwards), or `cargo xtask test`; or point {URL_VARIABLE} at a server you may create databases on. \
             Every PostgreSQL test fails this way without one; none is skipped"
        )
    })
}

/// A copy of the database at `url` as it is now (`CREATE DATABASE ...
/// TEMPLATE`), as a backup taken now and restored later would be; its URL.
/// Nothing may be connected to the source meanwhile.
pub fn copy_database(url: &str) -> String {
    let source = postgres::Config::from_str(url).expect("a URL").get_dbname().expect("a database name").to_owned();
    let name = database_name();
    let server = server_url();
    let mut admin = Client::connect(&server, NoTls).unwrap_or_else(|err| panic!("connecting to {server}: {err}"));
    admin.batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {source}")).expect("copying a test database");
    with_dbname(&server, &name)
}

fn database_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "agentplane_test_{}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos())
    )
}

/// A new, empty database on the test server; its URL.
pub fn fresh_database() -> String {
    let url = server_url();
    let name = database_name();
    let mut admin = Client::connect(&url, NoTls).unwrap_or_else(|err| panic!("connecting to {url}: {err}"));
    admin.batch_execute(&format!("CREATE DATABASE {name}")).expect("creating a test database");
    with_dbname(&url, &name)
}

/// A new, empty database on the test server whose text collation is the
/// ICU locale `icu_locale` (where `run-a` sorts before `run-B`, unlike byte
/// order); its URL.
pub fn fresh_database_collated(icu_locale: &str) -> String {
    let url = server_url();
    let name = database_name();
    let mut admin = Client::connect(&url, NoTls).unwrap_or_else(|err| panic!("connecting to {url}: {err}"));
    admin
        .batch_execute(&format!(
            "CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE '{icu_locale}' \
             LOCALE 'C.UTF-8'"
        ))
        .expect("creating a test database with an ICU collation");
    with_dbname(&url, &name)
}

/// A plain connection to the database at `url` that declares this build's
/// schema version (R-VER-4), as an administrator who writes through SQL
/// knowing what this schema holds must: a session that declares none
/// writes no table of the journal.
pub fn connect_declared(url: &str) -> Client {
    let mut config = postgres::Config::from_str(url).expect("a URL");
    config.options(&format!("-c {}={}", crate::schema::SESSION_SETTING, crate::SCHEMA_VERSION));
    config.connect(NoTls).unwrap_or_else(|err| panic!("connecting to {url}: {err}"))
}

/// A new database whose schema is at `version` (an older one than this
/// build's), as an older build left it: for migration tests.
pub fn database_at_version(version: i32) -> String {
    let url = fresh_database();
    let mut client = Client::connect(&url, NoTls).unwrap_or_else(|err| panic!("connecting to {url}: {err}"));
    let count = usize::try_from(version).expect("a version is positive");
    let mut txn = client.transaction().expect("a transaction");
    txn.batch_execute("CREATE TABLE agentplane_schema (version integer NOT NULL)").expect("the version table");
    for migration in crate::schema::MIGRATIONS.iter().take(count) {
        txn.batch_execute(migration).expect("an older migration");
    }
    txn.execute("INSERT INTO agentplane_schema (version) VALUES ($1)", &[&version]).expect("the version");
    txn.commit().expect("committing");
    url
}

/// `pg_ctl ARGS` on the test server `cargo xtask` started (as the
/// `postgres` user when it runs the server as that user).
fn pg_ctl(args: &[&str]) -> Result<(), String> {
    let variable = |name: &str| std::env::var(name).map_err(|_| format!("{name} is not set: run through cargo xtask"));
    let (data, pg_ctl) = (variable("AGENTPLANE_PG_DATA")?, variable("AGENTPLANE_PG_CTL")?);
    let mut command = if std::env::var("AGENTPLANE_PG_AS_POSTGRES").as_deref() == Ok("1") {
        let mut command = std::process::Command::new("runuser");
        command.args(["-u", "postgres", "--", &pg_ctl]);
        command
    } else {
        std::process::Command::new(&pg_ctl)
    };
    let log = format!("{data}/server.log");
    let out = command.args(["-w", "-D", &data, "-l", &log]).args(args).output().map_err(|err| err.to_string())?;
    if !out.status.success() {
        return Err(format!("pg_ctl {args:?}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(())
}

/// Returns once a session of the server waits for an advisory lock (one a
/// test holds: the tenant's log lock, the schema lock): awaited by asking
/// `pg_locks`, never slept for; panics, naming `what`, after two minutes.
pub fn await_an_advisory_lock_waiter(probe: &mut Client, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let waiting: i64 = probe
            .query_one("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted", &[])
            .and_then(|row| row.try_get(0))
            .unwrap_or_else(|err| panic!("asking pg_locks: {err}"));
        if waiting > 0 {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "no session came to wait for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Stops the test server as a crash does (`pg_ctl stop -m immediate`).
pub fn crash_server() -> Result<(), String> {
    pg_ctl(&["-m", "immediate", "stop"])
}

/// Starts the test server again, with the options it was first started
/// with, and waits until it takes connections: its crash recovery replays
/// the WAL of every test database made so far, which on a loaded machine
/// took longer than `pg_ctl`'s default minute, and the tests after it found
/// the server still starting.
pub fn start_server() -> Result<(), String> {
    let options = std::env::var("AGENTPLANE_PG_OPTIONS")
        .map_err(|_| "AGENTPLANE_PG_OPTIONS is not set: run through cargo xtask".to_owned())?;
    pg_ctl(&["-t", "900", "-o", &options, "start"])
}

/// `url` with its database replaced by `name`.
fn with_dbname(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(base, query)| (base, Some(query)));
    let authority_end = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[authority_end..].find('/').map_or(base.len(), |i| authority_end + i);
    let mut out = format!("{}/{name}", &base[..path_start]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

impl PgStore {
    /// A store on a fresh database of the test server.
    pub fn temporary() -> Result<Self, JournalError> {
        Ok(Self::open(&fresh_database())?)
    }

    /// A plain connection to this store's database, for raw SQL.
    pub fn raw(&self) -> r2d2::PooledConnection<r2d2_postgres::PostgresConnectionManager<NoTls>> {
        self.pool.get().expect("a connection")
    }

    fn tamper(&self, what: &str, sql: &str, params: &[&(dyn postgres::types::ToSql + Sync)]) {
        if let Err(err) = self.raw().execute(sql, params) {
            tracing::error!("tamper {what} failed: {err}");
        }
    }
}

fn i64_of(value: u64) -> i64 {
    i64::try_from(value).expect("a test value fits bigint")
}

impl PgStore {
    /// Names `outcome` (any text) in `run`'s runs row and its outcome index
    /// row, as a build that knows an outcome this one does not writes them
    /// when it concludes the run so, or as someone with SQL writes them.
    pub fn name_outcome(&self, tenant: &TenantId, run: &RunId, outcome: &str) {
        let (t, r) = (tenant.as_str(), run.as_str());
        self.tamper("outcome index", "DELETE FROM outcome_index WHERE tenant = $1 AND run = $2", &[&t, &r]);
        self.tamper(
            "outcome index",
            "INSERT INTO outcome_index (tenant, outcome, run) VALUES ($1, $2, $3)",
            &[&t, &outcome, &r],
        );
        self.tamper("runs row", "UPDATE runs SET outcome = $3 WHERE tenant = $1 AND run = $2", &[&t, &r, &outcome]);
    }
}

impl TamperAccess for PgStore {
    fn overwrite_record_bytes(&self, tenant: &TenantId, run: &RunId, seq: u64, bytes: Vec<u8>) {
        self.tamper(
            "record bytes",
            "UPDATE records SET bytes = $4, encoding = 0 WHERE tenant = $1 AND run = $2 AND seq = $3",
            &[&tenant.as_str(), &run.as_str(), &i64_of(seq), &bytes],
        );
    }

    fn overwrite_row(&self, tenant: &TenantId, run: &RunId, row: StoredRecord) {
        let signature = row.signature.as_ref();
        self.tamper(
            "row",
            "UPDATE records SET kind = $4, effect_key = $5, prev_hash = $6, hash = $7, bytes = $8, key_id = $9, signature = $10, encoding = 0, key_ref = NULL
             WHERE tenant = $1 AND run = $2 AND seq = $3",
            &[
                &tenant.as_str(),
                &run.as_str(),
                &i64_of(row.seq),
                &row.kind,
                &row.effect_key,
                &row.prev_hash.as_bytes().as_slice(),
                &row.hash.as_bytes().as_slice(),
                &row.bytes,
                &signature.map(|s| s.key_id.as_str()),
                &signature.map(|s| s.signature.as_slice()),
            ],
        );
    }

    fn delete_record(&self, tenant: &TenantId, run: &RunId, seq: u64) {
        self.tamper(
            "delete record",
            "DELETE FROM records WHERE tenant = $1 AND run = $2 AND seq = $3",
            &[&tenant.as_str(), &run.as_str(), &i64_of(seq)],
        );
    }

    fn delete_runs_row(&self, tenant: &TenantId, run: &RunId) {
        let (t, r) = (tenant.as_str(), run.as_str());
        self.tamper("runs row", "DELETE FROM runs WHERE tenant = $1 AND run = $2", &[&t, &r]);
    }

    fn delete_heads_entry(&self, tenant: &TenantId, position: u64, run: &RunId) {
        let (t, r) = (tenant.as_str(), run.as_str());
        let position = i64::try_from(position).expect("a test position fits");
        self.tamper(
            "heads entry",
            "DELETE FROM heads_entries WHERE tenant = $1 AND position = $2 AND run = $3",
            &[&t, &position, &r],
        );
    }

    fn hide_newest_heads_of(&self, tenant: &TenantId, run: &RunId) {
        let (t, r) = (tenant.as_str(), run.as_str());
        self.tamper("heads entries", "DELETE FROM heads_entries WHERE tenant = $1 AND run = $2", &[&t, &r]);
    }

    fn hide_seal_of(&self, tenant: &TenantId, run: &RunId) {
        let (t, r) = (tenant.as_str(), run.as_str());
        self.tamper(
            "seal row",
            "UPDATE seals SET run = $3 WHERE tenant = $1 AND run = $2",
            &[&t, &r, &journal_core::heads::HEADS_LEAF_RUN],
        );
    }

    fn set_moved(&self, tenant: &TenantId, run: &RunId, moved: bool) {
        let (t, r, covered) = (tenant.as_str(), run.as_str(), !moved);
        self.tamper("moved mark", "UPDATE runs SET covered = $3 WHERE tenant = $1 AND run = $2", &[&t, &r, &covered]);
    }

    fn delete_run(&self, tenant: &TenantId, run: &RunId) {
        let (t, r) = (tenant.as_str(), run.as_str());
        for table in ["records", "runs", "seals", "outcome_index", "idempotency", "admission_order"] {
            self.tamper("delete run", &format!("DELETE FROM {table} WHERE tenant = $1 AND run = $2"), &[&t, &r]);
        }
    }

    fn set_outcome_index(&self, tenant: &TenantId, run: &RunId, outcome: Option<Outcome>) {
        let (t, r) = (tenant.as_str(), run.as_str());
        self.tamper("outcome index", "DELETE FROM outcome_index WHERE tenant = $1 AND run = $2", &[&t, &r]);
        if let Some(outcome) = outcome {
            self.tamper(
                "outcome index",
                "INSERT INTO outcome_index (tenant, outcome, run) VALUES ($1, $2, $3)",
                &[&t, &outcome.as_str(), &r],
            );
        }
    }

    fn set_sealed_flag(&self, tenant: &TenantId, run: &RunId, sealed: bool) {
        self.tamper(
            "sealed flag",
            "UPDATE runs SET sealed = $3 WHERE tenant = $1 AND run = $2",
            &[&tenant.as_str(), &run.as_str(), &sealed],
        );
    }

    fn set_runs_head(&self, tenant: &TenantId, run: &RunId, head: ExpectedHead) {
        self.tamper(
            "runs head",
            "UPDATE runs SET head_seq = $3, head_hash = $4 WHERE tenant = $1 AND run = $2",
            &[&tenant.as_str(), &run.as_str(), &i64_of(head.seq), &head.hash.as_bytes().as_slice()],
        );
    }

    fn overwrite_seal_leaf(&self, tenant: &TenantId, run: &RunId, leaf: Vec<u8>) {
        self.tamper(
            "seal leaf",
            "UPDATE seals SET leaf = $3 WHERE tenant = $1 AND run = $2",
            &[&tenant.as_str(), &run.as_str(), &leaf],
        );
    }

    fn set_admission(&self, tenant: &TenantId, admission: &journal_core::AdmittedRun, present: bool) {
        let (t, millis, r) = (tenant.as_str(), admission.at.unix_millis(), admission.run.as_str());
        let sql = if present {
            "INSERT INTO admission_order (tenant, at_millis, run) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING"
        } else {
            "DELETE FROM admission_order WHERE tenant = $1 AND at_millis = $2 AND run = $3"
        };
        self.tamper("admission order", sql, &[&t, &millis, &r]);
    }

    fn set_idempotency(&self, tenant: &TenantId, key: &str, run: &RunId) {
        self.tamper(
            "idempotency",
            "INSERT INTO idempotency (tenant, key, run) VALUES ($1, $2, $3)
             ON CONFLICT (tenant, key) DO UPDATE SET run = excluded.run",
            &[&tenant.as_str(), &key, &run.as_str()],
        );
    }

    fn rewind_log(&self, tenant: &TenantId, next_position: u64) {
        let t = tenant.as_str();
        self.tamper(
            "rewind",
            "UPDATE log_counter SET next_position = $2 WHERE tenant = $1",
            &[&t, &i64_of(next_position)],
        );
        let nodes =
            self.raw().query("SELECT level, index FROM log_nodes WHERE tenant = $1", &[&t]).expect("reading nodes");
        for row in nodes {
            let (level, index): (i16, i64) = (row.get(0), row.get(1));
            let id = NodeId::new(u8::try_from(level).expect("level"), u64::try_from(index).expect("index"));
            if !node_ends_before(id, next_position) {
                self.tamper(
                    "rewind",
                    "DELETE FROM log_nodes WHERE tenant = $1 AND level = $2 AND index = $3",
                    &[&t, &level, &index],
                );
            }
        }
    }

    fn overwrite_log_node(&self, tenant: &TenantId, id: NodeId, hash: NodeHash) {
        self.tamper(
            "log node",
            "INSERT INTO log_nodes (tenant, level, index, hash) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant, level, index) DO UPDATE SET hash = excluded.hash",
            &[&tenant.as_str(), &i16::from(id.level), &i64_of(id.index), &hash.as_bytes().as_slice()],
        );
    }

    fn rewrite_log(&self, tenant: &TenantId, seals: &[(RunId, Vec<u8>)]) {
        let t = tenant.as_str();
        for table in ["seals", "log_nodes"] {
            self.tamper("rewrite log", &format!("DELETE FROM {table} WHERE tenant = $1"), &[&t]);
        }
        for (position, (run, leaf)) in seals.iter().enumerate() {
            self.tamper(
                "rewrite log",
                "INSERT INTO seals (tenant, position, run, leaf) VALUES ($1, $2, $3, $4)",
                &[&t, &i64_of(position as u64), &run.as_str(), leaf],
            );
        }
        let leaves: Vec<Vec<u8>> = seals.iter().map(|(_, leaf)| leaf.clone()).collect();
        for (id, hash) in dense_log_nodes(&leaves) {
            self.overwrite_log_node(tenant, id, hash);
        }
        // A careful hider leaves no heads entries where the new log holds no heads leaf.
        let heads_at: Vec<i64> = leaves
            .iter()
            .enumerate()
            .filter(|(_, leaf)| journal_core::heads::HeadsLeaf::is_tagged(leaf))
            .map(|(position, _)| i64_of(position as u64))
            .collect();
        self.tamper(
            "rewrite log",
            "DELETE FROM heads_entries WHERE tenant = $1 AND NOT (position = ANY($2))",
            &[&t, &heads_at],
        );
        // And marks every open run moved again: the runs whose entries went
        // with a heads leaf would be left unmarked (a finding).
        self.tamper("rewrite log", "UPDATE runs SET covered = false WHERE tenant = $1 AND NOT sealed", &[&t]);
        self.tamper(
            "rewrite log",
            "INSERT INTO log_counter (tenant, next_position) VALUES ($1, $2)
             ON CONFLICT (tenant) DO UPDATE SET next_position = excluded.next_position",
            &[&t, &i64_of(seals.len() as u64)],
        );
    }
}
