//! For random journals, any single-byte edit, any swap of two records and any
//! removal is detected and named (R-CHAIN-5).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use journal_core::record::{PlanFrozen, StepMark};
use journal_core::{
    ChainCheck, ExpectedHead, Journal, JournalError, MemoryStore, RecordBody, RunId, Store, StoredRecord, TenantId,
    Upcasters, VerifyOptions, verify_run,
};
use proptest::prelude::*;

fn journal_of(steps: &[String]) -> (RunId, Vec<StoredRecord>, ExpectedHead) {
    let store = MemoryStore::new();
    let tenant = TenantId::new("t").unwrap();
    let origin = journal_core::Origin::new("prop.test/plane").unwrap();
    let journal = Journal::new(&store, &tenant, &origin);
    let run = RunId::new("prop-run").unwrap();
    let mut head = Some(
        journal.append(&run, None, None, RecordBody::PlanFrozen(PlanFrozen { steps: steps.to_vec() })).unwrap().head,
    );
    for step in steps {
        head = Some(
            journal.append(&run, head, None, RecordBody::StepStarted(StepMark { step: step.clone() })).unwrap().head,
        );
    }
    let rows = store.read_run(&tenant, &run).unwrap().rows;
    (run, rows, head.unwrap())
}

fn verdict(run: &RunId, rows: &[StoredRecord], head: ExpectedHead) -> Result<(), JournalError> {
    let upcasters = Upcasters::builtin();
    verify_run(
        run,
        rows,
        Some(head),
        ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() },
    )
    .map(|_| ())
}

fn named_seq(err: &JournalError) -> u64 {
    match err {
        JournalError::Tamper { seq, .. } => *seq,
        other => panic!("not classified as tamper: {other:?}"),
    }
}

/// `default` cases, or `PROPTEST_CASES` when set (`cargo xtask soak` sets 10000).
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(128)))]

    #[test]
    fn r_chain_5_any_single_byte_edit_is_named(steps in prop::collection::vec("[a-z ]{1,12}", 1..12), pick in any::<prop::sample::Index>(), at in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let (run, mut rows, head) = journal_of(&steps);
        let i = pick.index(rows.len());
        let j = at.index(rows[i].bytes.len());
        rows[i].bytes[j] ^= flip;
        let err = verdict(&run, &rows, head).unwrap_err();
        prop_assert!(err.is_tamper());
        prop_assert_eq!(named_seq(&err), rows[i].seq);
    }

    #[test]
    fn r_chain_5_any_swap_is_named(steps in prop::collection::vec("[a-z ]{1,12}", 2..12), a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
        let (run, mut rows, head) = journal_of(&steps);
        // Two distinct rows, drawn without rejection: at 10000 cases
        // (`cargo xtask soak`) rejecting i == j exceeded proptest's reject limit.
        let i = a.index(rows.len());
        let j = b.index(rows.len() - 1);
        let j = if j >= i { j + 1 } else { j };
        rows.swap(i, j);
        let err = verdict(&run, &rows, head).unwrap_err();
        prop_assert!(err.is_tamper());
        prop_assert_eq!(named_seq(&err), i.min(j) as u64 + 1);
    }

    #[test]
    fn r_chain_5_any_removal_is_named(steps in prop::collection::vec("[a-z ]{1,12}", 1..12), pick in any::<prop::sample::Index>()) {
        let (run, mut rows, head) = journal_of(&steps);
        let i = pick.index(rows.len());
        rows.remove(i);
        let err = verdict(&run, &rows, head).unwrap_err();
        prop_assert!(err.is_tamper());
        prop_assert_eq!(named_seq(&err), i as u64 + 1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(512)))]

    /// R-UX-3: arbitrary record bytes and export text are refused with a typed error, never a panic.
    #[test]
    fn r_ux_3_arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400), text in "\\PC{0,400}") {
        let upcasters = Upcasters::builtin();
        prop_assert!(journal_core::Record::decode_verified(&bytes, &upcasters).is_err() || serde_json::from_slice::<serde_json::Value>(&bytes).is_ok());
        let check = ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() };
        prop_assert!(journal_core::export::verify_export(&text, &[], check).is_err());
        let _ = journal_core::chain::ChainHash::from_hex(&text);
        let _ = RunId::new(&text);
    }
}
