//! The checks, in the order the design gives them: chains, signatures,
//! derived data per run (on every core); then the log rebuilt from its seals,
//! inclusion, and every anchor on its own and against the others.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Mutex, OnceLock, PoisonError};

use journal_core::TenantId;
use journal_core::heads::HeadsLeaf;
use journal_core::store::SealEntry;
use journal_core::{
    BuildSkew, ChainCheck, Ed25519Verifier, ExpectedHead, JournalError, Outcome, RunId, RunTooLarge, SealLeaf,
    SignatureCheck, SignedHash, SnapshotSink, Store, StoredRecord, TenantSnapshot, Upcasters, VerifiedRecord, Verifier,
    VerifyOptions, last_conclusion, verify_links, verify_run_owned_or_back,
};
use tlog::{ExtendsError, HashReader, MemoryHashStore, NodeId, Tree, VerifyError};

use crate::AuditError;
use crate::inputs::{AnchorRead, AuditInputs};
use crate::report::{AnchorReport, AnchorStatus, AuditReport, Finding, FindingCode, NotChecked};

/// What one run's chain says, once verified: the facts the log checks need.
struct RunFacts {
    last: Option<Outcome>,
    /// The leaf its chain gives, when its last conclusion seals.
    leaf: Option<SealLeaf>,
    /// Each record's chain hash, by seq (what a fork's provenance names).
    hashes: Vec<journal_core::ChainHash>,
    /// Where it was forked from: the source run, the seq, that record's hash.
    forked: Option<(String, u64, String)>,
    /// The idempotency key its admission carries.
    idempotency_key: Option<String>,
    /// The instant of its admission (its first record, a `RunAdmitted`).
    admitted_at: Option<journal_core::At>,
}

#[derive(Default)]
struct RunAudit {
    findings: Vec<Finding>,
    records: u64,
    signatures: u64,
    unsigned: u64,
    untrusted: u64,
    derived: u64,
    facts: Option<RunFacts>,
    /// A run this build cannot read (build skew) whose links verified: each
    /// record's chain hash, by seq. Still held to its seal and heads entries,
    /// which a newer writer never contradicts.
    skewed: Option<Vec<journal_core::ChainHash>>,
    /// A run whose chain failed (not as build skew alone): the hash column
    /// of each row it stores, by seq, which the seal and heads entries an
    /// anchor covers are held to ([`stored_hashes`]).
    broken: Option<StoredHashes>,
}

/// The chain hashes of runs this build cannot read, or whose records no
/// runs row lists, from their links alone.
type Skewed = BTreeMap<RunId, Vec<journal_core::ChainHash>>;

/// A run's stored rows' hash columns, by seq.
type StoredHashes = BTreeMap<u64, journal_core::ChainHash>;

/// The runs whose chain failed, with the rows they still store (R-COVER-2):
/// a record broken behind the store (a column edited, a record deleted or
/// rewritten) is a finding of its own, naming that record, and must not
/// hide a cut of the covered records after it. A covered record no longer
/// stored at all is a cut whatever the chain's state; one still stored
/// under its hash, its bytes changed, is the chain's finding.
type Broken = BTreeMap<RunId, StoredHashes>;

/// The hash column of each of `rows`, by seq.
fn stored_hashes(rows: &[StoredRecord]) -> StoredHashes {
    rows.iter().map(|row| (row.seq, row.hash)).collect()
}

/// Audits one tenant of `store` with what the auditor holds (R-AUD-1..5).
pub fn audit(store: &dyn Store, inputs: &AuditInputs) -> Result<AuditReport, AuditError> {
    audit_with_progress(store, inputs, &|_, _| {})
}

/// [`audit`], reporting `(runs done, runs in all)` as runs are verified.
pub fn audit_with_progress(
    store: &dyn Store,
    inputs: &AuditInputs,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<AuditReport, AuditError> {
    let mut verifier = Ed25519Verifier::new();
    for key in &inputs.record_keys {
        verifier
            .trust(&key.key_id, key.public_key)
            .map_err(|reason| AuditError::RecordKey { key_id: key.key_id.clone(), reason })?;
    }
    let verifier = (!inputs.record_keys.is_empty()).then_some(&verifier as &dyn Verifier);
    let upcasters = Upcasters::builtin().read_by(inputs.reader.clone());
    // Every anchor is read before the store (R-AUD-7): a witness cosigns
    // only what the plane signed, and the plane signs only what it
    // committed, so what a witness holds now the snapshot taken next holds
    // too. Asked after the snapshot (after every run was verified, minutes
    // on a large plane), a witness that cosigned meanwhile held a tree
    // larger than the snapshot's log: a shrunk log, against an honest plane.
    let anchor_reads: Vec<AnchorRead> =
        inputs.anchors.iter().map(|anchor| anchor.read(&inputs.origin, &inputs.log_keys)).collect();
    // One snapshot (issue 21): every check below reads the store as it was
    // at one instant, so a plane writing meanwhile is never seen half way.
    // Its runs are verified on every core while later ones are still read.
    let RunsAudited { snapshot, audits, without_row, too_large } =
        audit_runs(store, inputs, verifier, &upcasters, progress)?;
    let mut report = AuditReport::default();
    let (mut unsigned, mut untrusted) = (0, 0);
    let mut facts: BTreeMap<RunId, RunFacts> = BTreeMap::new();
    let mut skewed = Skewed::new();
    let mut broken = Broken::new();
    for (run, audit) in audits {
        report.findings.extend(audit.findings);
        report.checked.records += audit.records;
        report.checked.signatures += audit.signatures;
        report.checked.derived += audit.derived;
        unsigned += audit.unsigned;
        untrusted += audit.untrusted;
        if let Some(run_facts) = audit.facts {
            report.checked.runs += 1;
            facts.insert(run, run_facts);
        } else if let Some(hashes) = audit.skewed {
            skewed.insert(run, hashes);
        } else if let Some(prefix) = audit.broken {
            broken.insert(run, prefix);
        }
    }
    for (run, kept) in too_large {
        report.not_checked.push(NotChecked {
            what: format!("run {run}: {} records, {} bytes", kept.records, kept.bytes),
            why: format!(
                "more than the audit holds of one run ({} bytes): its chain, signatures and derived rows were not \
                 checked, its stored hashes only held to what the log and anchors commit to; audit again with a \
                 larger --max-run-bytes on a machine with the memory",
                inputs.max_run_bytes
            ),
        });
        broken.insert(run, kept.hashes.into_iter().collect());
    }
    let store: &dyn Store = &snapshot;
    check_rows_without_runs(&snapshot, without_row, (&mut skewed, &mut broken), &mut report)?;
    check_outcome_listing(&snapshot, &facts, &skewed, &mut report);
    check_idempotency_rows(&snapshot, &inputs.tenant, &facts, &mut report);
    check_admission_order(&snapshot, &facts, &mut report);
    check_fork_provenance(store, inputs, &facts, &skewed, &mut report);
    let LogChecked { rebuilt, heads_leaves, sealed, contradicted, logged_seals } =
        check_log(&snapshot, inputs, &facts, (&skewed, &broken), &mut report)?;
    check_seal_index(&snapshot, &sealed, &mut report);
    let anchored = check_anchors(inputs, anchor_reads, &rebuilt, &mut report);
    check_contradicted_seals(contradicted, &anchored, &mut report);
    let (covered, held_leaves) =
        check_heads(&snapshot, inputs, &facts, (&skewed, &broken), &heads_leaves, &anchored, &mut report);
    let newest_entries = newest_verified_entries(&snapshot, &held_leaves);
    check_heads_index(&snapshot, &newest_entries, &mut report);
    check_moved_marks(&snapshot, &logged_seals, &facts, &skewed, &newest_entries, &mut report);
    report.tenant = inputs.tenant.to_string();
    report.origin = inputs.origin.to_string();
    report.log_size = rebuilt.size();
    report.log_root = rebuilt.tree().root.to_string();
    say_what_was_not_checked(inputs, unsigned, untrusted, &mut report);
    say_which_runs_are_unbound(&facts, &mut report);
    if snapshot.is_empty() {
        // With an anchor that saw entries, the shrunken log is a finding
        // already; without one an empty store is never "clean".
        report.not_checked.push(NotChecked {
            what: format!("the store holds nothing for tenant {}", inputs.tenant),
            why: "an empty store (or the wrong tenant or database) is not a clean one: check the store and tenant \
                  named, and bring an anchor to tell a deleted history from none"
                .into(),
        });
    }
    say_what_no_anchor_covers(&sealed, &facts, &anchored, &covered, &mut report);
    Ok(report)
}

/// How many runs a worker takes at once: their signatures are verified in
/// batches across runs (a run alone holds too few to batch well), and a
/// large chunk wakes the reader seldom, so it interrupts the workers' curve
/// arithmetic less (on 2 cores, 48 runs: 0.58-0.65 of the Ed25519 floor;
/// 192: 0.70; 768: 0.60, its last chunks leaving a core idle).
const RUNS_PER_CHUNK: usize = 192;

/// The most record bytes a chunk gathers before it is sent, whatever its
/// runs: the runs per chunk are sized for ordinary records (a few hundred
/// bytes), and runs of large records (up to
/// [`journal_core::record::MAX_RECORD_BYTES`] each, and a stored frame may
/// decompress to 64 times its size) would otherwise make each chunk
/// gigabytes. The audit holds at most the chunks in the channel, one a
/// worker and the one being gathered: a few times this, plus its largest
/// run. Ordinary chunks (about 2 MB) never reach it.
const CHUNK_RECORD_BYTES: usize = 32 << 20;

/// Runs on their way from the snapshot's reader to the workers.
type Chunk = Vec<(RunId, Vec<StoredRecord>)>;

/// Checks 1 to 3 for every run, on every core (runs are independent),
/// while the snapshot is still being read: the reader hands runs to the
/// workers in chunks. Returns the snapshot's tables (with the records of
/// runs that have no runs row, which no chain check covers) and each
/// audited run's answer, in run order.
fn audit_runs(
    store: &dyn Store,
    inputs: &AuditInputs,
    verifier: Option<&dyn Verifier>,
    upcasters: &Upcasters,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<RunsAudited, AuditError> {
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let tables = OnceLock::new();
    // Bounded: a reader faster than the workers waits rather than holding
    // the tenant in memory.
    let (send, receive) = std::sync::mpsc::sync_channel::<Chunk>(workers);
    let receive = Mutex::new(receive);
    let done = AtomicU64::new(0);
    let total = AtomicU64::new(0);
    let (streamed, answers) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        // A worker never panics holding the lock (the audit
                        // of a chunk runs after it is released), so a
                        // poisoned lock still guards a sound receiver.
                        let next = receive.lock().unwrap_or_else(PoisonError::into_inner).recv();
                        let Ok(chunk) = next else { break };
                        let Some(tables) = tables.get() else {
                            mine.extend(chunk.into_iter().map(|(run, _)| (run, Err(AuditError::WorkerFailed))));
                            continue;
                        };
                        let runs: Vec<RunId> = chunk.iter().map(|(run, _)| run.clone()).collect();
                        let audited = std::panic::catch_unwind(AssertUnwindSafe(|| {
                            audit_chunk(tables, inputs, verifier, upcasters, chunk)
                        }));
                        let audited = match audited {
                            Ok(audited) => audited,
                            // A bug in one chunk answers for its runs as a failure, never as silence.
                            Err(_) => runs.iter().map(|_| Err(AuditError::WorkerFailed)).collect(),
                        };
                        let finished = audited.len() as u64;
                        mine.extend(runs.into_iter().zip(audited));
                        let (done, total) =
                            (done.fetch_add(finished, Ordering::Relaxed) + finished, total.load(Ordering::Relaxed));
                        // A worker that stopped would leave the reader waiting
                        // on a full channel: the caller's progress report
                        // panicking must not stop it.
                        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| progress(done, total)));
                    }
                    mine
                })
            })
            .collect();
        let mut dispatch = Dispatch {
            tables: &tables,
            total: &total,
            send,
            workers,
            chunk: Vec::new(),
            chunk_bytes: 0,
            dispatched: BTreeSet::new(),
            without_row: BTreeMap::new(),
            run_bytes_bound: inputs.max_run_bytes,
            too_large: BTreeMap::new(),
            unreadable: BTreeMap::new(),
        };
        let streamed = store.snapshot_streamed(&inputs.tenant, &mut dispatch).and_then(|()| dispatch.finish());
        let answers: Vec<Vec<(RunId, Result<RunAudit, AuditError>)>> =
            handles.into_iter().map(|handle| handle.join().unwrap_or_default()).collect();
        (streamed, answers)
    });
    let Streamed { sent: expected, without_row, too_large, unreadable } = streamed.map_err(AuditError::Store)?;
    let mut snapshot = tables.into_inner().ok_or(AuditError::WorkerFailed)?;
    // Listed without rows, so that the snapshot still says what it held.
    for run in without_row.keys() {
        snapshot.runs.entry(run.clone()).or_default();
    }
    let mut audits = BTreeMap::new();
    for (run, audit) in answers.into_iter().flatten() {
        let mut audit = audit?;
        say_why_rows_are_unreadable(&run, &mut audit, &unreadable);
        audits.insert(run, audit);
    }
    // A worker that stopped leaves its runs unanswered: refuse rather than skip them.
    if audits.len() != expected {
        return Err(AuditError::WorkerFailed);
    }
    Ok(RunsAudited { snapshot, audits: audits.into_iter().collect(), without_row, too_large })
}

