//! Writing and reading one tenant's journal through a [`Store`]: records are
//! encoded once, chained, signed, and appended; reads verify before they parse.

use std::collections::BTreeSet;

use witness::Origin;

use crate::chain::{ChainCheck, ChainHash, ExpectedHead, StoredRecord, VerifiedRecord, verify_run};
use crate::clock::{Clock, system_clock};
use crate::error::{JournalError, TamperKind};
use crate::ids::{RunId, TenantId};
use crate::record::{Build, Outcome, Record, RecordBody, RunAdmitted, RunConcluded, RunForked, Verdict};
use crate::seal::SealLeaf;
use crate::signature::{Prechecked, SignedHash, Signer, Verifier, signed_hashes};
use crate::snapshot::TenantSnapshot;
use crate::store::{AppendRequest, Conclusion, RunRows, SealEntry, SnapshotSink, Store};

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
/// one place it is read from a chain; the outcome index, exports, regression
/// replays and the audit all take it from here (and the run-state fold,
/// which carries the same answer forward record by record, agrees with it).
pub fn last_conclusion(records: &[VerifiedRecord]) -> Option<&RunConcluded> {
    last_conclusion_at(records).map(|(_, concluded)| concluded)
}

/// [`last_conclusion`], with the seq of the record that holds it.
pub fn last_conclusion_at(records: &[VerifiedRecord]) -> Option<(u64, &RunConcluded)> {
    records.iter().rev().find_map(|r| match &r.record.body {
        RecordBody::RunConcluded(concluded) => Some((r.stored.seq, concluded)),
        _ => None,
    })
}

/// A verified chain's admission: its first record, when that is a
/// `RunAdmitted` (see [`Record::admission`]).
pub fn admission(records: &[VerifiedRecord]) -> Option<&RunAdmitted> {
    records.first().and_then(|first| first.record.admission())
}

/// The plan a verified chain froze (its first `PlanFrozen`), with that record's seq.
pub fn plan_at(records: &[VerifiedRecord]) -> Option<(u64, &[String])> {
    records.iter().find_map(|r| match &r.record.body {
        RecordBody::PlanFrozen(frozen) => Some((r.stored.seq, frozen.steps.as_slice())),
        _ => None,
    })
}

/// Where a verified chain was forked from (its first `RunForked`), if it was.
pub fn forked_from(records: &[VerifiedRecord]) -> Option<&RunForked> {
    records.iter().find_map(|r| match &r.record.body {
        RecordBody::RunForked(forked) => Some(forked),
        _ => None,
    })
}

impl VerifiedRun {
    /// The last conclusion in the chain: the run's answer (R-RUN-3), by [`last_conclusion`].
    pub fn last_conclusion(&self) -> Option<&RunConcluded> {
        last_conclusion(&self.records)
    }

    /// Whether the run is sealed: its verified chain's last conclusion
    /// seals it, or the store holds a seal of it. The chain decides, never
    /// the seal lookup alone: that lookup (and the runs row's sealed flag
    /// the store's own refusal reads) is derived data someone with the
    /// store can clear, and a frozen journal must take no record (R-RUN-2).
    pub fn sealed(&self) -> bool {
        self.seal.is_some() || self.last_conclusion().is_some_and(|concluded| concluded.outcome.seals())
    }

    /// Holds the store's seal lookup to the chain (R-RUN-2): a run whose
    /// verified chain seals it and of which the store finds no seal is
    /// damage ([`JournalError::StoreDamage`]), never a run that is "not
    /// sealed" or "not covered yet". A read that proves, exports or shows
    /// the run's place in the log asks this before it answers from the
    /// lookup.
    pub fn seal_found(&self, tenant: &TenantId, run: &RunId) -> Result<(), JournalError> {
        if self.seal.is_some() || !self.sealed() {
            return Ok(());
        }
        Err(JournalError::StoreDamage {
            tenant: tenant.clone(),
            detail: format!(
                "run {run}: its last conclusion ({}) seals it, but the store finds no seal of it in the log: the \
                 store's seal lookup does not hold to the chain (run `agentplane verify`)",
                self.last_conclusion().map_or("none", |concluded| concluded.outcome.as_str())
            ),
        })
    }

