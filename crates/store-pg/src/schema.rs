//! The schema, as versioned migrations applied at open inside one
//! transaction. A database whose schema is newer than this build knows is
//! refused with a remedy, like a record version.

/// The migrations, in order; migration `n` brings the schema to version `n + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i32 = 3;

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
/// `at` spelling is a UTC instant with milliseconds).
const V3: &str = r#"
CREATE TABLE admission_order (
    tenant text NOT NULL,
    at_millis bigint NOT NULL,
    run text NOT NULL,
    PRIMARY KEY (tenant, at_millis, run)
);
INSERT INTO admission_order (tenant, at_millis, run)
    SELECT tenant,
           (extract(epoch FROM ((convert_from(bytes, 'UTF8')::jsonb ->> 'at')::timestamptz)) * 1000)::bigint,
           run
    FROM records WHERE seq = 1 AND kind = 'RunAdmitted';
"#;
