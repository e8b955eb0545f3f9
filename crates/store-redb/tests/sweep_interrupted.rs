//! A sweep stopped at each of its store writes, then started again, on redb.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

#[path = "../../../tests/shared/sweep_interrupted.rs"]
mod shared;

use std::sync::Arc;

/// R-PLANE-2, R-WIT-8: see [`shared::a_sweep_stopped_at_each_write_is_held_again_on_restart`].
#[test]
fn r_plane_2_a_sweep_stopped_at_each_write_is_held_again_on_restart() {
    shared::a_sweep_stopped_at_each_write_is_held_again_on_restart(&|| -> Arc<dyn journal_core::Store> {
        Arc::new(store_redb::RedbStore::temporary().expect("a redb store"))
    });
}
