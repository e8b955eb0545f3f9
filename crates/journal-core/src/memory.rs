//! An in-memory [`Store`]: the reference the conformance suite is checked
//! against. Not a product backend: nothing survives the process. Its append
//! is the one algorithm of [`crate::append`], over a map.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use tlog::{NodeHash, NodeId, Tree};

use crate::append::{AppendFailure, AppendTxn, RunHead, append_heads, append_one, stored_run_id};
use crate::chain::{ExpectedHead, StoredRecord};
use crate::clock::At;
use crate::error::JournalError;
use crate::heads::HeadEntry;
use crate::ids::{RunId, TenantId};
use crate::record::Outcome;
use crate::snapshot::{SnapshotRun, TenantSnapshot};
use crate::store::{AdmittedRun, AppendRequest, LogCounters, RunRows, SealEntry, SignedTree, Store};

#[derive(Default)]
pub(crate) struct RunState {
    pub(crate) rows: Vec<StoredRecord>,
    pub(crate) head: Option<ExpectedHead>,
    pub(crate) sealed: bool,
    pub(crate) outcome: Option<Outcome>,
}

#[derive(Default)]
pub(crate) struct TenantState {
    pub(crate) runs: BTreeMap<RunId, RunState>,
    pub(crate) idempotency: BTreeMap<String, RunId>,
    pub(crate) admissions: BTreeSet<AdmittedRun>,
    pub(crate) seals: BTreeMap<u64, SealEntry>,
    pub(crate) next_position: u64,
    pub(crate) nodes: BTreeMap<NodeId, NodeHash>,
    /// Runs whose head moved since the last heads leaf.
    pub(crate) moved: BTreeSet<RunId>,
    /// The entries of each heads leaf, by its position.
    pub(crate) heads: BTreeMap<u64, Vec<HeadEntry>>,
    signed: Vec<SignedTree>,
    cosigned: Vec<SignedTree>,
}

/// The in-memory store.
#[derive(Default)]
pub struct MemoryStore {
    tenants: Mutex<BTreeMap<TenantId, TenantState>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn lock(&self) -> Result<MutexGuard<'_, BTreeMap<TenantId, TenantState>>, JournalError> {
        self.tenants
            .lock()
            .map_err(|_| JournalError::Io(crate::error::StorageError::message("memory store lock poisoned")))
    }
}

fn missing_node(tenant: &TenantId, id: &NodeId) -> JournalError {
    JournalError::StoreDamage { tenant: tenant.clone(), detail: format!("missing log node {id:?}") }
}

/// The map, as the append algorithm's transaction: the lock is held for the
/// whole append, and no put can fail, so an append is all or nothing.
struct MemoryTxn<'a>(&'a mut BTreeMap<TenantId, TenantState>);

impl MemoryTxn<'_> {
    fn tenant(&mut self, tenant: &TenantId) -> &mut TenantState {
        self.0.entry(tenant.clone()).or_default()
    }

    fn run(&mut self, request: &AppendRequest) -> &mut RunState {
        self.tenant(&request.tenant).runs.entry(request.run.clone()).or_default()
    }
}