/// What [`audit_runs`] read and checked.
struct RunsAudited {
    /// The snapshot's tables; its runs hold no rows.
    snapshot: TenantSnapshot,
    /// Each run a chain check read, in run order.
    audits: Vec<(RunId, RunAudit)>,
    /// Runs the runs table does not list.
    without_row: BTreeMap<RunId, Rowless>,
    /// Runs past the audit's bound, which no chain check read.
    too_large: BTreeMap<RunId, RunTooLarge>,
}

/// The audit's [`SnapshotSink`]: keeps the tables for the workers and
/// sends each run with a runs row to them, in chunks.
struct Dispatch<'a> {
    tables: &'a OnceLock<TenantSnapshot>,
    /// How many runs the runs table lists: the progress's whole.
    total: &'a AtomicU64,
    send: SyncSender<Chunk>,
    /// How many workers take chunks.
    workers: usize,
    chunk: Chunk,
    /// The record bytes `chunk` holds.
    chunk_bytes: usize,
    dispatched: BTreeSet<RunId>,
    /// Runs the runs table does not list: a finding of their own.
    without_row: BTreeMap<RunId, Rowless>,
    /// The most of one run's rows the audit holds ([`AuditInputs::max_run_bytes`]).
    run_bytes_bound: usize,
    /// Runs past it.
    too_large: BTreeMap<RunId, RunTooLarge>,
    /// Why each row the store could not read as a record is unreadable.
    unreadable: Unreadable,
}

/// What the snapshot's reader leaves once every run is sent to the workers.
struct Streamed {
    /// How many runs were sent.
    sent: usize,
    /// Runs the runs table does not list.
    without_row: BTreeMap<RunId, Rowless>,
    /// Runs past the audit's bound.
    too_large: BTreeMap<RunId, RunTooLarge>,
    unreadable: Unreadable,
}

/// The records of a run the runs table does not list, reduced as they
/// arrive to what the checks after the runs need of them (how many, and
/// what their links give), so that a store whose runs rows were deleted
/// costs the audit no more memory than one whose rows are there.
struct Rowless {
    records: u64,
    /// Each record's chain hash, by seq, when the links verify; else why
    /// not, and the hash column of each row stored. `None`: too large to
    /// check (the hash columns are kept with the runs past the bound).
    links: Option<Result<Vec<journal_core::ChainHash>, (JournalError, StoredHashes)>>,
}

impl Rowless {
    fn of(run: &RunId, rows: &[StoredRecord]) -> Self {
        let links = match verify_links(run, rows, None) {
            Ok(()) => Ok(rows.iter().map(|row| row.hash).collect()),
            Err(err) => Err((err, stored_hashes(rows))),
        };
        Self { records: rows.len() as u64, links: Some(links) }
    }
}

/// The first row of each run a snapshot could not read as a record, its seq
/// and why ([`SnapshotSink::unreadable_row`]): only the first, because the
/// chain check stops at the first break, and so this holds no more than a
/// finding a run whatever the store holds.
type Unreadable = BTreeMap<RunId, (u64, String)>;

/// A run whose chain breaks at a row the store could not read says what is
/// wrong with that row (a key reference to nothing, half a signature pair,
/// bytes that do not decode) instead of only that it does not hash: the row
/// came with no bytes, so the hash could never match, and an auditor told
/// so would look at the wrong column.
fn say_why_rows_are_unreadable(run: &RunId, audit: &mut RunAudit, unreadable: &Unreadable) {
    for finding in &mut audit.findings {
        let Some(seq) = finding.seq.filter(|_| finding.code == FindingCode::ChainBroken) else { continue };
        if let Some((_, why)) = unreadable.get(run).filter(|(first, _)| *first == seq) {
            finding.detail = format!("the row cannot be read as a record: {why}");
        }
    }
}

impl Dispatch<'_> {
    /// Runs per chunk: smaller ones for the last runs, so that every
    /// worker has work until the end instead of one finishing a large chunk
    /// while the others wait (measured: the last chunk of 192 runs kept a
    /// core idle for about 60 ms of a 1.7 s audit).
    fn chunk_size(&self) -> usize {
        let listed = usize::try_from(self.total.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
        let left = listed.saturating_sub(self.dispatched.len());
        if left < self.workers * RUNS_PER_CHUNK { RUNS_PER_CHUNK / 4 } else { RUNS_PER_CHUNK }
    }

    fn read_tables(&self) -> Result<&TenantSnapshot, JournalError> {
        self.tables.get().ok_or_else(|| stream_broken("records came before the tables"))
    }

    fn send(&mut self, run: RunId, rows: Vec<StoredRecord>) -> Result<(), JournalError> {
        if !self.dispatched.insert(run.clone()) {
            return Err(stream_broken("one run's records came twice"));
        }
        self.chunk_bytes = self.chunk_bytes.saturating_add(rows.iter().map(|row| row.bytes.len()).sum());
        self.chunk.push((run, rows));
        if self.chunk.len() >= self.chunk_size() || self.chunk_bytes >= CHUNK_RECORD_BYTES {
            let chunk = std::mem::take(&mut self.chunk);
            self.chunk_bytes = 0;
            self.send.send(chunk).map_err(|_| stream_broken("every audit worker stopped"))?;
        }
        Ok(())
    }

    /// Sends the runs listed with no record stored (an empty chain is a
    /// finding too) and the last chunk.
    fn finish(mut self) -> Result<Streamed, JournalError> {
        let listed: Vec<RunId> = self
            .read_tables()?
            .runs
            .iter()
            .filter(|(run, stored)| {
                stored.head.is_some() && !self.dispatched.contains(*run) && !self.too_large.contains_key(*run)
            })
            .map(|(run, _)| run.clone())
            .collect();
        for run in listed {
            self.send(run, Vec::new())?;
        }
        let chunk = std::mem::take(&mut self.chunk);
        if !chunk.is_empty() {
            self.send.send(chunk).map_err(|_| stream_broken("every audit worker stopped"))?;
        }
        Ok(Streamed {
            sent: self.dispatched.len(),
            without_row: self.without_row,
            too_large: self.too_large,
            unreadable: self.unreadable,
        })
    }
}

impl SnapshotSink for Dispatch<'_> {
    fn unreadable_row(&mut self, run: &RunId, seq: u64, why: &JournalError) -> Result<(), JournalError> {
        if self.unreadable.contains_key(run) {
            return Ok(());
        }
        let why = match why {
            JournalError::Tamper { kind, detail: Some(detail), .. } => format!("{kind} ({detail})"),
            JournalError::Tamper { kind, detail: None, .. } => kind.to_string(),
            JournalError::StoreDamage { detail, .. } => detail.clone(),
            other => other.to_string(),
        };
        self.unreadable.insert(run.clone(), (seq, why));
        Ok(())
    }

    fn tables(&mut self, tables: TenantSnapshot) -> Result<(), JournalError> {
        let listed = tables.runs.values().filter(|stored| stored.head.is_some()).count();
        self.total.store(listed as u64, Ordering::Relaxed);
        self.tables.set(tables).map_err(|_| stream_broken("the tables came twice"))
    }

    fn run_records(&mut self, run: RunId, rows: Vec<StoredRecord>) -> Result<(), JournalError> {
        let listed = self.read_tables()?.runs.get(&run).is_some_and(|stored| stored.head.is_some());
        if listed {
            self.send(run, rows)
        } else if self.without_row.insert(run.clone(), Rowless::of(&run, &rows)).is_some() {
            Err(stream_broken("one run's records came twice"))
        } else {
            Ok(())
        }
    }

    fn run_bytes_bound(&self) -> Option<usize> {
        Some(self.run_bytes_bound)
    }

    fn run_too_large(&mut self, run: RunId, kept: RunTooLarge) -> Result<(), JournalError> {
        let listed = self.read_tables()?.runs.get(&run).is_some_and(|stored| stored.head.is_some());
        if self.dispatched.contains(&run) || self.without_row.contains_key(&run) || self.too_large.contains_key(&run) {
            return Err(stream_broken("one run's records came twice"));
        }
        if !listed {
            self.without_row.insert(run.clone(), Rowless { records: kept.records, links: None });
        }
        self.too_large.insert(run, kept);
        Ok(())
    }
}

/// A backend that broke [`Store::snapshot_streamed`]'s order: a bug, never
/// read as damage to the journal.
fn stream_broken(what: &str) -> JournalError {
    JournalError::Io(journal_core::StorageError::message(format!(
        "the store's snapshot stream is out of order: {what}"
    )))
}

/// Check 1's answer for a run: its verified chain, or the run finished
/// with its finding, or a store that could not be read.
type ChainOutcome = Result<Result<ChainRead, RunAudit>, AuditError>;

/// A run whose chain verified, waiting for its signatures' answers.
struct ChainRead {
    stored: journal_core::RunRows,
    records: Vec<VerifiedRecord>,
}

