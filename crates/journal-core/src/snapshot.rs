//! One tenant of a store, read whole in one snapshot ([`Store::snapshot`]):
//! every run row and its records, every index row, the seals, the log's
//! counter and nodes, and the checkpoints, as of one instant. The audit runs
//! its checks over a snapshot, so a store that a live plane writes meanwhile
//! is seen as it was at one commit, never half of one (a seal read without
//! its counter, a run without its index row): no false alarm on a healthy
//! plane. A snapshot is itself a read-only [`Store`], so every reader
//! (`Journal::read`, `LogView`) works over it unchanged; appends are refused.

use std::collections::{BTreeMap, BTreeSet};

use tlog::{NodeHash, NodeId, Tree};

use crate::append::RunHead;
use crate::chain::StoredRecord;
use crate::error::{JournalError, StorageError};
use crate::heads::HeadEntry;
use crate::ids::{RunId, TenantId};
use crate::record::Outcome;
use crate::store::{AdmittedRun, AppendRequest, LogCounters, RunRows, SealEntry, SignedTree, SnapshotSink, Store};

/// One run as the snapshot holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotRun {
    /// Its records in seq order (those stored, whether or not a runs row names them).
    pub rows: Vec<StoredRecord>,
    /// Its runs-table row; `None`: records with no runs row. An outcome
    /// this build does not know is its `unknown_outcome` (see
    /// [`RunRows::unknown_outcome`]).
    pub head: Option<RunHead>,
}

/// One tenant of a store as of one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantSnapshot {
    /// The tenant.
    pub tenant: Option<TenantId>,
    /// Every run with a runs row or at least one record, by id.
    pub runs: BTreeMap<RunId, SnapshotRun>,
    /// The outcome index's rows.
    pub outcome_index: BTreeSet<(Outcome, RunId)>,
    /// The outcome index's rows naming an outcome this build does not know
    /// (a newer build's, or forged): held by the audit to the run's chain,
    /// never a failure of the whole snapshot (R-VER-4).
    pub unknown_outcomes: BTreeSet<(String, RunId)>,
    /// The idempotency index's rows: key -> run.
    pub idempotency: BTreeMap<String, RunId>,
    /// The admission order's rows.
    pub admissions: BTreeSet<AdmittedRun>,
    /// The store keeps no admission order at all: a redb file written by a
    /// build before it, which no writer of this build has opened since (its
    /// first writable opening fills it). The audit then says the order was
    /// not checked rather than report every run missing from it.
    pub admission_order_absent: bool,
    /// The seals by position.
    pub seals: BTreeMap<u64, SealEntry>,
    /// Which position the store says seals each run.
    pub seal_by_run: BTreeMap<RunId, u64>,
    /// The log counter: the next position it gives.
    pub next_position: u64,
    /// The count of seals the store keeps beside its counter, where it keeps
    /// one apart from the seals (PostgreSQL's `log_counter.seal_count`, kept
    /// by a trigger): what the plane reads to tell whether positions have
    /// holes. `None` where the count is the seals themselves. The snapshot
    /// answers [`Store::log_counters`] with the seals it read; the audit
    /// holds this count to them.
    pub stored_seal_count: Option<u64>,
    /// The stored complete-subtree hashes of the log.
    pub nodes: BTreeMap<NodeId, NodeHash>,
    /// The entries stored for each heads leaf, by the leaf's position.
    pub heads_entries: BTreeMap<u64, Vec<HeadEntry>>,
    /// Which position the store says holds each run's newest heads entry
    /// (what `prove` of an open run looks up): held to `heads_entries` by
    /// the audit, both ways.
    pub heads_by_run: BTreeMap<RunId, u64>,
    /// The open runs the store marks as moved since the last heads leaf:
    /// the runs the next heads leaf enters. Held by the audit to every open
    /// run whose verified head is past its newest heads entry (a mark
    /// deleted would leave the move out of every later checkpoint).
    pub moved: BTreeSet<RunId>,
    /// The store keeps no moved marks yet: a redb file written before them
    /// that no writer of this build has opened since (its first writable
    /// opening marks every open run). The audit then says the marks were not
    /// checked rather than report every moved run unmarked.
    pub moved_marks_absent: bool,
    /// The checkpoints the plane recorded as signed, oldest first.
    pub signed: Vec<SignedTree>,
    /// The cosigned checkpoints recorded, oldest first.
    pub cosigned: Vec<SignedTree>,
}

