//! Review 25: the property search for wrong verdicts
//! (`tests/shared/tamper_search.rs`, review 23's on redb) against a real
//! PostgreSQL, a fresh database per case: the `TamperAccess` attacks, and
//! what only SQL write access allows: a seal row's run column pointed at
//! another run, heads entries forged, moved or deleted, the log counter and
//! seal count moved, signing keys renamed or deleted, a row re-encoded or
//! given a previous hash, the admission order and the runs row's outcome
//! rewritten, a run's records moved to another tenant.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../../tests/shared/tamper_search.rs"]
mod search;

use journal_core::Outcome;
use proptest::prelude::*;
use search::{Expect, RawAttacks, RawTarget};
use store_pg::PgStore;

fn sql(store: &PgStore, statement: &str, params: &[&(dyn postgres::types::ToSql + Sync)]) -> u64 {
    store.raw().execute(statement, params).unwrap_or_else(|err| panic!("{statement}: {err}"))
}

impl RawAttacks for PgStore {
    const KINDS: u8 = 13;

    fn raw_attack(&self, target: &RawTarget<'_>) -> Option<Expect> {
        let (t, r, o) = (target.tenant.as_str(), target.run.as_str(), target.other.as_str());
        let value = target.value;
        let row = target.rows.get(usize::from(value) % target.rows.len().max(1));
        let seq = row.map_or(1, |row| i64::try_from(row.seq).unwrap());
        match target.kind {
            // The seal row's run column pointed at another run.
            0 => {
                sql(self, "UPDATE seals SET run = $3 WHERE tenant = $1 AND run = $2", &[&t, &r, &o]);
            }
            // The run's newest heads entry forged to another of its records.
            1 => {
                if let Some(row) = row {
                    sql(
                        self,
                        "UPDATE heads_entries SET seq = $3, hash = $4 WHERE tenant = $1 AND run = $2 AND position =
                         (SELECT max(position) FROM heads_entries WHERE tenant = $1 AND run = $2)",
                        &[&t, &r, &seq, &row.hash.as_bytes().as_slice()],
                    );
                }
            }
            // The run's heads entries moved one position on.
            2 => {
                sql(
                    self,
                    "UPDATE heads_entries h SET position = position + 1 WHERE tenant = $1 AND run = $2 AND NOT EXISTS
                     (SELECT 1 FROM heads_entries n WHERE n.tenant = h.tenant AND n.run = h.run AND n.position = h.position + 1)",
                    &[&t, &r],
                );
            }
            // The signing keys renamed: every signature names a key nobody trusts.
            3 => {
                sql(self, "UPDATE signing_keys SET key_id = key_id || 'x'", &[]);
                return Some(Expect::Undone);
            }
            // The signing keys deleted: signed rows name no key.
            4 => {
                sql(self, "DELETE FROM signing_keys", &[]);
                return Some(Expect::BreaksEveryChain);
            }
            5 => {
                sql(self, "UPDATE log_counter SET next_position = $2 WHERE tenant = $1", &[&t, &i64::from(value % 16)]);
            }
            6 => {
                let delta = if value.is_multiple_of(2) { 1i64 } else { -1 };
                sql(self, "UPDATE log_counter SET seal_count = seal_count + $2 WHERE tenant = $1", &[&t, &delta]);
            }
            // A row re-encoded as written (encoding 0): the same bytes.
            7 => {
                if let Some(row) = row {
                    sql(
                        self,
                        "UPDATE records SET bytes = $4, encoding = 0 WHERE tenant = $1 AND run = $2 AND seq = $3",
                        &[&t, &r, &seq, &row.bytes],
                    );
                    return Some(Expect::Silent);
                }
            }
            // A row given its previous hash (harmless), or a wrong one.
            8 => {
                if let Some(row) = row {
                    let right = value.is_multiple_of(2);
                    let prev = if right { row.prev_hash } else { row.hash };
                    sql(
                        self,
                        "UPDATE records SET prev_hash = $4 WHERE tenant = $1 AND run = $2 AND seq = $3",
                        &[&t, &r, &seq, &prev.as_bytes().as_slice()],
                    );
                    return Some(if right {
                        Expect::Silent
                    } else {
                        Expect::Found(target.run.clone(), vec![audit::FindingClass::Tamper])
                    });
                }
            }
            9 => {
                sql(
                    self,
                    "UPDATE admission_order SET at_millis = at_millis + $3 WHERE tenant = $1 AND run = $2",
                    &[&t, &r, &(i64::from(value) + 1)],
                );
            }
            10 => {
                let outcome = Outcome::ALL.get(usize::from(value) % (Outcome::ALL.len() + 1)).map(|o| o.as_str());
                sql(self, "UPDATE runs SET outcome = $3 WHERE tenant = $1 AND run = $2", &[&t, &r, &outcome]);
            }
            // Every entry of the run's newest heads leaf deleted.
            11 => {
                sql(
                    self,
                    "DELETE FROM heads_entries WHERE tenant = $1 AND position =
                     (SELECT max(position) FROM heads_entries WHERE tenant = $1 AND run = $2)",
                    &[&t, &r],
                );
            }
            // The run's records moved to another tenant.
            _ => {
                sql(self, "UPDATE records SET tenant = 'elsewhere' WHERE tenant = $1 AND run = $2", &[&t, &r]);
            }
        }
        None
    }
}

fn store() -> PgStore {
    PgStore::temporary().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: search::cases(24),
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(25),
        ..ProptestConfig::default()
    })]

    #[test]
    fn r_aud_3_no_sql_mutation_of_what_an_anchor_covers_audits_clean_on_postgresql(
        ops in proptest::collection::vec(search::op(), 1..10),
        mutations in proptest::collection::vec(search::mutation_of::<PgStore>(), 1..3),
    ) {
        let mut plane = search::Plane::on(store());
        search::check(&mut plane, &ops, &mutations)?;
    }
}
