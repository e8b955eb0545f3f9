//! Tamper access to a redb store, for the conformance suite's attacks and
//! the audit's tests: writes straight into the file, behind the store's back.

use journal_core::testkit::{TamperAccess, dense_log_nodes, node_ends_before};
use journal_core::{ExpectedHead, Outcome, RunId, StoredRecord, TenantId};
use redb::{Database, ReadableTable as _, WriteTransaction};
use tlog::{NodeHash, NodeId};

use crate::{
    ADMISSIONS, Db, HEADS, HEADS_BY_RUN, IDEMPOTENCY, LOG_COUNTER, MOVED, NODES, OUTCOMES, RUNS, RedbStore,
    SEAL_BY_RUN, record_value, seals_def, seals_table,
};

impl RedbStore {
    fn writable(&self) -> Result<&Database, Box<dyn std::error::Error>> {
        match &self.db {
            Db::Writable(db) => Ok(db),
            Db::ReadOnly(_) => Err("read-only store".into()),
        }
    }
}

impl RedbStore {
    /// Runs one write transaction straight on the file, behind the store's
    /// back; a failure is logged (tamper helpers have no caller to tell).
    fn tamper(&self, what: &str, write: impl FnOnce(&WriteTransaction) -> Result<(), Box<dyn std::error::Error>>) {
        let result = (|| -> Result<(), Box<dyn std::error::Error>> {
            let txn = self.writable()?.begin_write()?;
            write(&txn)?;
            txn.commit()?;
            Ok(())
        })();
        if let Err(err) = result {
            tracing::error!("tamper {what} failed: {err}");
        }
    }

    fn update_run(
        &self,
        tenant: &TenantId,
        run: &RunId,
        change: impl FnOnce(&mut (u64, Vec<u8>, bool, Option<String>)),
    ) {
        self.tamper("runs row", |txn| {
            let mut runs = txn.open_table(RUNS)?;
            let key = (tenant.as_str(), run.as_str());
            let current = runs.get(key)?.map(|v| {
                let (seq, hash, sealed, outcome) = v.value();
                (seq, hash.to_vec(), sealed, outcome.map(str::to_owned))
            });
            if let Some(mut row) = current {
                change(&mut row);
                runs.insert(key, (row.0, row.1.as_slice(), row.2, row.3.as_deref()))?;
            }
            Ok(())
        });
    }
}

impl RedbStore {
    /// Names `outcome` (any text) in `run`'s runs row and its outcome index
    /// row, as a build that knows an outcome this one does not writes them
    /// when it concludes the run so, or as someone with the file writes them.
    pub fn name_outcome(&self, tenant: &TenantId, run: &RunId, outcome: &str) {
        self.set_outcome_index(tenant, run, None);
        self.tamper("outcome index", |txn| {
            txn.open_table(OUTCOMES)?.insert((tenant.as_str(), outcome, run.as_str()), ())?;
            Ok(())
        });
        self.update_run(tenant, run, |row| row.3 = Some(outcome.to_owned()));
    }
}

impl TamperAccess for RedbStore {
    fn overwrite_record_bytes(&self, tenant: &TenantId, run: &RunId, seq: u64, bytes: Vec<u8>) {
        let write = || -> Result<(), Box<dyn std::error::Error>> {
            let txn = self.writable()?.begin_write()?;
            {
                let mut records = txn.open_table(self.layout.records())?;
                let key = (tenant.as_str(), run.as_str(), seq);
                let old = records.get(key)?.map(|v| {
                    let (kind, ek, prev, hash, _, kid, sig) = v.value();
                    (
                        kind.to_owned(),
                        ek.map(str::to_owned),
                        prev.to_vec(),
                        hash.to_vec(),
                        kid.map(str::to_owned),
                        sig.map(<[u8]>::to_vec),
                    )
                });
                if let Some((kind, ek, prev, hash, kid, sig)) = old {
                    let stored = self.layout.stored(&bytes);
                    records.insert(
                        key,
                        (
                            kind.as_str(),
                            ek.as_deref(),
                            prev.as_slice(),
                            hash.as_slice(),
                            stored.as_ref(),
                            kid.as_deref(),
                            sig.as_deref(),
                        ),
                    )?;
                }
            }
            txn.commit()?;
            Ok(())
        };
        if let Err(err) = write() {
            tracing::error!("tamper write failed: {err}");
        }
    }