impl TenantSnapshot {
    /// An empty snapshot of `tenant`.
    pub fn empty(tenant: &TenantId) -> Self {
        Self { tenant: Some(tenant.clone()), ..Self::default() }
    }

    /// The seal-by-run index derived from the seals, for a backend that
    /// keeps no separate one (heads leaves are not seals of a run).
    pub fn index_seals_by_run(&mut self) {
        self.seal_by_run = self
            .seals
            .values()
            .filter(|seal| !seal.run.is_heads_leaf())
            .map(|seal| (seal.run.clone(), seal.position))
            .collect();
    }

    /// The newest-heads index derived from the heads entries, for a backend
    /// that keeps no separate one.
    pub fn index_heads_by_run(&mut self) {
        self.heads_by_run = newest_heads(&self.heads_entries);
    }

    /// Whether the store holds nothing at all for the tenant.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
            && self.outcome_index.is_empty()
            && self.idempotency.is_empty()
            && self.admissions.is_empty()
            && self.seals.is_empty()
            && self.next_position == 0
            && self.nodes.is_empty()
    }

    /// `rows` (a run's records, as streamed) with what the snapshot's
    /// tables say of the run: what [`Store::read_run`] answers.
    pub fn run_rows(&self, run: &RunId, rows: Vec<StoredRecord>) -> Result<RunRows, JournalError> {
        let Some(tenant) = &self.tenant else {
            return Err(JournalError::Io(StorageError::message("a snapshot of no tenant holds no run")));
        };
        let head = self
            .runs
            .get(run)
            .and_then(|stored| stored.head.as_ref())
            .ok_or_else(|| JournalError::NotFound { tenant: tenant.clone(), run: run.clone() })?;
        Ok(RunRows {
            rows,
            head: Some(head.head),
            sealed: head.sealed,
            seal: self.seal_of(tenant, run)?,
            outcome: head.outcome,
            unknown_outcome: head.unknown_outcome.clone(),
        })
    }

    fn ours(&self, tenant: &TenantId) -> bool {
        self.tenant.as_ref() == Some(tenant)
    }

    fn missing_node(tenant: &TenantId, id: &NodeId) -> JournalError {
        JournalError::StoreDamage { tenant: tenant.clone(), detail: format!("log node {id:?} is missing") }
    }
}

impl Store for TenantSnapshot {
    fn append(&self, _: AppendRequest) -> Result<Option<u64>, JournalError> {
        Err(JournalError::Io(StorageError::message("a snapshot is read-only: it takes no appends")))
    }

    fn read_run(&self, tenant: &TenantId, run: &RunId) -> Result<RunRows, JournalError> {
        let not_found = || JournalError::NotFound { tenant: tenant.clone(), run: run.clone() };
        let stored = self.runs.get(run).filter(|_| self.ours(tenant)).ok_or_else(not_found)?;
        self.run_rows(run, stored.rows.clone())
    }

    fn read_run_within(&self, tenant: &TenantId, run: &RunId, max_bytes: usize) -> Result<RunRows, JournalError> {
        let not_found = || JournalError::NotFound { tenant: tenant.clone(), run: run.clone() };
        let stored = self.runs.get(run).filter(|_| self.ours(tenant)).ok_or_else(not_found)?;
        self.run_rows(run, crate::store::rows_within(tenant, run, &stored.rows, max_bytes)?)
    }