impl AppendTxn for MemoryTxn<'_> {
    fn run_head(&mut self, request: &AppendRequest) -> Result<Option<RunHead>, AppendFailure> {
        let state = self.0.get(&request.tenant).and_then(|t| t.runs.get(&request.run));
        Ok(state.and_then(|s| {
            s.head.map(|head| RunHead { head, sealed: s.sealed, outcome: s.outcome, unknown_outcome: None })
        }))
    }

    fn next_position(&mut self, tenant: &TenantId) -> Result<u64, AppendFailure> {
        Ok(self.0.get(tenant).map_or(0, |t| t.next_position))
    }

    fn log_nodes(&mut self, tenant: &TenantId, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
        let nodes = self.0.get(tenant).map(|t| &t.nodes);
        ids.iter().map(|id| nodes.and_then(|n| n.get(id)).copied().ok_or_else(|| missing_node(tenant, id))).collect()
    }

    fn put_record(&mut self, request: &AppendRequest) -> Result<(), AppendFailure> {
        self.run(request).rows.push(request.row.clone());
        Ok(())
    }

    fn put_idempotency_key(&mut self, request: &AppendRequest, key: &str) -> Result<(), AppendFailure> {
        self.tenant(&request.tenant).idempotency.insert(key.to_owned(), request.run.clone());
        Ok(())
    }

    fn put_admission(&mut self, request: &AppendRequest, at: At) -> Result<(), AppendFailure> {
        self.tenant(&request.tenant).admissions.insert(AdmittedRun { at, run: request.run.clone() });
        Ok(())
    }

    fn put_outcome(&mut self, request: &AppendRequest, _: Option<Outcome>, new: Outcome) -> Result<(), AppendFailure> {
        self.run(request).outcome = Some(new);
        Ok(())
    }

    fn put_leaf(&mut self, tenant: &TenantId, run: &str, position: u64, leaf: &[u8]) -> Result<(), AppendFailure> {
        let run = stored_run_id(tenant, run).map_err(AppendFailure::Refused)?;
        let entry = SealEntry { position, run, leaf_bytes: leaf.to_vec() };
        self.tenant(tenant).seals.insert(position, entry);
        Ok(())
    }

    fn put_log_node(&mut self, tenant: &TenantId, id: NodeId, hash: &NodeHash) -> Result<(), AppendFailure> {
        self.tenant(tenant).nodes.insert(id, *hash);
        Ok(())
    }

    fn put_next_position(&mut self, tenant: &TenantId, next: u64) -> Result<(), AppendFailure> {
        self.tenant(tenant).next_position = next;
        Ok(())
    }

    fn put_run_head(&mut self, request: &AppendRequest, row: RunHead) -> Result<(), AppendFailure> {
        let state = self.run(request);
        (state.head, state.sealed, state.outcome) = (Some(row.head), row.sealed, row.outcome);
        let moved = &mut self.tenant(&request.tenant).moved;
        if row.sealed {
            moved.remove(&request.run);
        } else {
            moved.insert(request.run.clone());
        }
        Ok(())
    }

    fn moved_heads(&mut self, tenant: &TenantId) -> Result<Vec<(HeadEntry, bool)>, AppendFailure> {
        let Some(state) = self.0.get(tenant) else {
            return Ok(Vec::new());
        };
        Ok(state
            .moved
            .iter()
            .filter_map(|run| {
                let stored = state.runs.get(run)?;
                let head = stored.head?;
                let held = stored.rows.iter().any(|row| row.seq == head.seq && row.hash == head.hash);
                Some((HeadEntry::new(run, head), held))
            })
            .collect())
    }

    fn put_heads_entries(
        &mut self,
        tenant: &TenantId,
        position: u64,
        entries: &[HeadEntry],
    ) -> Result<(), AppendFailure> {
        let state = self.tenant(tenant);
        for entry in entries {
            state.moved.remove(&entry.run);
        }
        state.heads.insert(position, entries.to_vec());
        Ok(())
    }
}

impl Store for MemoryStore {
    fn append(&self, request: AppendRequest) -> Result<Option<u64>, JournalError> {
        let mut tenants = self.lock()?;
        append_one(&mut MemoryTxn(&mut tenants), &request).map_err(AppendFailure::into_error)
    }

    fn read_run(&self, tenant: &TenantId, run: &RunId) -> Result<RunRows, JournalError> {
        self.read_run_within(tenant, run, usize::MAX)
    }

    fn read_run_within(&self, tenant: &TenantId, run: &RunId, max_bytes: usize) -> Result<RunRows, JournalError> {
        let tenants = self.lock()?;
        let not_found = || JournalError::NotFound { tenant: tenant.clone(), run: run.clone() };
        let state = tenants.get(tenant).and_then(|t| t.runs.get(run)).ok_or_else(not_found)?;
        let rows = crate::store::rows_within(tenant, run, &state.rows, max_bytes)?;
        let seal = tenants.get(tenant).and_then(|t| t.seals.values().find(|s| s.run == *run).cloned());
        Ok(RunRows {
            rows,
            head: state.head,
            sealed: state.sealed,
            seal,
            outcome: state.outcome,
            unknown_outcome: None,
        })
    }

    fn runs(&self, tenant: &TenantId, outcome: Option<Outcome>) -> Result<Vec<RunId>, JournalError> {
        let tenants = self.lock()?;
        Ok(tenants
            .get(tenant)
            .map(|t| {
                t.runs
                    .iter()
                    .filter(|(_, state)| outcome.is_none() || state.outcome == outcome)
                    .map(|(run, _)| run.clone())
                    .collect()
            })
            .unwrap_or_default())
    }

    fn admissions(
        &self,
        tenant: &TenantId,
        before: Option<&AdmittedRun>,
        outcome: Option<Outcome>,
        limit: usize,
    ) -> Result<Vec<AdmittedRun>, JournalError> {
        let tenants = self.lock()?;
        let Some(state) = tenants.get(tenant) else {
            return Ok(Vec::new());
        };
        let rows = state
            .admissions
            .iter()
            .filter(|row| outcome.is_none() || state.runs.get(&row.run).and_then(|run| run.outcome) == outcome);
        Ok(crate::store::page_of_admissions(rows.cloned(), before, limit))
    }