/// Checks 1 to 3 for a few runs: each chain, then every signature of them
/// all in one batch, then each run's derived data.
fn audit_chunk(
    tables: &TenantSnapshot,
    inputs: &AuditInputs,
    verifier: Option<&dyn Verifier>,
    upcasters: &Upcasters,
    runs: Chunk,
) -> Vec<Result<RunAudit, AuditError>> {
    let read: Vec<(RunId, ChainOutcome)> = runs
        .into_iter()
        .map(|(run, rows)| {
            let read = read_chain(tables, upcasters, (verifier, inputs.require_signature), &run, rows);
            (run, read)
        })
        .collect();
    let mut answers = signature_answers(verifier, &read).into_iter();
    read.into_iter()
        .map(|(run, read)| match read? {
            Err(audit) => Ok(audit),
            Ok(chain) => {
                let checks: Vec<Option<SignatureCheck>> = chain
                    .records
                    .iter()
                    .map(|record| match (&record.stored.signature, verifier) {
                        (Some(_), Some(_)) => answers.next(),
                        _ => None,
                    })
                    .collect();
                finish_run(tables, inputs, &run, chain, &checks)
            }
        })
        .collect()
}

/// The answer for every signed record of every verified chain, in order.
fn signature_answers(verifier: Option<&dyn Verifier>, read: &[(RunId, ChainOutcome)]) -> Vec<SignatureCheck> {
    let Some(verifier) = verifier else { return Vec::new() };
    let items: Vec<SignedHash<'_>> = read
        .iter()
        .filter_map(|(_, read)| read.as_ref().ok()?.as_ref().ok())
        .flat_map(|chain| chain.records.iter())
        .filter_map(|record| {
            let signature = record.stored.signature.as_ref()?;
            Some(SignedHash { key_id: &signature.key_id, hash: &record.stored.hash, signature: &signature.signature })
        })
        .collect();
    verifier.verify_many(&items)
}

/// A journal error met while reading one run: damage becomes a finding, a
/// store that cannot be read stops the audit.
fn finding_of(run: &RunId, err: JournalError) -> Result<Finding, AuditError> {
    Ok(match err {
        JournalError::Tamper { seq, kind, detail, .. } => {
            let detail = detail.map_or_else(|| kind.to_string(), |d| format!("{kind} ({d})"));
            Finding::new(FindingCode::ChainBroken, detail).run(run).seq(seq)
        }
        JournalError::BuildSkew(skew) => {
            let (detail, remedy) = match skew.as_ref() {
                BuildSkew::UnknownRecordVersion { remedy, .. }
                | BuildSkew::UnreadableRecordShape { remedy, .. }
                | BuildSkew::StoreSchema { remedy, .. } => (skew.to_string(), remedy.clone()),
            };
            let mut finding = Finding::new(FindingCode::BuildSkew, detail).run(run);
            finding.remedy = Some(remedy);
            finding
        }
        JournalError::StoreDamage { detail, .. } => Finding::new(FindingCode::StoreDamaged, detail).run(run),
        JournalError::Io(_) => return Err(AuditError::Store(err)),
        other => Finding::new(FindingCode::ChainBroken, other.to_string()).run(run),
    })
}

/// Check 1: the chain from the stored bytes; a run that fails it is
/// finished (its finding) and returned as `Err`.
fn read_chain(
    tables: &TenantSnapshot,
    upcasters: &Upcasters,
    (verifier, strict): (Option<&dyn Verifier>, bool),
    run: &RunId,
    rows: Vec<StoredRecord>,
) -> Result<Result<ChainRead, RunAudit>, AuditError> {
    let mut audit = RunAudit::default();
    let mut stored = match tables.run_rows(run, rows) {
        Ok(stored) => stored,
        Err(err) => {
            audit.findings.push(finding_of(run, err)?);
            return Ok(Err(audit));
        }
    };
    // Hash before parse, version, shape. The runs table's head is derived
    // data, checked in `finish_run`, not here.
    let check = ChainCheck { upcasters, verifier: None, options: VerifyOptions::default() };
    match verify_run_owned_or_back(run, std::mem::take(&mut stored.rows), None, check) {
        Ok(records) => Ok(Ok(ChainRead { stored, records })),
        Err((err, rows)) => {
            let skew = matches!(err, JournalError::BuildSkew(_));
            audit.findings.push(finding_of(run, err)?);
            // A record this build cannot read is build skew, never tamper
            // (R-VER-4); but its links are checked from the stored bytes
            // whatever the version (R-CHAIN-4), the rows after it too, and
            // the hashes they give are held to what the log commits to: a
            // record rewritten as a newer build's must not hide a cut.
            if skew {
                match verify_links(run, &rows, None) {
                    Ok(()) => {
                        audit.skewed = Some(rows.iter().map(|row| row.hash).collect());
                        // The links say where the chain ends, whatever the
                        // version: the runs table's head is held to that.
                        let head = rows.last().map(|row| ExpectedHead { seq: row.seq, hash: row.hash });
                        audit.derived += 1;
                        audit.findings.extend(runs_head_finding(run, stored.head, head));
                    }
                    Err(err) => {
                        audit.findings.push(finding_of(run, err)?);
                        audit.broken = Some(stored_hashes(&rows));
                    }
                }
                // Signatures are over the chain hash, whatever the version.
                let signed: Vec<SignedHash<'_>> = rows
                    .iter()
                    .filter_map(|row| {
                        let signature = row.signature.as_ref()?;
                        Some(SignedHash { key_id: &signature.key_id, hash: &row.hash, signature: &signature.signature })
                    })
                    .collect();
                let mut answers =
                    verifier.map(|verifier| verifier.verify_many(&signed)).unwrap_or_default().into_iter();
                let checks: Vec<Option<SignatureCheck>> = rows
                    .iter()
                    .map(|row| match (&row.signature, verifier) {
                        (Some(_), Some(_)) => answers.next(),
                        _ => None,
                    })
                    .collect();
                check_signatures(run, rows.iter(), &checks, strict, &mut audit);
            } else {
                // A cut of what an anchor covers must not hide behind a
                // record broken below it (R-COVER-2).
                audit.broken = Some(stored_hashes(&rows));
            }
            Ok(Err(audit))
        }
    }
}

/// Checks 2 and 3 of a verified chain, its signatures already answered
/// (`checks`, one per record: `None` when unsigned or nothing is trusted).
fn finish_run(
    store: &TenantSnapshot,
    inputs: &AuditInputs,
    run: &RunId,
    chain: ChainRead,
    checks: &[Option<SignatureCheck>],
) -> Result<RunAudit, AuditError> {
    let ChainRead { stored, records } = chain;
    let mut audit = RunAudit { records: records.len() as u64, ..RunAudit::default() };
    // 2. Signatures.
    check_signatures(run, records.iter().map(|record| &record.stored), checks, inputs.require_signature, &mut audit);
    // 3. Derived data held to the verified chain.
    let last = last_conclusion(&records);
    let outcome = last.map(|concluded| concluded.outcome);
    let seals = outcome.is_some_and(|o| o.seals());
    let head = records.last().map(|record| ExpectedHead { seq: record.stored.seq, hash: record.stored.hash });
    let name = |o: Option<Outcome>| o.map_or("none (running)", |o| o.as_str());
    audit.derived += 3;
    if let Some(unknown) = &stored.unknown_outcome {
        // Every record reads here: no build concluded it so (R-VER-4).
        audit.findings.push(
            Finding::new(
                FindingCode::OutcomeIndexMismatch,
                format!(
                    "the runs table says {unknown:?}, an outcome this build does not know, but every record of the \
                     run reads at this build and its last conclusion is {}",
                    name(outcome)
                ),
            )
            .run(run),
        );
    } else if stored.outcome != outcome {
        audit.findings.push(
            Finding::new(
                FindingCode::OutcomeIndexMismatch,
                format!("the runs table says {}, the last conclusion {}", name(stored.outcome), name(outcome)),
            )
            .run(run),
        );
    }
    if stored.sealed != seals {
        let detail = if stored.sealed {
            format!("the store refuses appends, but the last conclusion ({}) does not seal", name(outcome))
        } else {
            format!("the store accepts appends, but the last conclusion ({}) seals the run", name(outcome))
        };
        audit.findings.push(Finding::new(FindingCode::SealedFlagMismatch, detail).run(run));
    }
    audit.findings.extend(runs_head_finding(run, stored.head, head));
    if let Some(admitted) = journal_core::journal::admission(&records) {
        audit.derived += 1;
        if let Some(finding) = tenant_binding(inputs, run, admitted) {
            audit.findings.push(finding);
        }
    }
    if let Some(key) = journal_core::journal::admission(&records).map(|admitted| admitted.idempotency_key.clone()) {
        audit.derived += 1;
        let indexed = store.run_by_idempotency_key(&inputs.tenant, &key).map_err(AuditError::Store)?;
        if indexed.as_ref() != Some(run) {
            let points = indexed.map_or_else(|| "nothing".to_owned(), |other| format!("run {other}"));
            audit.findings.push(
                Finding::new(
                    FindingCode::IdempotencyIndexMismatch,
                    format!("key {key:?} points at {points}; this run's admission carries it"),
                )
                .run(run),
            );
        }
    }
    let leaf = if seals { SealLeaf::of_verified_chain(&inputs.origin, run, &records) } else { None };
    let forked = journal_core::journal::forked_from(&records)
        .map(|forked| (forked.source_run.clone(), forked.at_seq, forked.source_hash.clone()));
    let hashes = records.iter().map(|record| record.stored.hash).collect();
    let idempotency_key = journal_core::journal::admission(&records).map(|admitted| admitted.idempotency_key.clone());
    let admitted_at = journal_core::journal::admission(&records).and_then(|_| records.first()).map(|r| r.record.at);
    audit.facts = Some(RunFacts { last: outcome, leaf, hashes, forked, idempotency_key, admitted_at });
    Ok(audit)
}

/// The runs table's head against where the verified links end.
fn runs_head_finding(run: &RunId, stored: Option<ExpectedHead>, chain: Option<ExpectedHead>) -> Option<Finding> {
    if stored == chain {
        return None;
    }
    let seq = |h: Option<ExpectedHead>| h.map_or_else(|| "none".to_owned(), |h| format!("seq {}", h.seq));
    Some(
        Finding::new(
            FindingCode::RunsHeadMismatch,
            format!("the runs table's head is {}, the chain ends at {}", seq(stored), seq(chain)),
        )
        .run(run),
    )
}