    fn runs(&self, tenant: &TenantId, outcome: Option<Outcome>) -> Result<Vec<RunId>, JournalError> {
        if !self.ours(tenant) {
            return Ok(Vec::new());
        }
        Ok(match outcome {
            None => self.runs.iter().filter(|(_, run)| run.head.is_some()).map(|(id, _)| id.clone()).collect(),
            Some(outcome) => {
                self.outcome_index.iter().filter(|(o, _)| *o == outcome).map(|(_, run)| run.clone()).collect()
            }
        })
    }

    fn admissions(
        &self,
        tenant: &TenantId,
        before: Option<&AdmittedRun>,
        outcome: Option<Outcome>,
        limit: usize,
    ) -> Result<Vec<AdmittedRun>, JournalError> {
        if !self.ours(tenant) {
            return Ok(Vec::new());
        }
        let rows = self.admissions.iter().filter(|row| {
            outcome.is_none()
                || self.runs.get(&row.run).and_then(|run| run.head.as_ref()).and_then(|head| head.outcome) == outcome
        });
        Ok(crate::store::page_of_admissions(rows.cloned(), before, limit))
    }

    fn run_by_idempotency_key(&self, tenant: &TenantId, key: &str) -> Result<Option<RunId>, JournalError> {
        Ok(self.idempotency.get(key).filter(|_| self.ours(tenant)).cloned())
    }

    fn tenants(&self) -> Result<Vec<TenantId>, JournalError> {
        Ok(self.tenant.iter().filter(|_| !self.runs.is_empty()).cloned().collect())
    }

    fn seals(&self, tenant: &TenantId) -> Result<Vec<SealEntry>, JournalError> {
        Ok(if self.ours(tenant) { self.seals.values().cloned().collect() } else { Vec::new() })
    }

    fn seal_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<SealEntry>, JournalError> {
        if !self.ours(tenant) {
            return Ok(None);
        }
        Ok(self.seal_by_run.get(run).and_then(|position| self.seals.get(position)).cloned())
    }

    fn log_counters(&self, tenant: &TenantId) -> Result<LogCounters, JournalError> {
        Ok(if self.ours(tenant) {
            LogCounters { next_position: self.next_position, seal_count: self.seals.len() as u64 }
        } else {
            LogCounters { next_position: 0, seal_count: 0 }
        })
    }

    fn read_log_nodes(&self, tenant: &TenantId, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
        ids.iter()
            .map(|id| {
                self.nodes.get(id).filter(|_| self.ours(tenant)).copied().ok_or_else(|| Self::missing_node(tenant, id))
            })
            .collect()
    }

    fn signed_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        Ok(if self.ours(tenant) { self.signed.clone() } else { Vec::new() })
    }

    fn record_signed_checkpoint(&self, _: &TenantId, _: Option<Tree>, _: SignedTree) -> Result<(), JournalError> {
        Err(JournalError::Io(StorageError::message("a snapshot is read-only: it records no checkpoint")))
    }

    fn cosigned_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        Ok(if self.ours(tenant) { self.cosigned.clone() } else { Vec::new() })
    }

    fn record_cosigned_checkpoint(&self, _: &TenantId, _: SignedTree) -> Result<(), JournalError> {
        Err(JournalError::Io(StorageError::message("a snapshot is read-only: it records no checkpoint")))
    }

    fn append_heads(&self, _: &TenantId, _: &witness::Origin) -> Result<Vec<u64>, JournalError> {
        Err(JournalError::Io(StorageError::message("a snapshot is read-only: it takes no heads leaf")))
    }

    fn heads_entries(&self, tenant: &TenantId, position: u64) -> Result<Vec<HeadEntry>, JournalError> {
        Ok(self.heads_entries.get(&position).filter(|_| self.ours(tenant)).cloned().unwrap_or_default())
    }

    fn heads_entries_in(
        &self,
        tenant: &TenantId,
        positions: std::ops::Range<u64>,
    ) -> Result<crate::store::HeadsByPosition, JournalError> {
        let positions = if self.ours(tenant) { positions } else { 0..0 };
        Ok(crate::store::entries_in(&self.heads_entries, positions))
    }

    fn newest_heads_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<u64>, JournalError> {
        Ok(self.heads_by_run.get(run).filter(|_| self.ours(tenant)).copied())
    }

    fn seal_at(&self, tenant: &TenantId, position: u64) -> Result<Option<SealEntry>, JournalError> {
        Ok(self.seals.get(&position).filter(|_| self.ours(tenant)).cloned())
    }

    fn snapshot(&self, tenant: &TenantId) -> Result<TenantSnapshot, JournalError> {
        Ok(if self.ours(tenant) { self.clone() } else { TenantSnapshot::empty(tenant) })
    }
}

