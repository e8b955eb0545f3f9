//! An in-memory [`Store`]: the reference the conformance suite is checked
//! against. Not a product backend: nothing survives the process. Its append
//! is the one algorithm of [`crate::append`], over a map.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use tlog::{NodeHash, NodeId, Tree};

use crate::append::{AppendFailure, AppendTxn, RunHead, append_one};
use crate::chain::{ExpectedHead, StoredRecord};
use crate::error::JournalError;
use crate::ids::{RunId, TenantId};
use crate::record::Outcome;
use crate::snapshot::{SnapshotRun, TenantSnapshot};
use crate::store::{AppendRequest, LogCounters, RunRows, SealEntry, SignedTree, Store};

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
    pub(crate) seals: BTreeMap<u64, SealEntry>,
    pub(crate) next_position: u64,
    pub(crate) nodes: BTreeMap<NodeId, NodeHash>,
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
        Ok(state.and_then(|s| s.head.map(|head| RunHead { head, sealed: s.sealed, outcome: s.outcome })))
    }

    fn next_position(&mut self, request: &AppendRequest) -> Result<u64, AppendFailure> {
        Ok(self.0.get(&request.tenant).map_or(0, |t| t.next_position))
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

    fn put_outcome(&mut self, request: &AppendRequest, _: Option<Outcome>, new: Outcome) -> Result<(), AppendFailure> {
        self.run(request).outcome = Some(new);
        Ok(())
    }

    fn put_seal(&mut self, request: &AppendRequest, position: u64, leaf: &[u8]) -> Result<(), AppendFailure> {
        let entry = SealEntry { position, run: request.run.clone(), leaf_bytes: leaf.to_vec() };
        self.tenant(&request.tenant).seals.insert(position, entry);
        Ok(())
    }

    fn put_log_node(&mut self, request: &AppendRequest, id: NodeId, hash: &NodeHash) -> Result<(), AppendFailure> {
        self.tenant(&request.tenant).nodes.insert(id, *hash);
        Ok(())
    }

    fn put_next_position(&mut self, request: &AppendRequest, next: u64) -> Result<(), AppendFailure> {
        self.tenant(&request.tenant).next_position = next;
        Ok(())
    }

    fn put_run_head(&mut self, request: &AppendRequest, row: RunHead) -> Result<(), AppendFailure> {
        let state = self.run(request);
        (state.head, state.sealed, state.outcome) = (Some(row.head), row.sealed, row.outcome);
        Ok(())
    }
}

impl Store for MemoryStore {
    fn append(&self, request: AppendRequest) -> Result<Option<u64>, JournalError> {
        let mut tenants = self.lock()?;
        append_one(&mut MemoryTxn(&mut tenants), &request).map_err(AppendFailure::into_error)
    }

    fn read_run(&self, tenant: &TenantId, run: &RunId) -> Result<RunRows, JournalError> {
        let tenants = self.lock()?;
        let not_found = || JournalError::NotFound { tenant: tenant.clone(), run: run.clone() };
        let state = tenants.get(tenant).and_then(|t| t.runs.get(run)).ok_or_else(not_found)?;
        let seal = tenants.get(tenant).and_then(|t| t.seals.values().find(|s| s.run == *run).cloned());
        Ok(RunRows { rows: state.rows.clone(), head: state.head, sealed: state.sealed, seal, outcome: state.outcome })
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

    fn snapshot(&self, tenant: &TenantId) -> Result<TenantSnapshot, JournalError> {
        let tenants = self.lock()?;
        let mut snapshot = TenantSnapshot::empty(tenant);
        let Some(state) = tenants.get(tenant) else {
            return Ok(snapshot);
        };
        for (id, run) in &state.runs {
            let head = run.head.map(|head| RunHead { head, sealed: run.sealed, outcome: run.outcome });
            snapshot.runs.insert(id.clone(), SnapshotRun { rows: run.rows.clone(), head });
            if let Some(outcome) = run.outcome {
                snapshot.outcome_index.insert((outcome, id.clone()));
            }
        }
        snapshot.idempotency = state.idempotency.clone();
        snapshot.seals = state.seals.clone();
        snapshot.index_seals_by_run();
        snapshot.next_position = state.next_position;
        snapshot.nodes = state.nodes.clone();
        snapshot.signed = state.signed.clone();
        snapshot.cosigned = state.cosigned.clone();
        Ok(snapshot)
    }
}