    fn overwrite_row(&self, tenant: &TenantId, run: &RunId, row: StoredRecord) {
        self.tamper("overwrite row", |txn| {
            let stored = self.layout.stored(&row.bytes);
            txn.open_table(self.layout.records())?
                .insert((tenant.as_str(), run.as_str(), row.seq), record_value(&row, &stored))?;
            Ok(())
        });
    }

    fn set_outcome_index(&self, tenant: &TenantId, run: &RunId, outcome: Option<Outcome>) {
        self.tamper("outcome index", |txn| {
            let mut index = txn.open_table(OUTCOMES)?;
            for old in Outcome::ALL {
                index.remove((tenant.as_str(), old.as_str(), run.as_str()))?;
            }
            if let Some(outcome) = outcome {
                index.insert((tenant.as_str(), outcome.as_str(), run.as_str()), ())?;
            }
            Ok(())
        });
    }

    fn set_sealed_flag(&self, tenant: &TenantId, run: &RunId, sealed: bool) {
        self.update_run(tenant, run, |row| row.2 = sealed);
    }

    fn set_runs_head(&self, tenant: &TenantId, run: &RunId, head: ExpectedHead) {
        self.update_run(tenant, run, |row| {
            row.0 = head.seq;
            row.1 = head.hash.as_bytes().to_vec();
        });
    }

    fn overwrite_seal_leaf(&self, tenant: &TenantId, run: &RunId, leaf: Vec<u8>) {
        self.tamper("seal leaf", |txn| {
            let position = txn.open_table(SEAL_BY_RUN)?.get((tenant.as_str(), run.as_str()))?.map(|v| v.value());
            if let Some(position) = position {
                let name = seals_table(tenant.as_str());
                txn.open_table(seals_def(&name))?.insert(position, (run.as_str(), leaf.as_slice()))?;
            }
            Ok(())
        });
    }

    fn set_admission(&self, tenant: &TenantId, admission: &journal_core::AdmittedRun, present: bool) {
        self.tamper("admission order", |txn| {
            let key = (tenant.as_str(), admission.at.unix_millis(), admission.run.as_str());
            let mut order = txn.open_table(ADMISSIONS)?;
            if present {
                order.insert(key, ())?;
            } else {
                order.remove(key)?;
            }
            Ok(())
        });
    }

    fn set_idempotency(&self, tenant: &TenantId, key: &str, run: &RunId) {
        self.tamper("idempotency index", |txn| {
            txn.open_table(IDEMPOTENCY)?.insert((tenant.as_str(), key), run.as_str())?;
            Ok(())
        });
    }

    fn rewind_log(&self, tenant: &TenantId, next_position: u64) {
        self.tamper("rewind log", |txn| {
            let t = tenant.as_str();
            txn.open_table(LOG_COUNTER)?.insert(t, next_position)?;
            let mut nodes = txn.open_table(NODES)?;
            let doomed: Vec<(u8, u64)> = nodes
                .range((t, 0, 0)..=(t, u8::MAX, u64::MAX))?
                .filter_map(|entry| entry.ok().map(|(key, _)| (key.value().1, key.value().2)))
                .filter(|(level, index)| !node_ends_before(NodeId::new(*level, *index), next_position))
                .collect();
            for (level, index) in doomed {
                nodes.remove((t, level, index))?;
            }
            Ok(())
        });
    }

    fn overwrite_log_node(&self, tenant: &TenantId, id: NodeId, hash: NodeHash) {
        self.tamper("log node", |txn| {
            txn.open_table(NODES)?.insert((tenant.as_str(), id.level, id.index), hash.as_bytes().as_slice())?;
            Ok(())
        });
    }

