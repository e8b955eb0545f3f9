//! The conformance suite against the in-memory reference store (R-STORE-1).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

journal_core::conformance_tests!(journal_core::MemoryStore::new());