fn check_signatures<'a>(
    run: &RunId,
    rows: impl Iterator<Item = &'a StoredRecord>,
    checks: &[Option<SignatureCheck>],
    strict: bool,
    audit: &mut RunAudit,
) {
    let mut first: BTreeMap<FindingCode, (u64, String, u64)> = BTreeMap::new();
    let mut note = |code: FindingCode, seq: u64, detail: String| {
        first.entry(code).and_modify(|entry| entry.2 += 1).or_insert((seq, detail, 1));
    };
    for (index, row) in rows.enumerate() {
        let check = checks.get(index).copied().flatten();
        match (&row.signature, check) {
            (None, _) => {
                audit.unsigned += 1;
                if strict {
                    note(FindingCode::UnsignedRecord, row.seq, "unsigned record".into());
                }
            }
            (Some(signature), Some(check)) => match check {
                SignatureCheck::Valid => audit.signatures += 1,
                SignatureCheck::Invalid => note(
                    FindingCode::BadSignature,
                    row.seq,
                    format!(
                        "the signature by trusted key {:?} does not verify over the record's hash",
                        signature.key_id
                    ),
                ),
                SignatureCheck::UnknownKey => {
                    audit.untrusted += 1;
                    if strict {
                        note(
                            FindingCode::UntrustedKey,
                            row.seq,
                            format!("signed by key {:?}, not trusted", signature.key_id),
                        );
                    }
                }
            },
            (Some(signature), None) => {
                audit.untrusted += 1;
                if strict {
                    note(
                        FindingCode::UntrustedKey,
                        row.seq,
                        format!("signed by key {:?}, and no record key is trusted", signature.key_id),
                    );
                }
            }
        }
    }
    for (code, (seq, detail, count)) in first {
        let detail = if count > 1 { format!("{detail} (and {} more records)", count - 1) } else { detail };
        audit.findings.push(Finding::new(code, detail).run(run).seq(seq));
    }
}

/// Every fork's provenance: its source run exists and its record at the
/// fork point is the one the fork names.
fn check_fork_provenance(
    store: &dyn Store,
    inputs: &AuditInputs,
    facts: &BTreeMap<RunId, RunFacts>,
    skewed: &Skewed,
    report: &mut AuditReport,
) {
    for (run, run_facts) in facts {
        let Some((source, at_seq, source_hash)) = &run_facts.forked else { continue };
        report.checked.derived += 1;
        let source_id = RunId::new(source).ok();
        // A source this build cannot read still has linked hashes to hold
        // the fork point to.
        let source_hashes =
            source_id.as_ref().and_then(|id| facts.get(id).map(|facts| &facts.hashes).or_else(|| skewed.get(id)));
        match source_hashes {
            Some(source_hashes) => {
                let held = usize::try_from(*at_seq)
                    .ok()
                    .and_then(|seq| seq.checked_sub(1))
                    .and_then(|index| source_hashes.get(index))
                    .is_some_and(|hash| hash.to_string() == *source_hash);
                if !held {
                    report.findings.push(
                        Finding::new(
                            FindingCode::ForkSourceChanged,
                            format!("forked from run {source} at seq {at_seq}, whose record there is no longer the one it names"),
                        )
                        .run(run),
                    );
                }
            }
            None => {
                let exists = source_id.is_some_and(|id| store.read_run(&inputs.tenant, &id).is_ok());
                if !exists {
                    report.findings.push(
                        Finding::new(
                            FindingCode::ForkSourceMissing,
                            format!("forked from run {source} at seq {at_seq}, which has no journal: an orphaned fork"),
                        )
                        .run(run),
                    );
                }
            }
        }
    }
}

/// A run belongs to the audited tenant (issue 20): its admission names the
/// tenant and its id is the one the tenant and its idempotency key give, so
/// a run copied in from another tenant (rows re-appended, a seal leaf made
/// for this origin, no key needed) is found.
fn tenant_binding(inputs: &AuditInputs, run: &RunId, admitted: &journal_core::record::RunAdmitted) -> Option<Finding> {
    if admitted.tenant != inputs.tenant.as_str() {
        let detail = format!("its admission names tenant {:?}, not the audited {}", admitted.tenant, inputs.tenant);
        return Some(Finding::new(FindingCode::TenantMismatch, detail).run(run).seq(1));
    }
    match journal_core::Runtime::run_id_for(&inputs.tenant, &admitted.idempotency_key) {
        Ok(expected) if expected == *run => None,
        Ok(expected) => Some(
            Finding::new(
                FindingCode::TenantMismatch,
                format!("tenant {} and its idempotency key give run id {expected}, not this one", inputs.tenant),
            )
            .run(run)
            .seq(1),
        ),
        Err(err) => Some(Finding::new(FindingCode::TenantMismatch, err.to_string()).run(run).seq(1)),
    }
}

/// Runs whose verified chain holds no admission (its first record is not a
/// `RunAdmitted`: only a direct `Journal` writer makes one) name no tenant
/// and no key their id derives from, so [`tenant_binding`] cannot hold them:
/// a run copied in from another tenant would pass.
fn say_which_runs_are_unbound(facts: &BTreeMap<RunId, RunFacts>, report: &mut AuditReport) {
    let unbound = facts.values().filter(|run| run.idempotency_key.is_none()).count();
    if unbound > 0 {
        report.not_checked.push(NotChecked {
            what: format!("the tenant binding of {unbound} run{}", if unbound == 1 { "" } else { "s" }),
            why: "their first record is not a RunAdmitted (a direct Journal writer's, not the runtime's): nothing in \
                  them names the tenant or the key their id derives from, so a run copied in from another tenant \
                  cannot be told; admit runs through the runtime"
                .into(),
        });
    }
}

/// Runs whose records no runs row lists: `run_row_missing` each.
///
/// Such records are no verified run (no chain check reads a
/// run the store does not list), but their links are checked from the
/// stored bytes and the hashes they give are held, as a run this build
/// cannot read is, to the seal and heads entries that hold the run (review
/// 23): a run cut back below what an anchor covers must not hide behind its
/// runs row deleted as `run_row_missing` only (derived data, no anchor
/// named).
fn check_rows_without_runs(
    snapshot: &TenantSnapshot,
    without_row: BTreeMap<RunId, Rowless>,
    (skewed, broken): (&mut Skewed, &mut Broken),
    report: &mut AuditReport,
) -> Result<(), AuditError> {
    // Every run the snapshot holds is checked for its row.
    report.checked.derived += snapshot.runs.len() as u64;
    for (run, rowless) in without_row {
        report.findings.push(
            Finding::new(
                FindingCode::RunRowMissing,
                format!("{} records are stored, but the runs table has no row for the run", rowless.records),
            )
            .run(&run),
        );
        match rowless.links {
            Some(Ok(hashes)) => {
                skewed.insert(run, hashes);
            }
            Some(Err((err, stored))) => {
                report.findings.push(finding_of(&run, err)?);
                broken.insert(run, stored);
            }
            None => {}
        }
    }
    Ok(())
}

/// The outcome index held to the verified chains both ways: every verified
/// run listed under its last conclusion and nowhere else, and every row of
/// the index backed by a verified run (a row for a run that does not exist
/// is a forgery `runs --outcome` would show).
///
/// A row naming an outcome this build does not know is a newer build's
/// (R-VER-4) only beside a run this build cannot read: that build's
/// conclusion is a record this one cannot read, and the run's build skew
/// says so already. Beside a run every record of which reads here, or none,
/// no build wrote it.
fn check_outcome_listing(
    snapshot: &TenantSnapshot,
    facts: &BTreeMap<RunId, RunFacts>,
    skewed: &Skewed,
    report: &mut AuditReport,
) {
    for outcome in Outcome::ALL {
        report.checked.derived += 1;
        for (run, run_facts) in facts {
            let expected = run_facts.last == Some(outcome);
            if expected != snapshot.outcome_index.contains(&(outcome, run.clone())) {
                let detail = if expected {
                    format!("its last conclusion is {outcome}, but the outcome index does not list it there")
                } else {
                    let last = run_facts.last.map_or("none", |o| o.as_str());
                    format!("the outcome index lists it as {outcome}; its last conclusion is {last}")
                };
                report.findings.push(Finding::new(FindingCode::OutcomeIndexMismatch, detail).run(run));
            }
        }
    }
    for (outcome, run) in &snapshot.unknown_outcomes {
        report.checked.derived += 1;
        if skewed.contains_key(run) {
            continue;
        }
        let finding = match facts.get(run) {
            Some(run_facts) => Finding::new(
                FindingCode::OutcomeIndexMismatch,
                format!(
                    "the outcome index lists it as {outcome:?}, an outcome this build does not know, but every record \
                     of the run reads at this build and its last conclusion is {}",
                    run_facts.last.map_or("none", |o| o.as_str())
                ),
            ),
            None if !snapshot.runs.contains_key(run) => Finding::new(
                FindingCode::IndexWithoutRun,
                format!("the outcome index lists it as {outcome:?}, but no such run is stored"),
            ),
            None => Finding::new(
                FindingCode::OutcomeIndexMismatch,
                format!("the outcome index lists it as {outcome:?}, an outcome this build does not know"),
            ),
        };
        report.findings.push(finding.run(run));
    }
    for (outcome, run) in &snapshot.outcome_index {
        if !facts.contains_key(run) && !snapshot.runs.contains_key(run) {
            report.findings.push(
                Finding::new(
                    FindingCode::IndexWithoutRun,
                    format!("the outcome index lists it as {outcome}, but no such run is stored"),
                )
                .run(run),
            );
        }
    }
}

/// Every idempotency row backed by the verified run whose admission
/// carries its key (a row pointing a key at another run would make the
/// plane answer a new job with an old run, which then never runs). A run
/// whose chain failed, or that this build cannot read, is still held to
/// the id its key gives (R-COVER-4): a key forged onto it is a finding of
/// its own, never hidden behind its build skew (exit 3).
fn check_idempotency_rows(
    snapshot: &TenantSnapshot,
    tenant: &TenantId,
    facts: &BTreeMap<RunId, RunFacts>,
    report: &mut AuditReport,
) {
    for (key, run) in &snapshot.idempotency {
        report.checked.derived += 1;
        let carried = facts.get(run).map(|run_facts| run_facts.idempotency_key.as_deref());
        let finding = match carried {
            Some(Some(carried)) if carried == key => continue,
            // Its chain failed (or this build cannot read it): that is a
            // finding already, and the key must still give its id.
            None if snapshot.runs.contains_key(run) => match journal_core::Runtime::run_id_for(tenant, key) {
                Ok(derived) if derived == *run => continue,
                Ok(derived) => format!(
                    "the idempotency index points key {key:?} at it, but tenant {tenant} and that key give run {derived}"
                ),
                Err(err) => format!("the idempotency index points key {key:?} at it, which gives no run id: {err}"),
            },
            None => format!("the idempotency index points key {key:?} at it, but no such run is stored"),
            Some(Some(carried)) => {
                format!("the idempotency index points key {key:?} at it, but its admission carries {carried:?}")
            }
            Some(None) => format!("the idempotency index points key {key:?} at it, but it has no admission"),
        };
        report.findings.push(Finding::new(FindingCode::IndexWithoutRun, finding).run(run));
    }
}

