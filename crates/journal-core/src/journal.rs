//! Writing and reading one tenant's journal through a [`Store`]: records are
//! encoded once, chained, signed, and appended; reads verify before they parse.

use crate::chain::{ChainCheck, ChainHash, ExpectedHead, StoredRecord, VerifiedRecord, verify_run};
use crate::error::{JournalError, TamperKind};
use crate::ids::{RunId, TenantId};
use crate::record::{Build, Outcome, Record, RecordBody};
use crate::seal::SealLeaf;
use crate::signature::Signer;
use crate::store::{AppendRequest, Conclusion, SealEntry, Store};

/// A tenant's journal on a store, with the plane's optional record signer
/// and the build that writes (named in every record, R-VER-4).
#[derive(Clone, Copy)]
pub struct Journal<'a> {
    /// The store.
    pub store: &'a dyn Store,
    /// The tenant.
    pub tenant: &'a TenantId,
    /// The tenant's log origin (it goes into seal leaves).
    pub origin: &'a str,
    /// The record signer; `None` writes unsigned records (R-SIG-4).
    pub signer: Option<&'a dyn Signer>,
    /// The build named as the writer of every record appended here.
    pub build: &'a Build,
}

/// What an append produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The run's new head.
    pub head: ExpectedHead,
    /// The log position, when the record sealed the run.
    pub position: Option<u64>,
}

/// A verified run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedRun {
    /// Its records, verified and decoded.
    pub records: Vec<VerifiedRecord>,
    /// Its head.
    pub head: Option<ExpectedHead>,
    /// Its seal, checked against the chain.
    pub seal: Option<SealEntry>,
    /// The outcome index's entry.
    pub outcome: Option<Outcome>,
}

impl VerifiedRun {
    /// The last conclusion in the chain: the run's answer (R-RUN-3).
    pub fn last_conclusion(&self) -> Option<&crate::record::RunConcluded> {
        self.records.iter().rev().find_map(|r| match &r.record.body {
            RecordBody::RunConcluded(concluded) => Some(concluded),
            _ => None,
        })
    }
}

impl<'a> Journal<'a> {
    /// An unsigned journal written by this build of journal-core.
    pub fn new(store: &'a dyn Store, tenant: &'a TenantId, origin: &'a str) -> Self {
        Self { store, tenant, origin, signer: None, build: Build::journal_core() }
    }

    /// Signs every record with `signer`.
    pub fn signed_by(self, signer: &'a dyn Signer) -> Self {
        Self { signer: Some(signer), ..self }
    }

    /// Names `build` (the binary running) as the writer of every record.
    pub fn written_by(self, build: &'a Build) -> Self {
        Self { build, ..self }
    }

    /// Appends `body` after `head` (`None` for a new run's first record).
    /// A `RunConcluded` updates the outcome index; a sealing one seals.
    pub fn append(
        &self,
        run: &RunId,
        head: Option<ExpectedHead>,
        effect_key: Option<String>,
        body: RecordBody,
    ) -> Result<Appended, JournalError> {
        let seq = head.map_or(1, |h| h.seq + 1);
        let prev = head.map_or(ChainHash::GENESIS, |h| h.hash);
        let record = Record { run: run.clone(), seq, effect_key, build: self.build.clone(), body };
        let row = StoredRecord::new(&record, prev, self.signer)?;
        let hash = row.hash;
        let conclusion = match &record.body {
            RecordBody::RunConcluded(concluded) => Some(Conclusion {
                outcome: concluded.outcome,
                seal: concluded.outcome.seals().then(|| SealLeaf {
                    origin: self.origin.to_owned(),
                    run: run.clone(),
                    record_count: seq,
                    head: hash,
                }),
            }),
            _ => None,
        };
        let position = self.store.append(AppendRequest {
            tenant: self.tenant.clone(),
            run: run.clone(),
            expected_head: head,
            row,
            conclusion,
        })?;
        Ok(Appended { head: ExpectedHead { seq, hash }, position })
    }

    /// Reads and verifies a run: chain, signatures, shapes, head, and seal.
    pub fn read(&self, run: &RunId, check: ChainCheck<'_>) -> Result<VerifiedRun, JournalError> {
        let stored = self.store.read_run(self.tenant, run)?;
        let records = verify_run(run, &stored.rows, stored.head, check)?;
        if let Some(seal) = &stored.seal {
            let last = records.last().map(|r| (r.stored.seq, r.stored.hash));
            let expected = last.map(|(seq, head)| {
                SealLeaf { origin: self.origin.to_owned(), run: run.clone(), record_count: seq, head }.to_bytes()
            });
            if expected.as_deref() != Some(seal.leaf_bytes.as_slice()) {
                return Err(JournalError::Tamper {
                    run: run.clone(),
                    seq: last.map_or(1, |(seq, _)| seq),
                    kind: TamperKind::SealMismatch,
                    detail: Some("the seal's leaf does not match the journal".into()),
                });
            }
        }
        Ok(VerifiedRun { records, head: stored.head, seal: stored.seal, outcome: stored.outcome })
    }
}
