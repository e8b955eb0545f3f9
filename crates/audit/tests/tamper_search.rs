//! Review 23: the property search for wrong verdicts (`tests/shared/tamper_search.rs`)
//! on real redb files, whose attacks are all [`journal_core::testkit::TamperAccess`]'s.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../../tests/shared/tamper_search.rs"]
mod search;

use proptest::prelude::*;
use search::{Expect, RawAttacks, RawTarget};
use store_redb::RedbStore;

impl RawAttacks for RedbStore {
    const KINDS: u8 = 0;
    fn raw_attack(&self, _: &RawTarget<'_>) -> Option<Expect> {
        None
    }
}

proptest! {
    // A fixed seed (a soak with `PROPTEST_CASES` searches further from it):
    // the same planes and attacks on every run, in about ten seconds.
    #![proptest_config(ProptestConfig {
        cases: search::cases(48),
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(23),
        ..ProptestConfig::default()
    })]

    #[test]
    fn r_aud_3_no_store_mutation_of_what_an_anchor_covers_audits_clean(
        ops in proptest::collection::vec(search::op(), 1..10),
        mutations in proptest::collection::vec(search::mutation(), 1..3),
    ) {
        let mut plane = search::Plane::on(RedbStore::temporary().unwrap());
        search::check(&mut plane, &ops, &mutations)?;
    }
}