/// The admission order (issue 27, R-AUD-8) held to the verified chains in
/// both directions: every verified admission has exactly its row, at its
/// `RunAdmitted`'s instant (a missing row hides a run from the console's
/// listing), and every row is one of those (a forged row lists a run that
/// was never admitted then, or at all).
fn check_admission_order(snapshot: &TenantSnapshot, facts: &BTreeMap<RunId, RunFacts>, report: &mut AuditReport) {
    if snapshot.admission_order_absent {
        report.not_checked.push(NotChecked {
            what: "the admission order (the console's listing of runs)".into(),
            why: "this store was written by a build that kept none, and no writer of this build has opened it \
                  since (its first opening fills the order from the stored admissions)"
                .into(),
        });
        return;
    }
    let expected: BTreeSet<journal_core::AdmittedRun> = facts
        .iter()
        .filter_map(|(run, run_facts)| {
            run_facts.admitted_at.map(|at| journal_core::AdmittedRun { at, run: run.clone() })
        })
        .collect();
    report.checked.derived += expected.len() as u64;
    for missing in expected.difference(&snapshot.admissions) {
        report.findings.push(
            Finding::new(
                FindingCode::AdmissionOrderMismatch,
                format!("the admission order has no row for its admission at {}: listings skip it", missing.at),
            )
            .run(&missing.run),
        );
    }
    for forged in snapshot.admissions.difference(&expected) {
        let detail = match facts.get(&forged.run) {
            // Its chain failed to verify: that is the finding already.
            None if snapshot.runs.contains_key(&forged.run) => continue,
            None => format!("the admission order lists it at {}, but no such run is stored", forged.at),
            Some(run_facts) => match run_facts.admitted_at {
                Some(at) => format!("the admission order lists it at {}, but it was admitted at {at}", forged.at),
                None => format!("the admission order lists it at {}, but it has no admission", forged.at),
            },
        };
        report.findings.push(Finding::new(FindingCode::AdmissionOrderMismatch, detail).run(&forged.run));
    }
}

/// Checks 4 and 5: the log rebuilt from the seals in key order, never from
/// cached nodes (R-LOG-7); counters and nodes compared with it; every sealed
/// run proven included.
fn check_log(
    snapshot: &TenantSnapshot,
    inputs: &AuditInputs,
    facts: &BTreeMap<RunId, RunFacts>,
    (skewed, broken): (&Skewed, &Broken),
    report: &mut AuditReport,
) -> Result<LogChecked, AuditError> {
    let store: &dyn Store = snapshot;
    let tenant = &inputs.tenant;
    // A seal leaf of this log is told which run it seals by its bytes, as a
    // heads leaf is, never by the row's run column: that column is the seal
    // lookup (derived data; on PostgreSQL the seal index itself), and a row
    // renamed behind the plane must not keep the leaf from being held to
    // its run's chain (check 5 names the renamed row).
    let mut seals: Vec<SealEntry> = store.seals(tenant).map_err(AuditError::Store)?;
    // Each leaf read once: what it says is asked again below and by the
    // moved marks' check.
    let leaves: Vec<Option<SealLeaf>> = seals
        .iter()
        .map(|seal| SealLeaf::parse(&seal.leaf_bytes).filter(|leaf| leaf.origin == inputs.origin))
        .collect();
    for (seal, leaf) in seals.iter_mut().zip(&leaves) {
        let Some(leaf) = leaf else { continue };
        if leaf.run != seal.run {
            report.findings.push(
                Finding::new(
                    FindingCode::SealIndexMismatch,
                    format!(
                        "the log's position {} holds its seal leaf, but the row names {}",
                        seal.position,
                        if seal.run.is_heads_leaf() { "a heads leaf" } else { seal.run.as_str() }
                    ),
                )
                .run(&leaf.run),
            );
            seal.run = leaf.run.clone();
        }
    }
    let rebuilt = journal_core::log::walk(&seals);
    report.checked.seals = seals.len() as u64;
    let logged_seals: BTreeSet<RunId> = seals
        .iter()
        .zip(&leaves)
        .filter(|(seal, leaf)| leaf.is_some() || !HeadsLeaf::is_tagged(&seal.leaf_bytes))
        .map(|(seal, _)| seal.run.clone())
        .collect();
    let mut in_log: BTreeSet<&RunId> = BTreeSet::new();
    let mut heads_leaves = Vec::new();
    // First what each seal row is, in rank order; then the leaves the
    // chains give are compared and held to the rebuilt tree on every core
    // (each is a leaf's bytes spelled and hashed, independent of the others).
    let mut steps: Vec<SealStep<'_>> = Vec::with_capacity(seals.len());
    let mut contradicted = Vec::new();
    for (rank, (seal, leaf)) in seals.iter().zip(&leaves).enumerate() {
        // A heads leaf is told by its bytes, never by the row's run column;
        // that column is derived data too (what looks a sealed run up), so a
        // heads leaf's row naming a run is a lie about which runs are sealed.
        if HeadsLeaf::is_tagged(&seal.leaf_bytes) {
            heads_leaves.push(HeadsAt { rank: rank as u64, position: seal.position, leaf: seal.leaf_bytes.clone() });
            if !seal.run.is_heads_leaf() {
                steps.push(SealStep::Found(
                    Finding::new(
                        FindingCode::SealIndexMismatch,
                        format!("the log's position {} holds a heads leaf, but its row names this run", seal.position),
                    )
                    .run(&seal.run),
                ));
            }
            continue;
        }
        if !in_log.insert(&seal.run) {
            steps.push(SealStep::Found(
                Finding::new(
                    FindingCode::SealWithoutRun,
                    format!("sealed a second time, at position {}", seal.position),
                )
                .run(&seal.run),
            ));
            continue;
        }
        // The head this row's leaf seals its run at, when it is a seal leaf
        // of this log naming the row's run: what the log commits to, held
        // to the chain as a heads entry is (R-COVER-2).
        let claimed = leaf.clone().filter(|leaf| leaf.run == seal.run);
        let Some(run_facts) = facts.get(&seal.run) else {
            // A run this build cannot read is held to its seal by its links.
            if let Some(hashes) = skewed.get(&seal.run) {
                if let Some(leaf) = claimed.clone().filter(|leaf| !chain_ends_at(hashes, leaf)) {
                    let otherwise = skewed_seal(inputs, seal, hashes);
                    contradicted.push(ContradictedSeal {
                        rank: rank as u64,
                        position: seal.position,
                        now: SealNow::of_chain(hashes, &leaf),
                        leaf,
                        otherwise: Some(otherwise.unwrap_or_else(|| {
                            Finding::new(FindingCode::SealLeafMismatch, SEAL_LEAF_MISMATCH).run(&seal.run)
                        })),
                    });
                    continue;
                }
                if let Some(finding) = skewed_seal(inputs, seal, hashes) {
                    steps.push(SealStep::Found(finding));
                }
                continue;
            }
            // Its chain failed (already a finding): the seal is still held to
            // the rows it stores, and a cut below it named under an anchor
            // (R-COVER-2); under none, the chain's finding speaks.
            if let Some((stored, leaf)) = broken.get(&seal.run).zip(claimed.clone()) {
                let now = SealNow::of_stored(stored, &leaf);
                if !matches!(now, SealNow::Appended { now } if now == leaf.record_count) {
                    contradicted.push(ContradictedSeal {
                        rank: rank as u64,
                        position: seal.position,
                        leaf,
                        now,
                        otherwise: None,
                    });
                    continue;
                }
            }
            // Or it has no journal at all.
            if store.read_run(tenant, &seal.run).is_err() {
                let otherwise = Finding::new(
                    FindingCode::SealWithoutRun,
                    format!("the log's position {} seals a run with no journal", seal.position),
                )
                .run(&seal.run);
                match claimed {
                    // A sealed run deleted with its leaf left in the log.
                    Some(leaf) => contradicted.push(ContradictedSeal {
                        rank: rank as u64,
                        position: seal.position,
                        leaf,
                        now: SealNow::Gone,
                        otherwise: Some(otherwise),
                    }),
                    None => steps.push(SealStep::Found(otherwise)),
                }
            }
            continue;
        };
        if let Some(leaf) = claimed.filter(|leaf| !chain_ends_at(&run_facts.hashes, leaf)) {
            // Cut back below its sealed head, or rewritten at or before it.
            let otherwise = match run_facts.leaf {
                Some(_) => Finding::new(FindingCode::SealLeafMismatch, SEAL_LEAF_MISMATCH),
                None => Finding::new(FindingCode::SealWithoutRun, not_sealing(seal.position)),
            };
            contradicted.push(ContradictedSeal {
                rank: rank as u64,
                position: seal.position,
                now: SealNow::of_chain(&run_facts.hashes, &leaf),
                leaf,
                otherwise: Some(otherwise.run(&seal.run)),
            });
            continue;
        }
        let Some(leaf) = &run_facts.leaf else {
            steps.push(SealStep::Found(
                Finding::new(FindingCode::SealWithoutRun, not_sealing(seal.position)).run(&seal.run),
            ));
            continue;
        };
        steps.push(SealStep::Prove { rank: rank as u64, seal, leaf });
    }
    let proven = on_every_core(&steps, |step| match step {
        SealStep::Found(_) => None,
        SealStep::Prove { rank, seal, leaf } => Some(prove_seal(&rebuilt, *rank, seal, leaf)),
    });
    // A worker that stopped leaves seals unanswered: refuse rather than skip them.
    if proven.len() != steps.len() {
        return Err(AuditError::WorkerFailed);
    }
    let mut sealed = SealedRuns::new();
    for (step, answer) in steps.into_iter().zip(proven) {
        match (step, answer) {
            (SealStep::Found(finding), _) | (_, Some(Err(finding))) => report.findings.push(finding),
            (SealStep::Prove { rank, seal, .. }, Some(Ok(()))) => {
                report.checked.inclusions += 1;
                sealed.insert(seal.run.clone(), (rank, seal.position));
            }
            (SealStep::Prove { .. }, None) => return Err(AuditError::WorkerFailed),
        }
    }
    for (run, run_facts) in facts {
        if run_facts.leaf.is_some() && !in_log.contains(run) {
            report.findings.push(
                Finding::new(FindingCode::SealMissing, "its last conclusion seals it, but the log holds no seal of it")
                    .run(run),
            );
        }
    }
    // 4. Counters and cached nodes against the rebuild.
    let counters = store.log_counters(tenant).map_err(AuditError::Store)?;
    let dense = seals.iter().enumerate().all(|(rank, seal)| seal.position == rank as u64);
    // The count a store keeps apart from its seals (the snapshot's counters
    // count the seals read, so only the stored count can differ): the plane
    // reads it to tell whether positions have holes, and a stale one makes
    // it refuse to sign a log that has none, or serve a log with holes from
    // its stored nodes.
    let kept = snapshot.stored_seal_count.unwrap_or(counters.seal_count);
    if kept != seals.len() as u64 {
        report.findings.push(Finding::new(
            FindingCode::CachedNodesMismatch,
            format!("the store counts {kept} seals; {} are stored", seals.len()),
        ));
    }
    if counters.has_holes() || !dense || counters.next_position != seals.len() as u64 {
        report.findings.push(Finding::new(
            FindingCode::LogHoles,
            format!(
                "the counter has given {} positions and {} seals remain: sealed runs were removed behind the store",
                counters.next_position,
                seals.len()
            ),
        ));
    } else {
        compare_nodes(snapshot, inputs, &rebuilt, report);
    }
    Ok(LogChecked { rebuilt, heads_leaves, sealed, contradicted, logged_seals })
}

