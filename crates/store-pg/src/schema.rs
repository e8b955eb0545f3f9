//! The schema, as versioned migrations applied at open inside one
//! transaction. A database whose schema is newer than this build knows is
//! refused with a remedy, like a record version.

/// The migrations, in order; migration `n` brings the schema to version `n + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i32 = 6;

const V1: &str = r#"
CREATE TABLE runs (
    tenant text NOT NULL,
    run text NOT NULL,
    head_seq bigint NOT NULL,
    head_hash bytea NOT NULL,
    sealed boolean NOT NULL,
    outcome text,
    PRIMARY KEY (tenant, run)
);
CREATE TABLE records (
    tenant text NOT NULL,
    run text NOT NULL,
    seq bigint NOT NULL,
    kind text NOT NULL,
    effect_key text,
    prev_hash bytea NOT NULL,
    hash bytea NOT NULL,
    bytes bytea NOT NULL,
    key_id text,
    signature bytea,
    PRIMARY KEY (tenant, run, seq)
);
CREATE TABLE idempotency (
    tenant text NOT NULL,
    key text NOT NULL,
    run text NOT NULL,
    PRIMARY KEY (tenant, key)
);
CREATE TABLE outcome_index (
    tenant text NOT NULL,
    outcome text NOT NULL,
    run text NOT NULL,
    PRIMARY KEY (tenant, outcome, run)
);
CREATE TABLE seals (
    tenant text NOT NULL,
    position bigint NOT NULL,
    run text NOT NULL,
    leaf bytea NOT NULL,
    PRIMARY KEY (tenant, position)
);
CREATE INDEX seals_by_run ON seals (tenant, run);
CREATE TABLE log_counter (
    tenant text PRIMARY KEY,
    next_position bigint NOT NULL
);
CREATE TABLE log_nodes (
    tenant text NOT NULL,
    level smallint NOT NULL,
    index bigint NOT NULL,
    hash bytea NOT NULL,
    PRIMARY KEY (tenant, level, index)
);
CREATE TABLE signed_checkpoints (
    tenant text NOT NULL,
    n bigint NOT NULL,
    size bigint NOT NULL,
    root bytea NOT NULL,
    note text NOT NULL,
    PRIMARY KEY (tenant, n)
);
CREATE TABLE cosigned_checkpoints (
    tenant text NOT NULL,
    n bigint NOT NULL,
    size bigint NOT NULL,
    root bytea NOT NULL,
    note text NOT NULL,
    PRIMARY KEY (tenant, n)
);
-- R-RUN-2: sealing is a constraint of the database. A row for a sealed run
-- is refused whoever inserts it, raw SQL included.
CREATE FUNCTION agentplane_refuse_sealed() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM runs WHERE tenant = NEW.tenant AND run = NEW.run AND sealed) THEN
        RAISE EXCEPTION 'run % of tenant % is sealed: its journal is frozen', NEW.run, NEW.tenant
            USING ERRCODE = 'AP001';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER records_refuse_sealed BEFORE INSERT ON records
    FOR EACH ROW EXECUTE FUNCTION agentplane_refuse_sealed();
"#;

/// Issue 20, heads leaves: a run's head is "moved" (not yet covered by a
/// heads leaf) until a heads leaf enters it; every append marks it so in the
/// statement that writes its row (no extra round trip), and the partial index
/// finds the moved runs in O(moved). Runs that existed before are all moved,
/// so the first heads leaf covers them. Each heads leaf's entries are kept.
const V2: &str = r#"
ALTER TABLE runs ADD COLUMN covered boolean NOT NULL DEFAULT false;
CREATE INDEX runs_moved ON runs (tenant, run) WHERE NOT covered AND NOT sealed;
CREATE TABLE heads_entries (
    tenant text NOT NULL,
    position bigint NOT NULL,
    run text NOT NULL,
    seq bigint NOT NULL,
    hash bytea NOT NULL,
    PRIMARY KEY (tenant, position, run)
);
"#;