/// Each run's newest heads leaf position, from every heads leaf's entries.
pub fn newest_heads(heads_entries: &BTreeMap<u64, Vec<HeadEntry>>) -> BTreeMap<RunId, u64> {
    let mut newest = BTreeMap::new();
    // Positions ascend, so the last insert of a run is its newest.
    for (position, entries) in heads_entries {
        for entry in entries {
            newest.insert(entry.run.clone(), *position);
        }
    }
    newest
}

/// Hands a snapshot read whole to `sink` as [`Store::snapshot_streamed`]
/// promises: its tables (the runs without rows), then each run's records.
pub fn stream_snapshot(mut snapshot: TenantSnapshot, sink: &mut dyn SnapshotSink) -> Result<(), JournalError> {
    let records: Vec<(RunId, Vec<StoredRecord>)> = snapshot
        .runs
        .iter_mut()
        .filter(|(_, stored)| !stored.rows.is_empty())
        .map(|(run, stored)| (run.clone(), std::mem::take(&mut stored.rows)))
        .collect();
    sink.tables(snapshot)?;
    // Through the same bound a backend's stream keeps.
    let mut in_order = RecordsInRunOrder::new(sink);
    for (run, rows) in records {
        for row in rows {
            in_order.push(run.clone(), row)?;
        }
    }
    in_order.finish()
}

/// A [`SnapshotSink`] that puts the snapshot back together: what a backend
/// that streams answers [`Store::snapshot`] with, so it reads one way.
#[derive(Debug, Default)]
pub struct CollectSnapshot {
    snapshot: Option<TenantSnapshot>,
}

impl CollectSnapshot {
    /// The snapshot collected; an error if the stream never gave its tables.
    pub fn finish(self) -> Result<TenantSnapshot, JournalError> {
        self.snapshot.ok_or_else(|| JournalError::Io(StorageError::message("the snapshot stream gave no tables")))
    }
}

impl SnapshotSink for CollectSnapshot {
    fn tables(&mut self, tables: TenantSnapshot) -> Result<(), JournalError> {
        self.snapshot = Some(tables);
        Ok(())
    }

    fn run_records(&mut self, run: RunId, rows: Vec<StoredRecord>) -> Result<(), JournalError> {
        let snapshot = self.snapshot.as_mut().ok_or_else(|| {
            JournalError::Io(StorageError::message("the snapshot stream gave records before its tables"))
        })?;
        snapshot.runs.entry(run).or_default().rows = rows;
        Ok(())
    }
}

/// What a snapshot's stream keeps of a run whose rows passed its sink's
/// bound ([`SnapshotSink::run_bytes_bound`]): how large it is, and each
/// row's seq and hash column, which the log's leaves and heads entries are
/// still held to, at 40 bytes a record whatever the records hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunTooLarge {
    /// How many records the store holds for the run.
    pub records: u64,
    /// What its rows hold ([`StoredRecord::held_bytes`]).
    pub bytes: u64,
    /// Each row's seq and hash column, in seq order.
    pub hashes: Vec<(u64, crate::ChainHash)>,
}

impl RunTooLarge {
    fn of(rows: Vec<StoredRecord>) -> Self {
        let mut kept = Self::default();
        rows.into_iter().for_each(|row| kept.add(&row));
        kept
    }

    fn add(&mut self, row: &StoredRecord) {
        self.records += 1;
        self.bytes = self.bytes.saturating_add(row.held_bytes() as u64);
        self.hashes.push((row.seq, row.hash));
    }
}