    /// Whether a listing of the run under `listed`, taken from a derived
    /// index (the outcome index, the runs table's outcome column) before
    /// the chain was read, was only overtaken by the plane (R-RUN-3,
    /// R-AUD-8): the chain concluded `listed` once and has concluded
    /// otherwise since (a resume on a live plane), and the outcome index
    /// read with the chain holds that newer answer. Such a run is no longer
    /// of that outcome, and nothing contradicts its chain: a reader leaves it
    /// out of the listing, or shows its answer now, never calls the index
    /// forged. An index that still contradicts the chain as read, or a
    /// listing under an outcome the chain never concluded, is no such run.
    pub fn moved_on_from(&self, listed: Outcome) -> bool {
        let answer = self.last_conclusion().map(|concluded| concluded.outcome);
        answer != Some(listed)
            && self.outcome == answer
            && self
                .records
                .iter()
                .any(|r| matches!(&r.record.body, RecordBody::RunConcluded(concluded) if concluded.outcome == listed))
    }

    /// The run's admission (its seq-1 `RunAdmitted`).
    pub fn admission(&self) -> Option<&RunAdmitted> {
        admission(&self.records)
    }

    /// Holds the run's admission to the tenant read (R-COVER-4): its
    /// `RunAdmitted` names `tenant`. A run copied in from another tenant
    /// verifies as a chain (one plane's record key signs for all its
    /// tenants, and the records name the run, not the tenant's store), so a
    /// read that does not hold it here counts, lists and shows another
    /// tenant's run as this one's. A chain with no admission (a direct
    /// `Journal` writer's) names no tenant to hold it to. The audit holds
    /// the run id to the one the tenant and its key give as well; a read
    /// does not, so a journal written directly under ids of its own (a
    /// library user's, this crate's tests') stays readable.
    pub fn bound_to(&self, tenant: &TenantId, run: &RunId) -> Result<(), JournalError> {
        match self.admission() {
            Some(admitted) if admitted.tenant != tenant.as_str() => Err(JournalError::StoreDamage {
                tenant: tenant.clone(),
                detail: format!(
                    "run {run} is not a run of tenant {tenant}: its admission names tenant {:?} (copied in from \
                     another tenant behind the plane; run `agentplane verify`)",
                    admitted.tenant
                ),
            }),
            _ => Ok(()),
        }
    }