    fn run_by_idempotency_key(&self, tenant: &TenantId, key: &str) -> Result<Option<RunId>, JournalError> {
        Ok(self.lock()?.get(tenant).and_then(|t| t.idempotency.get(key).cloned()))
    }

    fn tenants(&self) -> Result<Vec<TenantId>, JournalError> {
        Ok(self.lock()?.keys().cloned().collect())
    }

    fn seals(&self, tenant: &TenantId) -> Result<Vec<SealEntry>, JournalError> {
        Ok(self.lock()?.get(tenant).map(|t| t.seals.values().cloned().collect()).unwrap_or_default())
    }

    fn seal_of(&self, tenant: &TenantId, run: &RunId) -> Result<Option<SealEntry>, JournalError> {
        Ok(self.lock()?.get(tenant).and_then(|t| t.seals.values().find(|s| s.run == *run).cloned()))
    }

    fn log_counters(&self, tenant: &TenantId) -> Result<LogCounters, JournalError> {
        Ok(self.lock()?.get(tenant).map_or(LogCounters { next_position: 0, seal_count: 0 }, |t| LogCounters {
            next_position: t.next_position,
            seal_count: t.seals.len() as u64,
        }))
    }

    fn read_log_nodes(&self, tenant: &TenantId, ids: &[NodeId]) -> Result<Vec<NodeHash>, JournalError> {
        let tenants = self.lock()?;
        let nodes = tenants.get(tenant).map(|t| &t.nodes);
        ids.iter().map(|id| nodes.and_then(|n| n.get(id)).copied().ok_or_else(|| missing_node(tenant, id))).collect()
    }

    fn signed_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        Ok(self.lock()?.get(tenant).map(|t| t.signed.clone()).unwrap_or_default())
    }

    fn record_signed_checkpoint(
        &self,
        tenant: &TenantId,
        previous: Option<Tree>,
        signed: SignedTree,
    ) -> Result<(), JournalError> {
        let mut tenants = self.lock()?;
        let state = tenants.entry(tenant.clone()).or_default();
        let last = state.signed.last().map(|s| s.tree);
        crate::store::check_last_signed(tenant, last, previous)?;
        state.signed.push(signed);
        Ok(())
    }

    fn cosigned_checkpoints(&self, tenant: &TenantId) -> Result<Vec<SignedTree>, JournalError> {
        Ok(self.lock()?.get(tenant).map(|t| t.cosigned.clone()).unwrap_or_default())
    }

    fn record_cosigned_checkpoint(&self, tenant: &TenantId, cosigned: SignedTree) -> Result<(), JournalError> {
        self.lock()?.entry(tenant.clone()).or_default().cosigned.push(cosigned);
        Ok(())
    }

    fn append_heads(&self, tenant: &TenantId, origin: &witness::Origin) -> Result<Vec<u64>, JournalError> {
        let mut tenants = self.lock()?;
        append_heads(&mut MemoryTxn(&mut tenants), tenant, origin).map_err(AppendFailure::into_error)
    }

    fn heads_entries(&self, tenant: &TenantId, position: u64) -> Result<Vec<HeadEntry>, JournalError> {
        Ok(self.lock()?.get(tenant).and_then(|t| t.heads.get(&position).cloned()).unwrap_or_default())
    }

    fn heads_entries_in(
        &self,
        tenant: &TenantId,
        positions: std::ops::Range<u64>,
    ) -> Result<crate::store::HeadsByPosition, JournalError> {
        Ok(self.lock()?.get(tenant).map(|t| crate::store::entries_in(&t.heads, positions)).unwrap_or_default())
    }

    fn snapshot(&self, tenant: &TenantId) -> Result<TenantSnapshot, JournalError> {
        let tenants = self.lock()?;
        let mut snapshot = TenantSnapshot::empty(tenant);
        let Some(state) = tenants.get(tenant) else {
            return Ok(snapshot);
        };
        for (id, run) in &state.runs {
            let head =
                run.head.map(|head| RunHead { head, sealed: run.sealed, outcome: run.outcome, unknown_outcome: None });
            snapshot.runs.insert(id.clone(), SnapshotRun { rows: run.rows.clone(), head });
            if let Some(outcome) = run.outcome {
                snapshot.outcome_index.insert((outcome, id.clone()));
            }
        }
        snapshot.idempotency = state.idempotency.clone();
        snapshot.admissions = state.admissions.clone();
        snapshot.seals = state.seals.clone();
        snapshot.index_seals_by_run();
        snapshot.next_position = state.next_position;
        snapshot.nodes = state.nodes.clone();
        snapshot.heads_entries = state.heads.clone();
        snapshot.index_heads_by_run();
        snapshot.moved = state.moved.clone();
        snapshot.signed = state.signed.clone();
        snapshot.cosigned = state.cosigned.clone();
        Ok(snapshot)
    }
}