/// Issue 27, the admission order: one row per admitted run, keyed by its
/// `RunAdmitted`'s `at` in unix milliseconds, written in the statement
/// batch that stores that record, so the console lists runs newest first in
/// O(log n + page). Filled from the records already stored (their canonical
/// `at` spelling is a UTC instant with milliseconds). A stored admission
/// whose bytes are not UTF-8 JSON with such an instant (damage, or a row
/// forged behind the plane's back) gets no row rather than failing the
/// migration: the upgrade never hangs on one bad row, and the audit names
/// that run (its chain, and its missing admission order row).
const V3: &str = r#"
CREATE TABLE admission_order (
    tenant text NOT NULL,
    at_millis bigint NOT NULL,
    run text NOT NULL,
    PRIMARY KEY (tenant, at_millis, run)
);
CREATE FUNCTION pg_temp.agentplane_admitted_millis(stored bytea) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    RETURN (extract(epoch FROM ((convert_from(stored, 'UTF8')::jsonb ->> 'at')::timestamptz)) * 1000)::bigint;
EXCEPTION WHEN OTHERS THEN
    RETURN NULL;
END
$$;
INSERT INTO admission_order (tenant, at_millis, run)
    SELECT tenant, at_millis, run FROM (
        SELECT tenant, pg_temp.agentplane_admitted_millis(bytes) AS at_millis, run
        FROM records WHERE seq = 1 AND kind = 'RunAdmitted'
    ) AS admitted
    WHERE at_millis IS NOT NULL;
DROP FUNCTION pg_temp.agentplane_admitted_millis(bytea);
"#;

/// Issue 25, a plane of a million records: what `prove`, `export` and
/// `checkpoint` read stays O(log n).
/// - `prove` of an open run finds the newest heads leaf holding its entry
///   through `heads_entries_by_run`, instead of reading every heads entry.
/// - The log's seal count (whether positions have holes, R-LOG-7) is kept
///   beside the counter by a trigger on every insert and delete of a seal
///   row, SQL behind the plane's back included, instead of counting the
///   seals at every opening of the log. Someone who can switch the trigger
///   off can make it stale: the log is then served from its stored nodes
///   (the tree the plane signed), and the audit, which counts the seals it
///   reads, still finds the holes; a stale count on a log without holes
///   (the plane then refuses to sign, and `prove` answers from the walk) is
///   a finding of its own (the audit holds the stored count to the seals).
///
/// An index and a trigger the server keeps, not rows this store writes.
const V4: &str = r#"
CREATE INDEX heads_entries_by_run ON heads_entries (tenant, run, position);
ALTER TABLE log_counter ADD COLUMN seal_count bigint NOT NULL DEFAULT 0;
INSERT INTO log_counter (tenant, next_position)
    SELECT DISTINCT tenant, 0 FROM seals ON CONFLICT (tenant) DO NOTHING;
UPDATE log_counter SET seal_count = (SELECT count(*) FROM seals WHERE seals.tenant = log_counter.tenant);
CREATE FUNCTION agentplane_count_seals() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO log_counter (tenant, next_position, seal_count) VALUES (NEW.tenant, 0, 1)
            ON CONFLICT (tenant) DO UPDATE SET seal_count = log_counter.seal_count + 1;
    ELSE
        UPDATE log_counter SET seal_count = seal_count - 1 WHERE tenant = OLD.tenant;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER seals_counted AFTER INSERT OR DELETE ON seals
    FOR EACH ROW EXECUTE FUNCTION agentplane_count_seals();
"#;

/// Issue 25, bytes on disk: a record row written from schema 5 on keeps
/// - its bytes encoded (`encoding` 1: `journal_core::encoding`'s tag byte,
///   then the bytes or a zstd frame against the frozen dictionary; 0: the
///   bytes as written, every row from before), never compressed again by the
///   server (`STORAGE EXTERNAL`: the encoding bounds what a frame may expand
///   to, and TOAST's own compression bounds nothing);
/// - its signing key as a reference into `signing_keys` (`key_ref`) instead
///   of the key id's text on every row;
/// - no previous hash (NULL): it is the hash of the run's row before it,
///   derived as the rows are read, and the chain hash over it still catches
///   a row removed or replaced.
///
/// Rows from before are read as they are; nothing is rewritten.
///
/// Written to be a no-op where it was applied already (a test rebuilds an
/// older schema around tables of this one).
const V5: &str = r#"
CREATE TABLE IF NOT EXISTS signing_keys (
    ref integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_id text NOT NULL UNIQUE
);
ALTER TABLE records
    ADD COLUMN IF NOT EXISTS encoding smallint NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS key_ref integer,
    ALTER COLUMN prev_hash DROP NOT NULL,
    ALTER COLUMN bytes SET STORAGE EXTERNAL;