    /// The idempotency key the run was admitted under.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.admission().map(|admitted| admitted.idempotency_key.as_str())
    }

    /// The plan the run froze (its steps).
    pub fn plan(&self) -> Option<&[String]> {
        plan_at(&self.records).map(|(_, steps)| steps)
    }

    /// Where the run was forked from: the source run, the seq and that record's chain hash.
    pub fn forked_from(&self) -> Option<&RunForked> {
        forked_from(&self.records)
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
        self.append_record(run, head, effect_key, body).map(|(appended, _)| appended)
    }

    /// [`append`](Self::append), answering also with the record as written:
    /// what a live run applies to its state (the run-state fold).
    pub(crate) fn append_record(
        &self,
        run: &RunId,
        head: Option<ExpectedHead>,
        effect_key: Option<String>,
        body: RecordBody,
    ) -> Result<(Appended, Record), JournalError> {
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
        let idempotency_key = record.idempotency_key().map(str::to_owned);
        let position = self.store.append(AppendRequest {
            tenant: self.tenant.clone(),
            run: run.clone(),
            expected_head: head,
            row,
            idempotency_key,
            conclusion,
            encoded_bytes: None,
        })?;
        Ok((Appended { head: new_head, position }, record))
    }

    /// Reads and verifies a run: chain, signatures, shapes, head, and seal.
    pub fn read(&self, run: &RunId, check: ChainCheck<'_>) -> Result<VerifiedRun, JournalError> {
        self.verify(run, self.store.read_run(self.tenant, run)?, check)
    }

    /// Reads and verifies a run as [`Journal::read`] does, holding at most
    /// `max_bytes` of its rows ([`crate::Store::read_run_within`]): a larger
    /// run is [`JournalError::RunTooLarge`], never a prefix verified as the run.
    pub fn read_within(
        &self,
        run: &RunId,
        check: ChainCheck<'_>,
        max_bytes: usize,
    ) -> Result<VerifiedRun, JournalError> {
        self.verify(run, self.store.read_run_within(self.tenant, run, max_bytes)?, check)
    }

    /// Every run the store holds for the tenant, read in one snapshot
    /// ([`Store::snapshot_streamed`]) and handed to `each` verified by
    /// `check` as [`Journal::read`] verifies, or with why not: first each run
    /// whose records are stored, whether or not the runs table lists it (a
    /// run whose runs row is gone is [`JournalError::StoreDamage`], never
    /// left out), then each runs row with no record behind it (its empty
    /// chain does not reach the head the row records). The runs table is
    /// derived data: a reading of the whole tenant (the tenant's cost, its
    /// listing, a regression replay of every run) is a reading of the
    /// records. An error `each` returns stops the read and is the answer.
    pub fn each_run(
        &self,
        check: ChainCheck<'_>,
        each: &mut dyn FnMut(RunId, Result<VerifiedRun, JournalError>) -> Result<(), JournalError>,
    ) -> Result<(), JournalError> {
        let mut sink = EachRun {
            journal: self,
            check,
            tables: None,
            seen: BTreeSet::new(),
            pending: Vec::new(),
            pending_signatures: 0,
            pending_bytes: 0,
            each,
        };
        self.store.snapshot_streamed(self.tenant, &mut sink)?;
        sink.verify_pending()?;
        let tables = sink.tables.take().ok_or_else(|| snapshot_broken("no tables"))?;
        for (run, _) in tables.runs.iter().filter(|(run, stored)| stored.head.is_some() && !sink.seen.contains(*run)) {
            let verified = tables.run_rows(run, Vec::new()).and_then(|stored| self.verify(run, stored, check));
            (sink.each)(run.clone(), verified)?;
        }
        Ok(())
    }

    /// Verifies a run as the store holds it ([`Store::read_run`]'s answer,
    /// or a snapshot's [`TenantSnapshot::run_rows`](crate::snapshot::TenantSnapshot::run_rows)
    /// of the records it streamed): chain, signatures, shapes, head, and seal,
    /// as [`Journal::read`] does.
    pub fn verify(&self, run: &RunId, stored: RunRows, check: ChainCheck<'_>) -> Result<VerifiedRun, JournalError> {
        let records = match check.verifier {
            // The run's signatures in one batch, not one at a time.
            Some(verifier) => {
                let signed = signed_hashes(&stored.rows);
                let prechecked = Prechecked::new(verifier, &signed);
                verify_run(run, &stored.rows, stored.head, ChainCheck { verifier: Some(&prechecked), ..check })
            }
            None => verify_run(run, &stored.rows, stored.head, check),
        }
        .map_err(|err| self.skew_held_to_seal(run, err, &stored))?;
        self.refuse_unknown_outcome(run, &stored)?;
        self.with_seal_checked(run, records, stored.head, stored.seal, stored.outcome)
    }

    /// A runs row naming an outcome this build does not know, over a chain
    /// every record of which this build has just read: no newer build
    /// concluded it so (its conclusion would be a record this build cannot
    /// read, refused before this as build skew, R-VER-4), so the row was
    /// written behind the plane (damage).
    fn refuse_unknown_outcome(&self, run: &RunId, stored: &RunRows) -> Result<(), JournalError> {
        let Some(outcome) = &stored.unknown_outcome else { return Ok(()) };
        Err(JournalError::StoreDamage {
            tenant: self.tenant.clone(),
            detail: format!(
                "run {run}: the runs row names the outcome {outcome:?}, which this build does not know, but every \
                 record of the run reads at this build and none concludes so: the row was written behind the plane \
                 (run `agentplane audit`)"
            ),
        })
    }

    /// A build skew (R-VER-4) of a run whose seal commits to another head
    /// than its chain's is tamper: the seal was made over the bytes as
    /// written, so a record rewritten as a newer build's (its hash, and the
    /// runs table's head, made to match) does not pass for a rolling deploy.
    fn skew_held_to_seal(&self, run: &RunId, err: JournalError, stored: &RunRows) -> JournalError {
        let (true, Some(seal), Some(last)) = (err.is_build_skew(), &stored.seal, stored.rows.last()) else {
            return err;
        };
        if SealLeaf::new(self.origin, run, ExpectedHead { seq: last.seq, hash: last.hash }).matches(&seal.leaf_bytes) {
            return err;
        }
        JournalError::Tamper {
            run: run.clone(),
            seq: last.seq,
            kind: TamperKind::SealMismatch,
            detail: Some("the seal's leaf does not match the journal".into()),
        }
    }

    /// [`Journal::verify`] with `check` as given: its verifier has the
    /// signatures checked already ([`Prechecked`]).
    fn verify_prechecked(
        &self,
        run: &RunId,
        stored: &RunRows,
        check: ChainCheck<'_>,
    ) -> Result<VerifiedRun, JournalError> {
        let records = verify_run(run, &stored.rows, stored.head, check)
            .map_err(|err| self.skew_held_to_seal(run, err, stored))?;
        self.refuse_unknown_outcome(run, stored)?;
        self.with_seal_checked(run, records, stored.head, stored.seal.clone(), stored.outcome)
    }

    /// A run's verified records with its seal held to them.
    fn with_seal_checked(
        &self,
        run: &RunId,
        records: Vec<VerifiedRecord>,
        head: Option<ExpectedHead>,
        seal: Option<SealEntry>,
        outcome: Option<Outcome>,
    ) -> Result<VerifiedRun, JournalError> {
        if let Some(seal) = &seal {
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
        Ok(VerifiedRun { records, head, seal, outcome })
    }
}

