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
