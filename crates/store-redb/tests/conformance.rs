//! The whole conformance suite, journal and runtime, on a real redb file (R-STORE-1).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

journal_core::conformance_tests!(store_redb::RedbStore::temporary().expect("a temporary redb store"));