"#;

/// The setting each session of this build declares its schema version in,
/// at connect time (`-c agentplane.schema_version=6` in the connection's
/// options: no round trip of its own).
pub const SESSION_SETTING: &str = "agentplane.schema_version";

/// The SQLSTATE of a write refused for schema skew (R-VER-4).
pub(crate) const SKEW_STATE: &str = "AP002";

/// R-VER-4, a rolling upgrade: a process opened the store at one schema
/// version and a newer build then migrated it; the older process must not go
/// on writing under its old idea of the schema (rows without what a newer
/// migration derives from them). Every table a writer writes refuses a
/// statement whose session does not declare the version the database is at
/// ([`SESSION_SETTING`]): one check per statement, not per row.
///
/// The check takes the schema lock shared (each migration takes it
/// exclusive first, see `migrate`), so a migration waits for the writes
/// already under way to commit, and a write that waited for a migration
/// reads the version it committed (each session of this build runs at READ
/// COMMITTED, set in its options whatever the server's default, and a
/// volatile function's query takes a new snapshot). The version row
/// names the build that migrated to it, for the remedy.
///
/// A session without the setting (`psql`, a build from before this one) is
/// refused too: `SET agentplane.schema_version = '6'` first, knowing what
/// this schema holds. The version table itself is not guarded: a newer
/// build's migration writes it. The SCHEMA_LOCK constant below is `SCHEMA_LOCK`
/// in `lib.rs`. Written to be a no-op where it was applied already.
const V6: &str = r#"
ALTER TABLE agentplane_schema ADD COLUMN IF NOT EXISTS build text;
CREATE OR REPLACE FUNCTION agentplane_refuse_schema_skew() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    declared text := nullif(current_setting('agentplane.schema_version', true), '');
    stored integer;
    migrated_by text;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(7018702155374880869);
    SELECT version, build INTO stored, migrated_by FROM agentplane_schema;
    IF declared IS NOT DISTINCT FROM stored::text THEN
        RETURN NULL;
    END IF;
    IF declared IS NULL THEN
        RAISE EXCEPTION 'agentplane: schema skew: a write to % by a session that declares no schema version (agentplane.schema_version) was refused and nothing of this write was kept: the store was migrated to schema version % (by %) after this process opened it, and this process is of an older build; replace the process by a build of schema version % or later (SQL by hand: SET agentplane.schema_version = ''%'' first)', TG_TABLE_NAME, coalesce(stored::text, '(none)'), coalesce(migrated_by, 'a newer build'), coalesce(stored::text, '(none)'), coalesce(stored::text, '(none)')
            USING ERRCODE = 'AP002', DETAIL = format('found=%s declared= migrated_by=%s', coalesce(stored::text, ''), coalesce(migrated_by, ''));
    END IF;
    RAISE EXCEPTION 'agentplane: a write to % by a session of schema version % refused: the store is at schema version %', TG_TABLE_NAME, declared, coalesce(stored::text, '(none)')
        USING ERRCODE = 'AP002', DETAIL = format('found=%s declared=%s migrated_by=%s', coalesce(stored::text, ''), declared, coalesce(migrated_by, ''));
END
$$;
DO $$
DECLARE
    guarded text;
BEGIN
    FOREACH guarded IN ARRAY ARRAY['runs', 'records', 'idempotency', 'outcome_index', 'seals', 'log_counter',
            'log_nodes', 'signed_checkpoints', 'cosigned_checkpoints', 'heads_entries', 'admission_order',
            'signing_keys'] LOOP
        EXECUTE format('CREATE OR REPLACE TRIGGER %I BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %I
            FOR EACH STATEMENT EXECUTE FUNCTION agentplane_refuse_schema_skew()', guarded || '_schema_version', guarded);
    END LOOP;
END
$$;
"#;