/// The run a stream is reading.
enum CurrentRun {
    /// Its rows so far, and what they hold.
    Held(Vec<StoredRecord>, usize),
    /// Past the sink's bound.
    TooLarge(RunTooLarge),
}

/// Records read in (run, seq) order, handed to a [`SnapshotSink`] one run
/// at a time: how a backend streams its records table. A run whose rows
/// pass the sink's [`SnapshotSink::run_bytes_bound`] is not held: its
/// [`RunTooLarge`] is handed over instead.
pub struct RecordsInRunOrder<'sink> {
    sink: &'sink mut dyn SnapshotSink,
    bound: Option<usize>,
    current: Option<(RunId, CurrentRun)>,
}

impl<'sink> RecordsInRunOrder<'sink> {
    /// Records for `sink`, whose tables were already given.
    pub fn new(sink: &'sink mut dyn SnapshotSink) -> Self {
        let bound = sink.run_bytes_bound();
        Self { sink, bound, current: None }
    }

    /// The id of the run a row names: the current run's when it names that
    /// one (a run's records come together, so its id is read once a run,
    /// not once a record), else `read(name)`.
    pub fn run_named(
        &self,
        name: &str,
        read: impl FnOnce(&str) -> Result<RunId, JournalError>,
    ) -> Result<RunId, JournalError> {
        match &self.current {
            Some((run, _)) if run.as_str() == name => Ok(run.clone()),
            _ => read(name),
        }
    }

    /// The position (from 1) the next row of `run` takes among the rows
    /// read of it: what a row whose seq cannot be read stands at.
    pub fn next_position(&self, run: &RunId) -> u64 {
        match &self.current {
            Some((current, CurrentRun::Held(rows, _))) if current == run => rows.len() as u64 + 1,
            Some((current, CurrentRun::TooLarge(kept))) if current == run => kept.records + 1,
            _ => 1,
        }
    }

    /// The next record read; a run's records must come together, in seq order.
    pub fn push(&mut self, run: RunId, row: StoredRecord) -> Result<(), JournalError> {
        match &mut self.current {
            Some((current, held)) if *current == run => {
                match held {
                    CurrentRun::Held(rows, bytes) => {
                        *bytes = bytes.saturating_add(row.held_bytes());
                        rows.push(row);
                        if self.bound.is_some_and(|bound| *bytes > bound) {
                            *held = CurrentRun::TooLarge(RunTooLarge::of(std::mem::take(rows)));
                        }
                    }
                    CurrentRun::TooLarge(kept) => kept.add(&row),
                }
                Ok(())
            }
            _ => {
                let bytes = row.held_bytes();
                let held = if self.bound.is_some_and(|bound| bytes > bound) {
                    CurrentRun::TooLarge(RunTooLarge::of(vec![row]))
                } else {
                    CurrentRun::Held(vec![row], bytes)
                };
                let finished = self.current.replace((run, held));
                self.hand_over(finished)
            }
        }
    }

    /// The next record read, a row that could not be read (`why`) and is
    /// handed on as `row`, with no bytes and no signature
    /// ([`SnapshotSink::unreadable_row`]).
    pub fn push_unreadable(&mut self, run: RunId, row: StoredRecord, why: &JournalError) -> Result<(), JournalError> {
        self.sink.unreadable_row(&run, row.seq, why)?;
        self.push(run, row)
    }

    /// Hands over the last run.
    pub fn finish(mut self) -> Result<(), JournalError> {
        let last = self.current.take();
        self.hand_over(last)
    }

    fn hand_over(&mut self, finished: Option<(RunId, CurrentRun)>) -> Result<(), JournalError> {
        match finished {
            None => Ok(()),
            Some((run, CurrentRun::Held(rows, _))) => self.sink.run_records(run, rows),
            Some((run, CurrentRun::TooLarge(kept))) => self.sink.run_too_large(run, kept),
        }
    }
}