/// How many signatures [`Journal::each_run`] checks at once, over every
/// core ([`Prechecked`]): enough for a batch of the verifier's best size on
/// each core of a large machine, a few hundred runs held at a time.
const SIGNATURES_AT_ONCE: usize = 8 * 1024;
/// The most bytes of rows [`Journal::each_run`] holds waiting for their
/// signatures' check, every column counted: rows may be large, and a window
/// of them must not grow with them.
const BYTES_AT_ONCE: usize = 64 << 20;

/// Where [`Journal::each_run`] reads the snapshot's runs.
struct EachRun<'j, 'c, 'e> {
    journal: &'j Journal<'j>,
    check: ChainCheck<'c>,
    /// The snapshot's tables (its runs rows), handed over before any record.
    tables: Option<TenantSnapshot>,
    /// The runs whose records were handed over.
    seen: BTreeSet<RunId>,
    /// Runs read and not yet verified (only with a verifier): their
    /// signatures are checked together.
    pending: Vec<(RunId, Result<RunRows, JournalError>)>,
    /// The signatures `pending` holds.
    pending_signatures: usize,
    /// The bytes of the rows `pending` holds ([`StoredRecord::held_bytes`]).
    pending_bytes: usize,
    each: &'e mut dyn FnMut(RunId, Result<VerifiedRun, JournalError>) -> Result<(), JournalError>,
}

impl EachRun<'_, '_, '_> {
    /// Verifies the pending runs, their signatures checked together, and
    /// hands each over in the order it was read.
    fn verify_pending(&mut self) -> Result<(), JournalError> {
        let pending = std::mem::take(&mut self.pending);
        self.pending_signatures = 0;
        self.pending_bytes = 0;
        let signed: Vec<SignedHash<'_>> = pending
            .iter()
            .filter_map(|(_, stored)| stored.as_ref().ok())
            .flat_map(|s| signed_hashes(&s.rows))
            .collect();
        let prechecked = self.check.verifier.map(|verifier| Prechecked::new(verifier, &signed));
        let check = ChainCheck { verifier: prechecked.as_ref().map(|p| p as &dyn Verifier), ..self.check };
        for (run, stored) in &pending {
            let verified = match stored {
                Ok(stored) => self.journal.verify_prechecked(run, stored, check),
                Err(err) => Err(err.clone()),
            };
            (self.each)(run.clone(), verified)?;
        }
        Ok(())
    }
}

impl SnapshotSink for EachRun<'_, '_, '_> {
    fn tables(&mut self, tables: TenantSnapshot) -> Result<(), JournalError> {
        self.tables = Some(tables);
        Ok(())
    }

    fn run_records(&mut self, run: RunId, rows: Vec<StoredRecord>) -> Result<(), JournalError> {
        let tables = self.tables.as_ref().ok_or_else(|| snapshot_broken("a run's records before the tables"))?;
        let stored = if tables.runs.get(&run).is_some_and(|stored| stored.head.is_some()) {
            tables.run_rows(&run, rows)
        } else {
            Err(JournalError::StoreDamage {
                tenant: self.journal.tenant.clone(),
                detail: format!(
                    "{} records of run {run} are stored, but the runs table has no row for it (run `agentplane \
                     verify`)",
                    rows.len()
                ),
            })
        };
        self.seen.insert(run.clone());
        if self.check.verifier.is_none() {
            let verified = stored.and_then(|stored| self.journal.verify(&run, stored, self.check));
            return (self.each)(run, verified);
        }
        if let Ok(stored) = &stored {
            self.pending_signatures += stored.rows.len();
            self.pending_bytes += stored.rows.iter().map(StoredRecord::held_bytes).sum::<usize>();
        }
        self.pending.push((run, stored));
        if self.pending_signatures >= SIGNATURES_AT_ONCE || self.pending_bytes >= BYTES_AT_ONCE {
            self.verify_pending()
        } else {
            Ok(())
        }
    }
}

/// A snapshot stream that broke its order: the backend's fault, not the journal's.
fn snapshot_broken(what: &str) -> JournalError {
    JournalError::Io(crate::error::StorageError::message(format!(
        "the store's snapshot stream broke its order: {what}"
    )))
}
