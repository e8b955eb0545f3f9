//! R-STORE-1: the shared conformance suite, against a real PostgreSQL server
//! (a fresh database per test; `cargo xtask test` starts the server).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

journal_core::conformance_tests!(store_pg::PgStore::temporary().expect("a store on a fresh PostgreSQL database"));