    fn rewrite_log(&self, tenant: &TenantId, seals: &[(RunId, Vec<u8>)]) {
        self.tamper("rewrite log", |txn| {
            let t = tenant.as_str();
            let name = seals_table(t);
            let mut table = txn.open_table(seals_def(&name))?;
            let old: Vec<u64> = table.iter()?.filter_map(|entry| entry.ok().map(|(key, _)| key.value())).collect();
            for position in old {
                table.remove(position)?;
            }
            let mut by_run = txn.open_table(SEAL_BY_RUN)?;
            let old: Vec<String> = by_run
                .range((t, "")..)?
                .filter_map(|entry| entry.ok())
                .map(|(key, _)| {
                    let (kt, run) = key.value();
                    (kt == t, run.to_owned())
                })
                .take_while(|(ours, _)| *ours)
                .map(|(_, run)| run)
                .collect();
            for run in old {
                by_run.remove((t, run.as_str()))?;
            }
            let mut nodes = txn.open_table(NODES)?;
            let old: Vec<(u8, u64)> = nodes
                .range((t, 0, 0)..=(t, u8::MAX, u64::MAX))?
                .filter_map(|entry| entry.ok().map(|(key, _)| (key.value().1, key.value().2)))
                .collect();
            for (level, index) in old {
                nodes.remove((t, level, index))?;
            }
            for (position, (run, leaf)) in seals.iter().enumerate() {
                table.insert(position as u64, (run.as_str(), leaf.as_slice()))?;
                if !run.is_heads_leaf() {
                    by_run.insert((t, run.as_str()), position as u64)?;
                }
            }
            // A careful hider leaves no heads entries where the new log holds
            // no heads leaf, and points the newest-heads index at what remains.
            let heads_at: std::collections::BTreeSet<u64> = seals
                .iter()
                .enumerate()
                .filter(|(_, (_, leaf))| journal_core::heads::HeadsLeaf::is_tagged(leaf))
                .map(|(position, _)| position as u64)
                .collect();
            let mut entries = txn.open_table(HEADS)?;
            let stored: Vec<(u64, String)> = entries
                .range((t, 0, "")..=(t, u64::MAX, "\u{10FFFF}"))?
                .filter_map(|entry| entry.ok().map(|(key, _)| (key.value().1, key.value().2.to_owned())))
                .collect();
            let mut newest: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
            for (position, run) in stored {
                if heads_at.contains(&position) {
                    newest.insert(run, position);
                } else {
                    entries.remove((t, position, run.as_str()))?;
                }
            }
            let mut heads_by_run = txn.open_table(HEADS_BY_RUN)?;
            let indexed: Vec<String> = heads_by_run
                .range((t, "")..)?
                .filter_map(|entry| entry.ok())
                .map(|(key, _)| (key.value().0 == t, key.value().1.to_owned()))
                .take_while(|(ours, _)| *ours)
                .map(|(_, run)| run)
                .collect();
            for run in indexed {
                heads_by_run.remove((t, run.as_str()))?;
            }
            for (run, position) in &newest {
                heads_by_run.insert((t, run.as_str()), *position)?;
            }
            // And marks every open run moved again: the runs whose entries
            // went with a heads leaf would be left unmarked (a finding).
            let runs = txn.open_table(RUNS)?;
            let open: Vec<String> = runs
                .range((t, "")..)?
                .filter_map(|entry| entry.ok())
                .map(|(key, value)| (key.value().0 == t, key.value().1.to_owned(), value.value().2))
                .take_while(|(ours, _, _)| *ours)
                .filter(|(_, _, sealed)| !sealed)
                .map(|(_, run, _)| run)
                .collect();
            let mut moved = txn.open_table(MOVED)?;
            for run in open {
                moved.insert((t, run.as_str()), ())?;
            }
            let leaves: Vec<Vec<u8>> = seals.iter().map(|(_, leaf)| leaf.clone()).collect();
            for (id, hash) in dense_log_nodes(&leaves) {
                nodes.insert((t, id.level, id.index), hash.as_bytes().as_slice())?;
            }
            txn.open_table(LOG_COUNTER)?.insert(t, seals.len() as u64)?;
            Ok(())
        });
    }