/// A seal of a run this build cannot read (build skew): a sealed run takes
/// no record after its seal, so a leaf this build reads must name the head
/// the run's links give, whatever a newer build wrote in its records.
fn skewed_seal(inputs: &AuditInputs, seal: &SealEntry, hashes: &[journal_core::ChainHash]) -> Option<Finding> {
    // A leaf this build cannot read either (a newer build's spelling) is
    // that build's to check: the run's build skew says so already.
    SealLeaf::parse(&seal.leaf_bytes)?;
    let head = hashes.last().map(|hash| ExpectedHead { seq: hashes.len() as u64, hash: *hash });
    let holds = head.is_some_and(|head| SealLeaf::new(&inputs.origin, &seal.run, head).matches(&seal.leaf_bytes));
    (!holds).then(|| {
        Finding::new(
            FindingCode::SealLeafMismatch,
            format!(
                "the seal leaf at position {} is not the head its chain's links give ({} records; this build \
                 cannot read all of them, but their links are checked)",
                seal.position,
                hashes.len()
            ),
        )
        .run(&seal.run)
    })
}

/// What check 4 and 5 leave for the checks after them.
struct LogChecked {
    /// The log rebuilt from its seal rows.
    rebuilt: MemoryHashStore,
    /// The heads leaves among them, told by their bytes.
    heads_leaves: Vec<HeadsAt>,
    /// Each run whose seal verified: the leaf its chain gives, included at
    /// its rank.
    sealed: SealedRuns,
    /// Seal leaves whose head the run's chain no longer has.
    contradicted: Vec<ContradictedSeal>,
    /// Every run the log holds a seal leaf for: by the leaf's bytes when
    /// they are a seal leaf of this log, else (a leaf in a newer build's
    /// spelling, not a heads leaf) by its row.
    logged_seals: BTreeSet<RunId>,
}

/// What a seal row whose leaf is not the chain's says.
const SEAL_LEAF_MISMATCH: &str = "the seal leaf is not the one its verified chain gives";

/// What a seal row of a run whose last conclusion does not seal says.
fn not_sealing(position: u64) -> String {
    format!("the log seals it at position {position}, but its last conclusion does not seal")
}

/// A seal leaf of the log whose run was cut back below the head it seals,
/// deleted, or rewritten at or before it. Under an anchor the log extends,
/// the leaf is the one the plane signed: its run's history was cut or
/// rewritten, named as a heads entry's would be (a deletion or tamper of
/// what the anchor holds), never as derived data. Under none, the leaf may
/// be the forgery: `otherwise` says what the seal row alone shows (`None`:
/// nothing beyond the run's broken chain, a finding already).
struct ContradictedSeal {
    rank: u64,
    position: u64,
    leaf: SealLeaf,
    /// What the run still has of the sealed head.
    now: SealNow,
    otherwise: Option<Finding>,
}

/// What a run's history has now of the head a seal leaf seals it at.
enum SealNow {
    /// The run is gone.
    Gone,
    /// No record at the sealed seq: the history ends before it, at `now`.
    Cut { now: u64 },
    /// The sealed head, and the history ends at `now` (past it: records
    /// were appended after the seal).
    Appended { now: u64 },
    /// Another record at the sealed seq.
    Rewritten,
}

impl SealNow {
    /// Of a chain whose links verified: its hashes by seq.
    fn of_chain(hashes: &[journal_core::ChainHash], leaf: &SealLeaf) -> Self {
        let now = hashes.len() as u64;
        if now < leaf.record_count {
            Self::Cut { now }
        } else if chain_holds(hashes, leaf) {
            Self::Appended { now }
        } else {
            Self::Rewritten
        }
    }

    /// Of a run whose chain failed: the rows it stores, by seq.
    fn of_stored(stored: &StoredHashes, leaf: &SealLeaf) -> Self {
        match stored.get(&leaf.record_count) {
            None => Self::Cut { now: stored.range(..leaf.record_count).next_back().map_or(0, |(seq, _)| *seq) },
            Some(hash) if *hash == leaf.head => {
                Self::Appended { now: stored.keys().next_back().copied().unwrap_or(leaf.record_count) }
            }
            Some(_) => Self::Rewritten,
        }
    }
}

/// Whether a verified chain ends at the head a seal leaf seals it at: it
/// holds that head, and nothing was appended after it (a sealed run's
/// journal is frozen, R-RUN-2).
fn chain_ends_at(hashes: &[journal_core::ChainHash], leaf: &SealLeaf) -> bool {
    hashes.len() as u64 == leaf.record_count && chain_holds(hashes, leaf)
}

/// Whether a verified chain still holds the head a seal leaf seals it at.
fn chain_holds(hashes: &[journal_core::ChainHash], leaf: &SealLeaf) -> bool {
    usize::try_from(leaf.record_count)
        .ok()
        .and_then(|seq| seq.checked_sub(1))
        .and_then(|index| hashes.get(index))
        .is_some_and(|hash| *hash == leaf.head)
}

/// Check 5's seals whose run no longer has the head they seal (R-COVER-2):
/// under an anchor, a run cut back below it or deleted is a `deletion`, one
/// rewritten at or before it `tamper`, each naming the run, the sealed seq
/// and the newest anchor covering the leaf.
fn check_contradicted_seals(contradicted: Vec<ContradictedSeal>, anchored: &Anchored, report: &mut AuditReport) {
    for seal in contradicted {
        let Some(anchor) = covering(anchored, seal.rank) else {
            report.findings.extend(seal.otherwise);
            continue;
        };
        let seq = seal.leaf.record_count;
        let finding = match seal.now {
            SealNow::Gone => Finding::new(
                FindingCode::HeadCutBack,
                format!("the log's position {} seals it at seq {seq}, but the run is gone", seal.position),
            ),
            SealNow::Cut { now } => Finding::new(
                FindingCode::HeadCutBack,
                format!(
                    "the log's position {} seals it at seq {seq}, but its journal now ends at seq {now}",
                    seal.position
                ),
            ),
            SealNow::Appended { now } => Finding::new(
                FindingCode::HeadRewritten,
                format!(
                    "the log's position {} seals it at seq {seq}, but records were appended after it (its journal \
                     now ends at seq {now}): a sealed run's journal was extended behind the plane",
                    seal.position,
                ),
            ),
            SealNow::Rewritten => Finding::new(
                FindingCode::HeadRewritten,
                format!(
                    "the log's position {} seals it with another record at seq {seq}: its history was rewritten",
                    seal.position
                ),
            ),
        };
        report.findings.push(finding.run(&seal.leaf.run).seq(seq).anchor(anchor));
    }
}

/// Runs whose seal the audit verified: `(rank, position)` of each.
type SealedRuns = BTreeMap<RunId, (u64, u64)>;

/// The seal index (which position seals each run: what `prove` and
/// `export` of a sealed run look up) held to the verified seals, both ways:
/// a run's row must name its verified seal, and every row must be one of
/// those. A backend that keeps no separate index derives it from the seal
/// rows' run column, which this holds the same way.
fn check_seal_index(snapshot: &TenantSnapshot, sealed: &SealedRuns, report: &mut AuditReport) {
    let runs: BTreeSet<&RunId> = sealed.keys().chain(snapshot.seal_by_run.keys()).collect();
    let named: BTreeSet<&RunId> = snapshot.seals.values().map(|seal| &seal.run).collect();
    for run in runs {
        report.checked.derived += 1;
        let detail = match (sealed.get(run), snapshot.seal_by_run.get(run)) {
            (Some((_, position)), Some(indexed)) if position == indexed => continue,
            (Some((_, position)), Some(indexed)) => {
                format!("the seal index names position {indexed}; its verified seal is at {position}")
            }
            (Some((_, position)), None) => format!("the seal index has no row; its verified seal is at {position}"),
            // A seal that failed its checks is a finding of its own already.
            (None, Some(_)) if named.contains(run) => continue,
            (None, Some(indexed)) => {
                format!("the seal index names position {indexed}, but the log holds no verified seal of the run")
            }
            (None, None) => continue,
        };
        report.findings.push(Finding::new(FindingCode::SealIndexMismatch, detail).run(run));
    }
}

/// A heads leaf found in the log: its rank in the rebuilt log, the position
/// the store gave it, and its bytes.
struct HeadsAt {
    rank: u64,
    position: u64,
    leaf: Vec<u8>,
}

/// The anchors that the log extends, as `(label, size)`: what covers the
/// leaves below each size.
type Anchored = Vec<(String, u64)>;

/// The newest anchor covering the leaf at `rank`.
fn covering(anchored: &Anchored, rank: u64) -> Option<&str> {
    anchored.iter().filter(|(_, size)| rank < *size).max_by_key(|(_, size)| *size).map(|(label, _)| label.as_str())
}

/// Per run, the newest head an anchored heads leaf committed to.
type Covered = BTreeMap<RunId, u64>;

/// Issue 20: every heads leaf held to what the store shows. Its stored
/// entries must give its root; each entry's run must still have that record
/// at that seq (a run cut back or deleted after the checkpoint is a
/// deletion, one rewritten below its head is tamper), named with the anchor
/// that covers the leaf. Returns, per run, the newest seq an anchor covers.
fn check_heads(
    snapshot: &TenantSnapshot,
    inputs: &AuditInputs,
    facts: &BTreeMap<RunId, RunFacts>,
    (skewed, broken): (&Skewed, &Broken),
    heads_leaves: &[HeadsAt],
    anchored: &Anchored,
    report: &mut AuditReport,
) -> (Covered, BTreeSet<u64>) {
    let mut covered = Covered::new();
    let mut held = BTreeSet::new();
    // Entries are the data behind a heads leaf: stored where the log holds
    // none, they are rows nothing commits to (and would feed the
    // newest-heads index a position that proves nothing).
    let leaf_positions: BTreeSet<u64> = heads_leaves.iter().map(|at| at.position).collect();
    for (position, entries) in &snapshot.heads_entries {
        if !leaf_positions.contains(position) {
            report.findings.push(Finding::new(
                FindingCode::HeadsLeafBroken,
                format!("{} heads entries are stored at position {position}, which holds no heads leaf", entries.len()),
            ));
        }
    }
    for at in heads_leaves {
        report.checked.derived += 1;
        let anchor = covering(anchored, at.rank);
        let with_anchor = |finding: Finding| match anchor {
            Some(label) => finding.anchor(label),
            None => finding,
        };
        let Some(leaf) = HeadsLeaf::parse(&at.leaf).filter(|leaf| leaf.origin == inputs.origin) else {
            report.findings.push(with_anchor(Finding::new(
                FindingCode::HeadsLeafBroken,
                format!("the log's leaf at position {} is not a heads leaf of this origin", at.position),
            )));
            continue;
        };
        let entries = snapshot.heads_entries.get(&at.position).cloned().unwrap_or_default();
        if journal_core::heads::entries_tree(&entries).tree() != leaf.entries {
            report.findings.push(with_anchor(Finding::new(
                FindingCode::HeadsLeafBroken,
                format!(
                    "the heads leaf at position {} commits to {} runs; the {} entries stored beside it do not give its root",
                    at.position,
                    leaf.entries.size,
                    entries.len()
                ),
            )));
            continue;
        }
        held.insert(at.position);
        for entry in &entries {
            report.checked.heads += 1;
            // A run whose chain failed is that finding already (naming the
            // record broken); under an anchor it is still held to the rows it
            // stores, so a cut of what the anchor covers, made behind a break
            // below it, is named as one (R-COVER-2).
            if let Some(stored) = anchor.and(broken.get(&entry.run)) {
                let finding = match stored.get(&entry.seq) {
                    Some(hash) if *hash == entry.hash => continue,
                    Some(_) => Finding::new(
                        FindingCode::HeadRewritten,
                        format!(
                            "the heads leaf at position {} holds another record at seq {}: its history was rewritten",
                            at.position, entry.seq
                        ),
                    ),
                    None => Finding::new(
                        FindingCode::HeadCutBack,
                        format!(
                            "the heads leaf at position {} holds it at seq {}, but the store no longer has that record",
                            at.position, entry.seq
                        ),
                    ),
                };
                report.findings.push(with_anchor(finding.run(&entry.run).seq(entry.seq)));
                continue;
            }
            // A run this build cannot read is held by the hashes its links give.
            let hashes = facts.get(&entry.run).map(|run_facts| &run_facts.hashes).or_else(|| skewed.get(&entry.run));
            let held = hashes.map(|hashes| {
                usize::try_from(entry.seq)
                    .ok()
                    .and_then(|seq| seq.checked_sub(1))
                    .map(|index| hashes.get(index).map(|hash| *hash == entry.hash))
            });
            let finding = match held {
                Some(Some(Some(true))) => {
                    if anchor.is_some() {
                        let newest = covered.entry(entry.run.clone()).or_insert(0);
                        *newest = (*newest).max(entry.seq);
                    }
                    continue;
                }
                // Its chain failed to verify: that is reported already.
                None if snapshot.runs.contains_key(&entry.run) => continue,
                None => Finding::new(
                    FindingCode::HeadCutBack,
                    format!(
                        "the heads leaf at position {} holds it at seq {}, but the run is gone",
                        at.position, entry.seq
                    ),
                ),
                Some(Some(None)) | Some(None) => Finding::new(
                    FindingCode::HeadCutBack,
                    format!(
                        "the heads leaf at position {} holds it at seq {}, but its journal now ends before that",
                        at.position, entry.seq
                    ),
                ),
                Some(Some(Some(false))) => Finding::new(
                    FindingCode::HeadRewritten,
                    format!(
                        "the heads leaf at position {} holds another record at seq {}: its history was rewritten",
                        at.position, entry.seq
                    ),
                ),
            };
            report.findings.push(with_anchor(finding.run(&entry.run).seq(entry.seq)));
        }
    }
    (covered, held)
}

