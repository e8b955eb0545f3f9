//! An in-memory [`Store`]: the reference the conformance suite is checked
//! against. Not a product backend: nothing survives the process.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use tlog::{NodeHash, NodeId, Tree};

use crate::chain::{ExpectedHead, StoredRecord};
use crate::error::JournalError;
use crate::ids::{RunId, TenantId};
use crate::record::Outcome;
use crate::store::{
    AppendRequest, LogCounters, RunRows, SealEntry, SignedTree, Store, check_append, idempotency_key_of,
    nodes_for_new_leaf,
};

#[derive(Default)]
struct RunState {
    rows: Vec<StoredRecord>,
    head: Option<ExpectedHead>,
    sealed: bool,
    outcome: Option<Outcome>,
}

#[derive(Default)]
struct TenantState {
    runs: BTreeMap<RunId, RunState>,
    idempotency: BTreeMap<String, RunId>,
    seals: BTreeMap<u64, SealEntry>,
    next_position: u64,
    nodes: BTreeMap<NodeId, NodeHash>,
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

    #[cfg(feature = "testkit")]
    fn with_run(&self, tenant: &TenantId, run: &RunId, change: impl FnOnce(&mut RunState)) {
        if let Ok(mut tenants) = self.lock()
            && let Some(state) = tenants.get_mut(tenant).and_then(|t| t.runs.get_mut(run))
        {
            change(state);
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, BTreeMap<TenantId, TenantState>>, JournalError> {
        self.tenants
            .lock()
            .map_err(|_| JournalError::Io(crate::error::StorageError::message("memory store lock poisoned")))
    }
}

impl Store for MemoryStore {
    fn append(&self, request: AppendRequest) -> Result<Option<u64>, JournalError> {
        let mut tenants = self.lock()?;
        let tenant = tenants.entry(request.tenant.clone()).or_default();
        let (head, sealed) = tenant.runs.get(&request.run).map_or((None, false), |state| (state.head, state.sealed));
        check_append(&request, head, sealed)?;
        let mut position = None;
        let mut new_nodes = Vec::new();
        if let Some(seal) = request.conclusion.as_ref().and_then(|c| c.seal.as_ref()) {
            let next = tenant.next_position;
            let nodes = &tenant.nodes;
            let read = |ids: &[NodeId]| -> Result<Vec<NodeHash>, JournalError> {
                ids.iter()
                    .map(|id| {
                        nodes.get(id).copied().ok_or_else(|| JournalError::StoreDamage {
                            tenant: request.tenant.clone(),
                            detail: format!("missing log node {id:?}"),
                        })
                    })
                    .collect()
            };
            new_nodes = nodes_for_new_leaf(&request.tenant, &read, next, seal.leaf_hash())?;
            position = Some(next);
        }
        // Everything below is one step: no error can happen after this point.
        if let Some(key) = idempotency_key_of(&request.row) {
            tenant.idempotency.insert(key, request.run.clone());
        }
        let state = tenant.runs.entry(request.run.clone()).or_default();
        state.head = Some(ExpectedHead { seq: request.row.seq, hash: request.row.hash });
        state.rows.push(request.row);
        if let Some(conclusion) = &request.conclusion {
            state.outcome = Some(conclusion.outcome);
            if let (Some(seal), Some(position)) = (&conclusion.seal, position) {
                state.sealed = true;
                tenant
                    .seals
                    .insert(position, SealEntry { position, run: request.run.clone(), leaf_bytes: seal.to_bytes() });
                tenant.next_position = position + 1;
                tenant.nodes.extend(new_nodes);
            }
        }
        Ok(position)
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
        ids.iter()
            .map(|id| {
                nodes.and_then(|n| n.get(id)).copied().ok_or_else(|| JournalError::StoreDamage {
                    tenant: tenant.clone(),
                    detail: format!("missing log node {id:?}"),
                })
            })
            .collect()
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
}

#[cfg(feature = "testkit")]
impl crate::testkit::TamperAccess for MemoryStore {
    fn overwrite_record_bytes(&self, tenant: &TenantId, run: &RunId, seq: u64, bytes: Vec<u8>) {
        if let Ok(mut tenants) = self.lock()
            && let Some(row) = tenants
                .get_mut(tenant)
                .and_then(|t| t.runs.get_mut(run))
                .and_then(|r| r.rows.iter_mut().find(|row| row.seq == seq))
        {
            row.bytes = bytes;
        }
    }

    fn overwrite_row(&self, tenant: &TenantId, run: &RunId, row: StoredRecord) {
        self.with_run(tenant, run, |state| {
            if let Some(stored) = state.rows.iter_mut().find(|stored| stored.seq == row.seq) {
                *stored = row;
            }
        });
    }

    fn set_outcome_index(&self, tenant: &TenantId, run: &RunId, outcome: Option<Outcome>) {
        self.with_run(tenant, run, |state| state.outcome = outcome);
    }

    fn set_sealed_flag(&self, tenant: &TenantId, run: &RunId, sealed: bool) {
        self.with_run(tenant, run, |state| state.sealed = sealed);
    }

    fn set_runs_head(&self, tenant: &TenantId, run: &RunId, head: ExpectedHead) {
        self.with_run(tenant, run, |state| state.head = Some(head));
    }

    fn overwrite_seal_leaf(&self, tenant: &TenantId, run: &RunId, leaf: Vec<u8>) {
        if let Ok(mut tenants) = self.lock()
            && let Some(seal) = tenants.get_mut(tenant).and_then(|t| t.seals.values_mut().find(|s| s.run == *run))
        {
            seal.leaf_bytes = leaf;
        }
    }

    fn set_idempotency(&self, tenant: &TenantId, key: &str, run: &RunId) {
        if let Ok(mut tenants) = self.lock()
            && let Some(t) = tenants.get_mut(tenant)
        {
            t.idempotency.insert(key.to_owned(), run.clone());
        }
    }

    fn rewind_log(&self, tenant: &TenantId, next_position: u64) {
        if let Ok(mut tenants) = self.lock()
            && let Some(t) = tenants.get_mut(tenant)
        {
            t.next_position = next_position;
            t.nodes.retain(|id, _| crate::testkit::node_ends_before(*id, next_position));
        }
    }

    fn overwrite_log_node(&self, tenant: &TenantId, id: NodeId, hash: NodeHash) {
        if let Ok(mut tenants) = self.lock()
            && let Some(t) = tenants.get_mut(tenant)
        {
            t.nodes.insert(id, hash);
        }
    }

    fn rewrite_log(&self, tenant: &TenantId, seals: &[(RunId, Vec<u8>)]) {
        if let Ok(mut tenants) = self.lock()
            && let Some(t) = tenants.get_mut(tenant)
        {
            t.seals = seals
                .iter()
                .enumerate()
                .map(|(position, (run, leaf))| {
                    let position = position as u64;
                    (position, SealEntry { position, run: run.clone(), leaf_bytes: leaf.clone() })
                })
                .collect();
            t.next_position = seals.len() as u64;
            let leaves: Vec<Vec<u8>> = seals.iter().map(|(_, leaf)| leaf.clone()).collect();
            t.nodes = crate::testkit::dense_log_nodes(&leaves).into_iter().collect();
        }
    }

    fn delete_record(&self, tenant: &TenantId, run: &RunId, seq: u64) {
        if let Ok(mut tenants) = self.lock()
            && let Some(state) = tenants.get_mut(tenant).and_then(|t| t.runs.get_mut(run))
        {
            state.rows.retain(|row| row.seq != seq);
        }
    }

    fn delete_run(&self, tenant: &TenantId, run: &RunId) {
        if let Ok(mut tenants) = self.lock()
            && let Some(t) = tenants.get_mut(tenant)
        {
            t.runs.remove(run);
            t.seals.retain(|_, seal| seal.run != *run);
            t.idempotency.retain(|_, r| r != run);
        }
    }
}