    fn delete_record(&self, tenant: &TenantId, run: &RunId, seq: u64) {
        let write = || -> Result<(), Box<dyn std::error::Error>> {
            let txn = self.writable()?.begin_write()?;
            txn.open_table(self.layout.records())?.remove((tenant.as_str(), run.as_str(), seq))?;
            txn.commit()?;
            Ok(())
        };
        if let Err(err) = write() {
            tracing::error!("tamper delete failed: {err}");
        }
    }

    fn delete_runs_row(&self, tenant: &TenantId, run: &RunId) {
        self.tamper("runs row", |txn| {
            txn.open_table(RUNS)?.remove((tenant.as_str(), run.as_str()))?;
            Ok(())
        });
    }

    fn delete_heads_entry(&self, tenant: &TenantId, position: u64, run: &RunId) {
        self.tamper("heads entry", |txn| {
            txn.open_table(HEADS)?.remove((tenant.as_str(), position, run.as_str()))?;
            Ok(())
        });
    }

    fn hide_newest_heads_of(&self, tenant: &TenantId, run: &RunId) {
        self.tamper("newest heads index", |txn| {
            txn.open_table(HEADS_BY_RUN)?.remove((tenant.as_str(), run.as_str()))?;
            Ok(())
        });
    }

    fn hide_seal_of(&self, tenant: &TenantId, run: &RunId) {
        self.tamper("seal index", |txn| {
            txn.open_table(SEAL_BY_RUN)?.remove((tenant.as_str(), run.as_str()))?;
            Ok(())
        });
    }

    fn set_moved(&self, tenant: &TenantId, run: &RunId, moved: bool) {
        self.tamper("moved mark", |txn| {
            let mut table = txn.open_table(MOVED)?;
            if moved {
                table.insert((tenant.as_str(), run.as_str()), ())?;
            } else {
                table.remove((tenant.as_str(), run.as_str()))?;
            }
            Ok(())
        });
    }

    fn delete_run(&self, tenant: &TenantId, run: &RunId) {
        let write = || -> Result<(), Box<dyn std::error::Error>> {
            let (t, r) = (tenant.as_str(), run.as_str());
            let txn = self.writable()?.begin_write()?;
            {
                let mut records = txn.open_table(self.layout.records())?;
                let seqs: Vec<u64> = records
                    .range((t, r, 0)..=(t, r, u64::MAX))?
                    .filter_map(|e| e.ok().map(|(k, _)| k.value().2))
                    .collect();
                for seq in seqs {
                    records.remove((t, r, seq))?;
                }
                let outcome = txn.open_table(RUNS)?.remove((t, r))?.and_then(|v| v.value().3.map(str::to_owned));
                if let Some(outcome) = outcome {
                    txn.open_table(OUTCOMES)?.remove((t, outcome.as_str(), r))?;
                }
                let mut order = txn.open_table(ADMISSIONS)?;
                let admitted: Vec<i64> = order
                    .range((t, i64::MIN, "")..=(t, i64::MAX, "\u{10FFFF}"))?
                    .filter_map(|e| e.ok())
                    .filter(|(key, _)| key.value().2 == r)
                    .map(|(key, _)| key.value().1)
                    .collect();
                for millis in admitted {
                    order.remove((t, millis, r))?;
                }
                let mut idempotency = txn.open_table(IDEMPOTENCY)?;
                let keys: Vec<String> = idempotency
                    .range((t, "")..)?
                    .filter_map(|e| e.ok())
                    .filter(|(key, value)| key.value().0 == t && value.value() == r)
                    .map(|(key, _)| key.value().1.to_owned())
                    .collect();
                for key in keys {
                    idempotency.remove((t, key.as_str()))?;
                }
                if let Some(position) = txn.open_table(SEAL_BY_RUN)?.remove((t, r))?.map(|v| v.value()) {
                    let name = seals_table(t);
                    txn.open_table(seals_def(&name))?.remove(position)?;
                }
            }
            txn.commit()?;
            Ok(())
        };
        if let Err(err) = write() {
            tracing::error!("tamper delete failed: {err}");
        }
    }
}