/// Each run's newest heads entry among the heads leaves that verified
/// (`held`: their stored entries give the leaf's root), with that leaf's
/// position: what the newest-heads index and the moved marks are held to.
type NewestEntries<'a> = BTreeMap<&'a RunId, (u64, &'a journal_core::heads::HeadEntry)>;

fn newest_verified_entries<'a>(snapshot: &'a TenantSnapshot, held: &BTreeSet<u64>) -> NewestEntries<'a> {
    let mut newest = NewestEntries::new();
    // Positions ascend: a later leaf's entry replaces an earlier one's.
    for (position, entries) in snapshot.heads_entries.iter().filter(|(position, _)| held.contains(position)) {
        for entry in entries {
            newest.insert(&entry.run, (*position, entry));
        }
    }
    newest
}

/// The newest-heads index both ways (issue 25): each run's row names the
/// newest heads leaf that verified and holds it, and every row is one of
/// those. The entries themselves are held to their leaves by `check_heads`.
fn check_heads_index(snapshot: &TenantSnapshot, newest: &NewestEntries<'_>, report: &mut AuditReport) {
    let derived: BTreeMap<&RunId, u64> = newest.iter().map(|(run, (position, _))| (*run, *position)).collect();
    let runs: BTreeSet<&RunId> = derived.keys().copied().chain(snapshot.heads_by_run.keys()).collect();
    for run in runs {
        report.checked.derived += 1;
        let detail = match (derived.get(run), snapshot.heads_by_run.get(run)) {
            (Some(newest), Some(indexed)) if newest == indexed => continue,
            (Some(newest), Some(indexed)) => {
                format!("the index names the heads leaf at position {indexed}; the newest holding it is at {newest}")
            }
            (Some(newest), None) => format!("the index has no row; the heads leaf at position {newest} holds it"),
            (None, Some(indexed)) => {
                format!("the index names the heads leaf at position {indexed}, but no heads leaf holds the run")
            }
            (None, None) => continue,
        };
        report.findings.push(Finding::new(FindingCode::HeadsIndexMismatch, detail).run(run));
    }
}

/// The moved marks (the runs the next heads leaf enters) held to the
/// verified chains: every open run whose head is past its newest heads
/// entry (of a leaf whose entries give its root), or that has none, must be
/// marked. A mark deleted would leave the move out of every later
/// checkpoint, so that a later cut back to the covered head audits clean;
/// while the mark is missing it is a finding. Only this way: a mark on a
/// run already entered is harmless (the next leaf enters it again), and a
/// PostgreSQL heads leaf leaves the runs an append batch holds marked.
fn check_moved_marks(
    snapshot: &TenantSnapshot,
    logged_seals: &BTreeSet<RunId>,
    facts: &BTreeMap<RunId, RunFacts>,
    skewed: &Skewed,
    newest: &NewestEntries<'_>,
    report: &mut AuditReport,
) {
    if snapshot.moved_marks_absent {
        report.not_checked.push(NotChecked {
            what: "the moved marks".into(),
            why: "this store file was written before heads leaves and no writer of this build has opened it since \
                  (its first writable opening marks every open run): open it with `agentplane checkpoint` and audit \
                  again"
                .into(),
        });
        return;
    }
    // A run whose chain seals is held to its seal instead (its mark goes
    // with the sealing append). A run this build cannot read seals when the
    // log holds a seal leaf for it (held to its links in `check_log`), told
    // as `check_log` tells it: by the leaf's bytes when they are a seal leaf
    // of this log, never by the row's column; a leaf in a newer build's
    // spelling (not a heads leaf) by its row, which `check_log` holds it to.
    let open_readable =
        facts.iter().filter(|(_, run_facts)| run_facts.leaf.is_none()).map(|(run, run_facts)| (run, &run_facts.hashes));
    let open_skewed = skewed.iter().filter(|(run, _)| !logged_seals.contains(run));
    for (run, hashes) in open_readable.chain(open_skewed) {
        let Some(head) = hashes.last() else { continue };
        let seq = hashes.len() as u64;
        report.checked.derived += 1;
        let entered = newest.get(run).is_some_and(|(_, entry)| entry.seq == seq && entry.hash == *head);
        if entered || snapshot.moved.contains(run) {
            continue;
        }
        let since = match newest.get(run) {
            Some((_, entry)) => format!("its newest heads entry holds seq {}", entry.seq),
            None => "no heads leaf holds it".into(),
        };
        report.findings.push(
            Finding::new(
                FindingCode::MovedMarkMissing,
                format!(
                    "its journal ends at seq {seq} and {since}, but the store does not mark it moved: the next \
                     heads leaf would leave it out (the mark was deleted)"
                ),
            )
            .run(run)
            .seq(seq),
        );
    }
    // And the other way: every mark names an open run the verified chains
    // give (a sealed run's mark would have the next heads leaf commit to
    // it on the mark's word). A run whose chain failed is that finding.
    for run in &snapshot.moved {
        report.checked.derived += 1;
        let detail = match facts.get(run) {
            Some(run_facts) if run_facts.leaf.is_none() => continue,
            None if snapshot.runs.contains_key(run) => continue,
            Some(_) => "the store marks it moved for the next heads leaf, but its verified chain seals it",
            None => "the store marks it moved for the next heads leaf, but no such run is stored",
        };
        report.findings.push(Finding::new(FindingCode::IndexWithoutRun, detail).run(run));
    }
}

/// Coverage (issue 20): what no anchor covers is named, never called
/// complete: runs admitted after the newest anchor, records written after
/// the newest anchored heads entry of a run, runs sealed after it.
fn say_what_no_anchor_covers(
    sealed: &SealedRuns,
    facts: &BTreeMap<RunId, RunFacts>,
    anchored: &Anchored,
    covered: &Covered,
    report: &mut AuditReport,
) {
    let Some(newest) = anchored.iter().map(|(_, size)| *size).max() else {
        return;
    };
    // Only a seal that verified makes a run sealed: a row's run column alone
    // (a heads leaf's row renamed, say) must not hide an open run.
    let rank_of: BTreeMap<&RunId, u64> = sealed.iter().map(|(run, (rank, _))| (run, *rank)).collect();
    let (mut unanchored_runs, mut sealed_after, mut runs_with_newer, mut newer_records) = (0u64, 0u64, 0u64, 0u64);
    for (run, run_facts) in facts {
        if let Some(rank) = rank_of.get(run) {
            if *rank >= newest {
                sealed_after += 1;
            }
            continue;
        }
        let records = run_facts.hashes.len() as u64;
        match covered.get(run) {
            None => unanchored_runs += 1,
            Some(seq) if *seq < records => {
                runs_with_newer += 1;
                newer_records += records - seq;
            }
            Some(_) => {}
        }
    }
    if unanchored_runs > 0 {
        report.not_checked.push(NotChecked {
            what: format!("{unanchored_runs} open runs"),
            why: "admitted (or last moved) after the newest anchor: no anchor covers them yet, so a deletion or cut \
                  of them cannot be told; sign and save (or witness) a newer checkpoint"
                .into(),
        });
    }
    if newer_records > 0 {
        report.not_checked.push(NotChecked {
            what: format!("{newer_records} records of {runs_with_newer} open runs"),
            why: "written after the newest heads entry an anchor covers: they can be cut back unseen until a newer \
                  checkpoint is anchored"
                .into(),
        });
    }
    if sealed_after > 0 {
        report.not_checked.push(NotChecked {
            what: format!("{sealed_after} runs sealed after the newest anchor"),
            why: "their seals are past the newest anchor's size: a deletion of them with the log rolled back cannot \
                  be told; bring a newer checkpoint"
                .into(),
        });
    }
}

/// Every complete subtree of the rebuilt log against the node the store keeps.
/// One seal row of the log, as the sequential pass over the seals left it.
enum SealStep<'a> {
    /// A finding already (a second seal, a seal of no journal, or of a run
    /// whose last conclusion does not seal).
    Found(Finding),
    /// The leaf its run's verified chain gives, to compare and prove.
    Prove { rank: u64, seal: &'a SealEntry, leaf: &'a SealLeaf },
}

/// Check 5 for one seal: the stored leaf is the one the verified chain
/// gives, and that leaf is included at its rank in the rebuilt log
/// (R-AUD-2). The rebuilt log's root is computed from its leaves, so the
/// chain's leaf hash at its rank in it is what an audit path from that rank
/// to the root would prove, without the path spelled once a seal: on a
/// plane of 20,000 sealed runs that took 20,000 paths of 15 hashes each.
fn prove_seal(rebuilt: &MemoryHashStore, rank: u64, seal: &SealEntry, leaf: &SealLeaf) -> Result<(), Finding> {
    let bytes = leaf.to_bytes();
    if bytes != seal.leaf_bytes {
        let mut finding = Finding::new(FindingCode::SealLeafMismatch, SEAL_LEAF_MISMATCH).run(&seal.run);
        // A leaf of another log is what a mistaken --tenant (or another
        // tenant's key) shows on every seal: still a finding, which says so.
        if let Some(named) = SealLeaf::origin_named(&seal.leaf_bytes).filter(|named| *named != leaf.origin.as_str()) {
            finding.detail =
                format!("the seal leaf names the log {named:?}, not this audit's {:?}", leaf.origin.as_str());
            finding.remedy = Some(format!(
                "if the tenant's log is {named:?}, audit it with that log's key (check --tenant and --log-key); \
                 otherwise its leaf was rewritten"
            ));
        }
        return Err(finding);
    }
    let at_rank = rebuilt.read_hashes(&[NodeId::new(0, rank)]).ok().and_then(|hashes| hashes.first().copied());
    if at_rank == Some(tlog::NodeHash::from(tlog::LeafHash::of(&bytes))) {
        return Ok(());
    }
    Err(Finding::new(FindingCode::InclusionFailed, format!("the rebuilt log holds another leaf at rank {rank}"))
        .run(&seal.run))
}

