//! Tamper access to the in-memory store, for the conformance suite's
//! attacks: the store itself knows nothing of it.

use tlog::{NodeHash, NodeId};

use super::TamperAccess;
use crate::chain::{ExpectedHead, StoredRecord};
use crate::ids::{RunId, TenantId};
use crate::memory::{MemoryStore, RunState};
use crate::record::Outcome;
use crate::store::SealEntry;

impl MemoryStore {
    fn with_run(&self, tenant: &TenantId, run: &RunId, change: impl FnOnce(&mut RunState)) {
        if let Ok(mut tenants) = self.lock()
            && let Some(state) = tenants.get_mut(tenant).and_then(|t| t.runs.get_mut(run))
        {
            change(state);
        }
    }
}

impl TamperAccess for MemoryStore {
    fn set_admission(&self, tenant: &TenantId, admission: &crate::store::AdmittedRun, present: bool) {
        if let Ok(mut tenants) = self.lock() {
            let rows = &mut tenants.entry(tenant.clone()).or_default().admissions;
            if present {
                rows.insert(admission.clone());
            } else {
                rows.remove(admission);
            }
        }
    }

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
            t.nodes.retain(|id, _| super::node_ends_before(*id, next_position));
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
            t.nodes = super::dense_log_nodes(&leaves).into_iter().collect();
            // A careful hider leaves no heads entries where the new log holds no heads leaf.
            t.heads.retain(|position, _| {
                usize::try_from(*position)
                    .ok()
                    .and_then(|position| leaves.get(position))
                    .is_some_and(|leaf| crate::heads::HeadsLeaf::is_tagged(leaf))
            });
            // And marks every open run moved again: the runs whose entries
            // went with a heads leaf would be left unmarked (a finding).
            let open: Vec<RunId> = t.runs.iter().filter(|(_, run)| !run.sealed).map(|(id, _)| id.clone()).collect();
            t.moved.extend(open);
        }
    }

    fn delete_record(&self, tenant: &TenantId, run: &RunId, seq: u64) {
        if let Ok(mut tenants) = self.lock()
            && let Some(state) = tenants.get_mut(tenant).and_then(|t| t.runs.get_mut(run))
        {
            state.rows.retain(|row| row.seq != seq);
        }
    }

    fn delete_runs_row(&self, tenant: &TenantId, run: &RunId) {
        self.with_run(tenant, run, |state| state.head = None);
    }

    fn delete_heads_entry(&self, tenant: &TenantId, position: u64, run: &RunId) {
        if let Ok(mut tenants) = self.lock()
            && let Some(entries) = tenants.get_mut(tenant).and_then(|t| t.heads.get_mut(&position))
        {
            entries.retain(|entry| entry.run != *run);
        }
    }

    fn hide_newest_heads_of(&self, tenant: &TenantId, run: &RunId) {
        if let Ok(mut tenants) = self.lock()
            && let Some(t) = tenants.get_mut(tenant)
        {
            for entries in t.heads.values_mut() {
                entries.retain(|entry| entry.run != *run);
            }
        }
    }

    fn set_moved(&self, tenant: &TenantId, run: &RunId, moved: bool) {
        if let Ok(mut tenants) = self.lock()
            && let Some(t) = tenants.get_mut(tenant)
        {
            if moved {
                t.moved.insert(run.clone());
            } else {
                t.moved.remove(run);
            }
        }
    }

    fn hide_seal_of(&self, tenant: &TenantId, run: &RunId) {
        if let Ok(mut tenants) = self.lock()
            && let Some(t) = tenants.get_mut(tenant)
        {
            for seal in t.seals.values_mut().filter(|seal| seal.run == *run) {
                seal.run = RunId::heads_leaf();
            }
        }
    }

    fn delete_run(&self, tenant: &TenantId, run: &RunId) {
        if let Ok(mut tenants) = self.lock()
            && let Some(t) = tenants.get_mut(tenant)
        {
            t.runs.remove(run);
            t.seals.retain(|_, seal| seal.run != *run);
            t.idempotency.retain(|_, r| r != run);
            t.admissions.retain(|a| a.run != *run);
        }
    }
}
