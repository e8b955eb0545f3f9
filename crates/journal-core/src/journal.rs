//! Writing and reading one tenant's journal through a [`Store`]: records are
//! encoded once, chained, signed, and appended; reads verify before they parse.

use witness::Origin;

use crate::chain::{ChainCheck, ChainHash, ExpectedHead, StoredRecord, VerifiedRecord, verify_run};
use crate::clock::{Clock, system_clock};
use crate::error::{JournalError, TamperKind};
use crate::ids::{RunId, TenantId};
use crate::record::{Build, Outcome, Record, RecordBody, RunConcluded, Verdict};
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
    pub origin: &'a Origin,
    /// The record signer; `None` writes unsigned records (R-SIG-4).
    pub signer: Option<&'a dyn Signer>,
    /// The build named as the writer of every record appended here.
    pub build: &'a Build,
    /// Where the time written on every record comes from.
    pub clock: &'a dyn Clock,
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

/// The last conclusion in a verified chain: the run's answer (R-RUN-3). The
/// one place it is read; the outcome index, status, exports and the audit
/// all take it from here.
pub fn last_conclusion(records: &[VerifiedRecord]) -> Option<&RunConcluded> {
    records.iter().rev().find_map(|r| match &r.record.body {
        RecordBody::RunConcluded(concluded) => Some(concluded),
        _ => None,
    })
}

impl VerifiedRun {
    /// The last conclusion in the chain: the run's answer (R-RUN-3).
    pub fn last_conclusion(&self) -> Option<&RunConcluded> {
        last_conclusion(&self.records)
    }
}

impl<'a> Journal<'a> {
    /// An unsigned journal written by this build of journal-core.
    pub fn new(store: &'a dyn Store, tenant: &'a TenantId, origin: &'a Origin) -> Self {
        Self { store, tenant, origin, signer: None, build: Build::journal_core(), clock: system_clock() }
    }

    /// Reads the time written on every record from `clock`.
    pub fn timed_by(self, clock: &'a dyn Clock) -> Self {
        Self { clock, ..self }
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
    /// A `RunConcluded` updates the outcome index; a sealing one seals. An
    /// `exhausted` conclusion must carry its `BudgetExceeded` verdict
    /// (R-RUN-4): redelivery answers with it, so it cannot be missing.
    pub fn append(
        &self,
        run: &RunId,
        head: Option<ExpectedHead>,
        effect_key: Option<String>,
        body: RecordBody,
    ) -> Result<Appended, JournalError> {
        if let RecordBody::RunConcluded(concluded) = &body
            && concluded.outcome == Outcome::Exhausted
            && !matches!(concluded.verdict, Verdict::BudgetExceeded { .. })
        {
            return Err(JournalError::InvalidRecord(
                "an exhausted conclusion needs its BudgetExceeded verdict (which ceiling, its value, the counters)"
                    .into(),
            ));
        }
        let seq = head.map_or(1, |h| h.seq + 1);
        let prev = head.map_or(ChainHash::GENESIS, |h| h.hash);
        let at = self.clock.now();
        let record = Record { run: run.clone(), seq, at, effect_key, build: self.build.clone(), body };
        let row = StoredRecord::new(&record, prev, self.signer)?;
        let new_head = ExpectedHead { seq, hash: row.hash };
        let conclusion = match &record.body {
            RecordBody::RunConcluded(concluded) => Some(Conclusion {
                outcome: concluded.outcome,
                seal: concluded.outcome.seals().then(|| SealLeaf::new(self.origin, run, new_head)),
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
        Ok(Appended { head: new_head, position })
    }

    /// Reads and verifies a run: chain, signatures, shapes, head, and seal.
    pub fn read(&self, run: &RunId, check: ChainCheck<'_>) -> Result<VerifiedRun, JournalError> {
        let stored = self.store.read_run(self.tenant, run)?;
        let records = verify_run(run, &stored.rows, stored.head, check)?;
        if let Some(seal) = &stored.seal {
            let last = records.last().map(|r| ExpectedHead { seq: r.stored.seq, hash: r.stored.hash });
            let expected = SealLeaf::of_verified_chain(self.origin, run, &records);
            if !expected.is_some_and(|leaf| leaf.matches(&seal.leaf_bytes)) {
                return Err(JournalError::Tamper {
                    run: run.clone(),
                    seq: last.map_or(1, |head| head.seq),
                    kind: TamperKind::SealMismatch,
                    detail: Some("the seal's leaf does not match the journal".into()),
                });
            }
        }
        Ok(VerifiedRun { records, head: stored.head, seal: stored.seal, outcome: stored.outcome })
    }
}