/// `answer` of every item, in order, the items shared out over every core.
/// A worker that panics leaves its items' answers out: the caller, which
/// gets fewer answers than items, refuses the result.
fn on_every_core<T: Sync, R: Send>(items: &[T], answer: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let share = items.len().div_ceil(cores).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            items.chunks(share).map(|part| scope.spawn(|| part.iter().map(&answer).collect::<Vec<R>>())).collect();
        handles.into_iter().flat_map(|handle| handle.join().unwrap_or_default()).collect()
    })
}

fn compare_nodes(snapshot: &TenantSnapshot, inputs: &AuditInputs, rebuilt: &MemoryHashStore, report: &mut AuditReport) {
    let store: &dyn Store = snapshot;
    let size = rebuilt.size();
    let mut ids = Vec::new();
    for level in 0..64u8 {
        let width = 1u64 << level;
        if width > size {
            break;
        }
        ids.extend((0..size / width).map(|index| NodeId::new(level, index)));
    }
    let expected = match rebuilt.read_hashes(&ids) {
        Ok(hashes) => hashes,
        Err(err) => {
            report.findings.push(Finding::new(FindingCode::CachedNodesMismatch, format!("rebuilding: {err}")));
            return;
        }
    };
    match store.read_log_nodes(&inputs.tenant, &ids) {
        Ok(stored) => {
            report.checked.nodes = ids.len() as u64;
            let differs = ids.iter().zip(expected.iter().zip(stored.iter())).find(|(_, (want, got))| want != got);
            if let Some((id, _)) = differs {
                report.findings.push(Finding::new(
                    FindingCode::CachedNodesMismatch,
                    format!("the stored node at level {} index {} is not the rebuilt one", id.level, id.index),
                ));
            }
            // And the other way: a node of no complete subtree of the log (one
            // planted for a position not sealed yet) is a row nothing wrote;
            // a sealing append that stores that node would fail on it.
            let complete: BTreeSet<&NodeId> = ids.iter().collect();
            if let Some(id) = snapshot.nodes.keys().find(|id| !complete.contains(id)) {
                report.findings.push(Finding::new(
                    FindingCode::CachedNodesMismatch,
                    format!(
                        "a node is stored at level {} index {}, which is no complete subtree of the log of size {size}",
                        id.level, id.index
                    ),
                ));
            }
        }
        Err(err) => report.findings.push(Finding::new(FindingCode::CachedNodesMismatch, err.to_string())),
    }
}

/// Checks 6 and 7: each anchor on its own (never reduced to the strongest,
/// R-AUD-4), then the anchors against each other (split views). `reads` is
/// what each anchor of `inputs` held when read, before the store was.
fn check_anchors(
    inputs: &AuditInputs,
    reads: Vec<AnchorRead>,
    rebuilt: &MemoryHashStore,
    report: &mut AuditReport,
) -> Anchored {
    let log = rebuilt.tree();
    let mut resolved: Vec<(&str, Tree)> = Vec::new();
    let mut anchored = Anchored::new();
    for (anchor, read) in inputs.anchors.iter().zip(reads) {
        // A named anchor that cannot be read fails the audit unless the
        // auditor allowed it (R-AUD-9); one that answers it anchors nothing
        // (no monitor endpoint, nothing cosigned) is only not checked.
        let mut entry = AnchorReport {
            label: anchor.label.clone(),
            kind: anchor.kind(),
            size: None,
            root: None,
            status: AnchorStatus::NotChecked,
            reason: None,
        };
        let tree = match read {
            AnchorRead::Tree(tree) => tree,
            AnchorRead::Unavailable(why) if !inputs.allow_unavailable_anchor => {
                let detail = format!("anchor {} could not be read or verified: {why}", anchor.label);
                report.findings.push(Finding::new(FindingCode::AnchorUnavailable, detail).anchor(&anchor.label));
                report.anchors.push(AnchorReport { status: AnchorStatus::Unavailable, reason: Some(why), ..entry });
                continue;
            }
            AnchorRead::Unavailable(why) => {
                let why = format!("could not be read or verified (allowed: --allow-unavailable-anchor): {why}");
                report.not_checked.push(NotChecked { what: format!("anchor {}", anchor.label), why: why.clone() });
                report.anchors.push(AnchorReport { reason: Some(why), ..entry });
                continue;
            }
            AnchorRead::Nothing(why) => {
                report.not_checked.push(NotChecked { what: format!("anchor {}", anchor.label), why: why.clone() });
                report.anchors.push(AnchorReport { reason: Some(why), ..entry });
                continue;
            }
        };
        entry.size = Some(tree.size);
        entry.root = Some(tree.root.to_string());
        entry.status = AnchorStatus::Held;
        report.anchors.push(entry);
        report.checked.anchors += 1;
        resolved.push((&anchor.label, tree));
        // The one rule (tlog's); the proof comes from the log rebuilt from
        // stored leaves, and only when the sizes need one.
        let finding = match log.extends_with(&tree, |old, new| rebuilt.prove_consistency(old, new)) {
            Ok(_) => None,
            Err(ExtendsError::Verify(VerifyError::Shrinks { .. })) => {
                let mut shrank = Finding::new(
                    FindingCode::LogShrank,
                    format!(
                        "the log shrank below the anchor: it has {} sealed runs, the anchor saw {}",
                        log.size, tree.size
                    ),
                );
                shrank.remedy = Some(format!(
                    "put back the newest copy of the store, one whose log extends this anchor. {}",
                    journal_core::log::NO_NEWER_COPY
                ));
                Some(shrank)
            }
            Err(ExtendsError::Verify(VerifyError::SameSizeDifferentRoots { size })) => Some(Finding::new(
                FindingCode::AnchorNotExtended,
                format!("the log has the anchor's size {size} with another root: its history was rewritten"),
            )),
            Err(ExtendsError::Verify(VerifyError::EmptyTreeRoot)) => {
                Some(Finding::new(FindingCode::AnchorNotExtended, "the anchor's empty tree has a non-empty root"))
            }
            Err(reason) => Some(Finding::new(
                FindingCode::AnchorNotExtended,
                format!(
                    "the log of {} does not extend the anchor's {} ({reason}): a sealed run it covers was deleted or replaced",
                    log.size, tree.size
                ),
            )),
        };
        match finding {
            Some(finding) => {
                report.findings.push(finding.anchor(&anchor.label));
                mark_failed(report, &anchor.label);
            }
            None => anchored.push((anchor.label.clone(), tree.size)),
        }
    }
    for (i, (label_a, a)) in resolved.iter().enumerate() {
        for (label_b, b) in resolved.iter().skip(i + 1) {
            if a.size == b.size && a.root != b.root {
                report.findings.push(
                    Finding::new(FindingCode::SplitView, format!("two roots for size {}", a.size))
                        .anchor(label_a)
                        .anchor(label_b),
                );
                mark_failed(report, label_a);
                mark_failed(report, label_b);
            }
        }
    }
    anchored
}

/// The anchor `label`'s entry is named by a finding.
fn mark_failed(report: &mut AuditReport, label: &str) {
    for entry in report.anchors.iter_mut().filter(|entry| entry.label == label) {
        entry.status = AnchorStatus::Failed;
    }
}

fn say_what_was_not_checked(inputs: &AuditInputs, unsigned: u64, untrusted: u64, report: &mut AuditReport) {
    if report.checked.anchors == 0 {
        report.not_checked.push(NotChecked {
            what: "deletion of sealed runs".into(),
            why: "no anchor: a sealed run deleted behind the store, with the log rolled back, cannot be told from one \
                  never sealed; bring a checkpoint saved earlier or a witness to read"
                .into(),
        });
    }
    if inputs.record_keys.is_empty() {
        report.not_checked.push(NotChecked {
            what: "record signatures".into(),
            why: "no trusted record key: who wrote the records is not checked".into(),
        });
    } else if !inputs.require_signature && (unsigned > 0 || untrusted > 0) {
        report.not_checked.push(NotChecked {
            what: "authorship of some records".into(),
            why: format!(
                "{unsigned} unsigned records and {untrusted} signed by keys not trusted here were accepted \
                 (lenient); require signatures to refuse them"
            ),
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use journal_core::ChainHash;
    use journal_core::append::RunHead;

    use super::*;

    fn row_of(bytes: usize) -> StoredRecord {
        StoredRecord {
            seq: 1,
            kind: "StepStarted".into(),
            effect_key: None,
            prev_hash: ChainHash::GENESIS,
            hash: ChainHash::GENESIS,
            bytes: vec![b'x'; bytes],
            signature: None,
        }
    }

    /// Runs of large records go to the workers in chunks bounded by their
    /// bytes, not only by their count: 40 runs of a 4 MiB record each make
    /// chunks of eight (32 MiB), where the count alone would send them all
    /// in one chunk of 160 MiB.
    #[test]
    fn a_chunk_of_large_records_is_sent_at_its_byte_bound() {
        let tenant = TenantId::new("acme").unwrap();
        let runs: Vec<RunId> = (0..40).map(|n| RunId::new(&format!("run-{n:02}")).unwrap()).collect();
        let mut tables = TenantSnapshot::empty(&tenant);
        let head = RunHead {
            head: ExpectedHead { seq: 1, hash: ChainHash::GENESIS },
            sealed: false,
            outcome: None,
            unknown_outcome: None,
        };
        for run in &runs {
            tables.runs.entry(run.clone()).or_default().head = Some(head.clone());
        }
        let (send, receive) = std::sync::mpsc::sync_channel::<Chunk>(runs.len());
        let (cell, total) = (OnceLock::new(), AtomicU64::new(0));
        let mut dispatch = Dispatch {
            tables: &cell,
            total: &total,
            send,
            workers: 2,
            chunk: Vec::new(),
            chunk_bytes: 0,
            dispatched: BTreeSet::new(),
            without_row: BTreeMap::new(),
            run_bytes_bound: usize::MAX,
            too_large: BTreeMap::new(),
            unreadable: BTreeMap::new(),
        };
        dispatch.tables(tables).unwrap();
        for run in &runs {
            dispatch.run_records(run.clone(), vec![row_of(4 << 20)]).unwrap();
        }
        assert_eq!(dispatch.finish().unwrap().sent, runs.len());
        let sizes: Vec<usize> = receive.try_iter().map(|chunk| chunk.len()).collect();
        assert_eq!(sizes, vec![8; 5], "each chunk holds 32 MiB of records");
    }
}
