//! The witnessing sweep (R-WIT-8, R-WIT-9): off the run path, the tenant's
//! checkpoint is signed now and submitted to the witnesses with proofs from
//! the log view; the round is held to the quorum.
//!
//! Before it signs, a round verifies every cosigned note the store keeps
//! (an unverifiable one is an integrity alarm, never a reason to skip), and
//! asks each witness what it holds ([`WitnessProbe`]): a head that does not
//! extend what any witness holds is refused before anything is signed or
//! sent (issue 22: a store put back from a backup).

use tlog::Tree;
use witness::Origin;

use super::{Runtime, RuntimeError};
use crate::error::JournalError;
use crate::ids::TenantId;
use crate::log::{HighWater, HighWaterMark, LogView, Raised, sign_current_head_asking};
use crate::store::SignedTree;

/// How the plane learns what one witness holds for an origin before it
/// signs: the witness's monitor endpoint where it serves one (R-WIT-4).
pub trait WitnessProbe: Send + Sync {
    /// A name for reports: the URL.
    fn endpoint(&self) -> &str;
    /// The note of the latest checkpoint this witness cosigned for `origin`
    /// (its cosignatures verified with the keys the plane trusts); `Ok(None)`
    /// when it holds nothing for the origin. [`ask_witnesses`] holds the note
    /// to the plane's own log key before it counts: what a witness holds
    /// binds the plane only when the plane signed it, whatever the probe
    /// checked. A witness that serves no monitor endpoint is an error: it
    /// cannot say what it holds, so it never counts as having answered (a
    /// lost mark is never rebuilt past it).
    fn latest(&self, origin: &Origin) -> Result<Option<String>, witness::WitnessError>;
}

/// The tree of the note a witness answered with, when the plane's log key
/// signed it for `origin`; else why it is a bad answer. A tree taken on a
/// witness's word would let one witness out of the quorum stop the plane
/// signing for good (a size it never reached, which no log extends).
fn signed_by_the_plane(
    endpoint: &str,
    note: &str,
    origin: &Origin,
    log_key: &witness::VerifierKey,
) -> Result<Tree, witness::WitnessError> {
    let bad = |reason: String| witness::WitnessError::BadAnswer { witness: endpoint.to_owned(), status: 200, reason };
    let verifiers: [&dyn witness::NoteVerifier; 1] = [log_key];
    let (signed, _) = witness::SignedCheckpoint::open(note.as_bytes(), &verifiers)
        .map_err(|err| bad(format!("it holds a checkpoint this plane's log key did not sign ({err})")))?;
    if signed.checkpoint().origin_id() != origin {
        return Err(bad(format!("it answered for {origin} with a checkpoint of another origin")));
    }
    Ok(signed.checkpoint().tree())
}

/// What the witnesses answered when asked what they hold ([`ask_witnesses`]).
#[derive(Debug, Default)]
pub struct WitnessViews {
    /// The trees witnesses hold, by witness.
    pub held: Vec<(String, Tree)>,
    /// How many witnesses answered (holding something or nothing).
    pub answered: usize,
    /// The witnesses that could not be asked, and why.
    pub failures: Vec<(String, witness::WitnessError)>,
}

/// How many times [`ask_witnesses`] raises the mark again after another
/// process of the plane wrote it meanwhile, before it answers with the
/// retryable [`JournalError::CheckpointConflict`].
const MARK_MOVED_ATTEMPTS: u32 = 8;

/// Before the plane signs `view`'s head for `origin`: asks every probe what
/// its witness holds, and refuses ([`JournalError::WouldSignRollback`]) a
/// head smaller than, or not extending, any of it. A high-water mark behind
/// the largest tree a witness holds, which extends it, is raised to that
/// tree, so the signature that follows is held to it whatever the log
/// became meanwhile. When the plane's
/// high-water mark of the origin is lost, it is raised to the largest tree a
/// witness holds, once every witness answered (else the refusal names those
/// that could not be asked), so the next signature is held to what the
/// witnesses saw.
pub fn ask_witnesses(
    view: &LogView<'_>,
    (origin, log_key): (&Origin, &witness::VerifierKey),
    probes: &[std::sync::Arc<dyn WitnessProbe>],
    high_water: Option<&dyn HighWater>,
) -> Result<WitnessViews, JournalError> {
    let tenant = view.tenant();
    let refuse = |reason: String| JournalError::WouldSignRollback { tenant: tenant.clone(), reason };
    let mut views = WitnessViews::default();
    // Asked all at once: one slow witness costs the round its own timeout,
    // not each witness's in turn.
    // A thread the system will not make (at its limit) asks in turn here.
    let answers: Vec<_> = std::thread::scope(|scope| {
        let asked: Vec<_> = probes
            .iter()
            .map(|probe| std::thread::Builder::new().spawn_scoped(scope, || probe.latest(origin)).map_err(|_| probe))
            .collect();
        asked
            .into_iter()
            .zip(probes)
            .map(|(asking, probe)| match asking {
                Ok(asking) => asking.join().unwrap_or_else(|_| {
                    Err(witness::WitnessError::Transport {
                        witness: probe.endpoint().to_owned(),
                        reason: "the thread asking it panicked".into(),
                    })
                }),
                Err(probe) => probe.latest(origin),
            })
            .collect()
    });
    for (probe, answer) in probes.iter().zip(answers) {
        let held = answer.and_then(|held| {
            held.map(|note| signed_by_the_plane(probe.endpoint(), &note, origin, log_key)).transpose()
        });
        match held {
            Ok(held) => {
                views.answered += 1;
                if let Some(tree) = held {
                    views.held.push((probe.endpoint().to_owned(), tree));
                }
            }
            Err(err) => {
                tracing::warn!(witness = probe.endpoint(), origin = %origin, "asking the witness what it holds: {err}");
                views.failures.push((probe.endpoint().to_owned(), err));
            }
        }
    }
    // A witness may hold more than `view` because another process of the
    // plane signed a larger tree (and had it cosigned) after the view was
    // opened: the log as it is now is held to it then, never the older
    // view, which is not a store older than what the witness holds.
    let fresh;
    let view = match views.held.iter().map(|(_, tree)| tree.size).max() {
        Some(largest) if largest > view.size() => {
            fresh = view.reopen()?;
            if fresh.size() > view.size() { &fresh } else { view }
        }
        _ => view,
    };
    let head = view.head()?.tree;
    for (witness, held) in &views.held {
        if let Err(err) = crate::log::extends_or_failed_read(view, head, held)? {
            let why = match err {
                tlog::ExtendsError::Verify(tlog::VerifyError::Shrinks { .. }) => "it is smaller".to_owned(),
                tlog::ExtendsError::Verify(tlog::VerifyError::SameSizeDifferentRoots { .. }) => {
                    "it has another root at that size".to_owned()
                }
                err => format!("it does not extend it: {err}"),
            };
            return Err(refuse(format!(
                "witness {witness} holds size {} (root {}) of {origin}; this store's log has size {} (root {}) and \
                 {why}: a store older than what the witnesses cosigned is in place, or its history was \
                 rewritten. Nothing was signed or sent. Put the store the plane last signed from back in place, \
                 then run `agentplane verify`. {}",
                held.size,
                held.root,
                head.size,
                head.root,
                crate::log::NO_NEWER_COPY
            )));
        }
    }
    let largest = views.held.iter().max_by_key(|(_, tree)| tree.size).cloned();
    let Some(high_water) = high_water else { return Ok(views) };
    let mut seen = high_water.last(origin).map_err(|err| crate::log::high_water_error(tenant, err))?;
    let mut moved = 0;
    loop {
        // A mark behind what a witness holds (another process of the plane
        // signed it, or the mark was put back from a backup) is raised to it
        // now: the signature is held to the mark, and the log may be rewritten
        // between this ask and the signature (a check of this view alone would
        // then bind nothing). So the tree must be proven to extend the mark: a
        // proof the store failed to give is that failure, and one that does not
        // verify is a refusal; either left the mark where it was, and the ask
        // answered as if all were well (review 46).
        while let Some(held) = match (&seen, largest.clone()) {
            (HighWaterMark::Never, Some((_, tree))) if tree.size > 0 => Some(tree),
            (HighWaterMark::Signed(mark), Some((witness, tree))) if tree.size > mark.size => {
                if let Err(err) = crate::log::extends_or_failed_read(view, tree, mark)? {
                    return Err(refuse(format!(
                        "witness {witness} holds size {} (root {}) of {origin}, and this store's log does not \
                         prove it extends size {} (root {}), the checkpoint this plane signed last ({err}): a \
                         store other than the one the plane signed from is in place, or its history was rewritten. \
                         Nothing was signed or sent. Put the store the plane last signed from back in place, then \
                         run `agentplane verify`. {}",
                        tree.size,
                        tree.root,
                        mark.size,
                        mark.root,
                        crate::log::NO_NEWER_COPY
                    )));
                }
                Some(tree)
            }
            _ => None,
        } {
            if raise_over(high_water, (tenant, origin), held, (&mut seen, &mut moved))? {
                return Ok(views);
            }
        }
        let HighWaterMark::Lost { reason } = &seen else { return Ok(views) };
        let mark = rebuilt_mark(&views, origin, probes.len(), high_water, reason, &refuse)?;
        if raise_over(high_water, (tenant, origin), mark, (&mut seen, &mut moved))? {
            return Ok(views);
        }
    }
}

/// Raises the mark of `origin` from `seen` to `tree`: `true` once raised,
/// `false` when another process of the plane wrote the mark meanwhile (it
/// signed, or raised it to what a witness holds), `seen` then what it says
/// now, so that `tree` is held to that and raised over it. Left there, the
/// signature that follows was held to the other process's tree alone, which
/// may be smaller (review 46). Past [`MARK_MOVED_ATTEMPTS`] moves, the
/// retryable [`JournalError::CheckpointConflict`].
fn raise_over(
    high_water: &dyn HighWater,
    (tenant, origin): (&TenantId, &Origin),
    tree: Tree,
    (seen, moved): (&mut HighWaterMark, &mut u32),
) -> Result<bool, JournalError> {
    match high_water.raise(origin, seen, tree).map_err(|err| crate::log::high_water_error(tenant, err))? {
        Raised::Raised => Ok(true),
        Raised::Moved(now) if *moved < MARK_MOVED_ATTEMPTS => {
            tracing::info!(origin = %origin, ?now, "the plane's mark was written by another process meanwhile");
            *seen = now;
            *moved += 1;
            Ok(false)
        }
        Raised::Moved(now) => Err(JournalError::CheckpointConflict {
            tenant: tenant.clone(),
            expected: Some(tree.size),
            found: match now {
                HighWaterMark::Signed(tree) => Some(tree.size),
                _ => None,
            },
        }),
    }
}

/// The tree a lost mark of `origin` starts again from: the largest the
/// witnesses hold (the empty tree when none holds one), once every one of
/// the `configured` witnesses answered; else the refusal, saying how to give
/// the mark back.
fn rebuilt_mark(
    views: &WitnessViews,
    origin: &Origin,
    configured: usize,
    high_water: &dyn HighWater,
    reason: &str,
    refuse: &dyn Fn(String) -> JournalError,
) -> Result<Tree, JournalError> {
    // A witness that serves no monitor endpoint (litewitness,
    // transparency-dev/witness) can never be asked: the mark comes back
    // from the operator, as with no witness at all. Nor can one whose
    // configuration no longer names the origin (its state still holds
    // what it cosigned) until its operator names it again.
    let failed = |what: fn(&witness::WitnessError) -> bool| views.failures.iter().any(|(_, err)| what(err));
    let cannot_say = if failed(|err| matches!(err, witness::WitnessError::NoMonitorEndpoint { .. })) {
        Some("A witness that serves no monitor endpoint can never say what it holds")
    } else if failed(|err| matches!(err, witness::WitnessError::UnknownOrigin { .. })) {
        Some(
            "A witness whose configuration does not name this origin cannot say what it cosigned for it \
             (until its operator names the log there again)",
        )
    } else {
        None
    };
    let by_hand = cannot_say.map_or_else(String::new, |cannot_say| {
        format!(
            ". {cannot_say}: put {} back from the copy kept with the key file, or write the line `{origin} SIZE \
             ROOT` of the newest checkpoint of this origin you hold (a witness's cosigned note, a saved \
             checkpoint; `{origin} never` if it never signed one, a tenant just added), then sign again",
            high_water.location()
        )
    });
    if views.answered == 0 {
        return Err(refuse(format!(
            "the plane's record of its last signature is lost ({reason}), and no witness could be asked what \
             it holds: nothing was signed. Make a witness reachable, or restore {} from a backup{by_hand}",
            high_water.location()
        )));
    }
    // A witness that could not be asked may hold a larger tree than all
    // that answered: rebuilding the mark from their answers alone could
    // sign a second root at a size it cosigned.
    if !views.failures.is_empty() {
        let unasked: Vec<String> = views.failures.iter().map(|(witness, err)| format!("{witness} ({err})")).collect();
        return Err(refuse(format!(
            "the plane's record of its last signature is lost ({reason}), and {} of the {} configured witnesses \
             could not be asked what they hold: {}. One of them may hold more than those that answered, so \
             nothing was signed. Make every witness reachable, or restore {} from a backup{by_hand}",
            views.failures.len(),
            configured,
            unasked.join("; "),
            high_water.location()
        )));
    }
    let largest = views.held.iter().map(|(_, tree)| *tree).max_by_key(|tree| tree.size);
    let mark = largest.unwrap_or_else(|| Tree::new(0, tlog::RootHash::empty()));
    tracing::warn!(
        origin = %origin,
        size = mark.size,
        "the plane's record of its last signature was lost ({reason}); {} witnesses answered: it starts again \
             from the largest tree they hold",
        views.answered
    );
    Ok(mark)
}

/// Why the cosigned notes a store keeps for a tenant cannot be trusted:
/// the store was written behind the plane's back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CosignedRowsError {
    /// A note that is not the plane's signed checkpoint of the tree kept
    /// beside it, or that carries a trusted witness's cosignature that does
    /// not verify ([`verify_cosigned_note`]).
    #[error("the store's cosigned checkpoint #{number} (size {size}) does not verify ({why})")]
    DoesNotVerify {
        /// Its place among the rows, from 1.
        number: usize,
        /// The size kept beside it.
        size: u64,
        /// Why not.
        why: String,
    },
    /// Two rows hold the plane's signatures of two roots at one size: the
    /// log's history forked, which no plane that never equivocates signs.
    #[error("the store's cosigned checkpoints #{first} and #{second} hold two roots at size {size}")]
    TwoRootsAtOneSize {
        /// The first row's place, from 1.
        first: usize,
        /// The second row's place, from 1.
        second: usize,
        /// The size.
        size: u64,
    },
}

/// How a stored cosigned note stands against the witnesses trusted now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CosignedStanding {
    /// Cosigned by at least the quorum of distinct trusted keys.
    Witnessed,
    /// Signed by the plane, but cosigned by fewer trusted keys than the
    /// quorum: witnesses retired since, or a quorum raised since. Genuine,
    /// yet not what the witnesses trusted now are known to hold.
    BelowQuorum {
        /// The distinct trusted keys that cosigned it.
        trusted: usize,
    },
}

/// The newest round the stored cosigned notes show the trusted witnesses
/// holding: the row of the largest size witnessed by today's quorum (its
/// place among the rows and its tree; `None` for none), whatever order the
/// rows were recorded in (two instances of a plane record their rounds as
/// they finish). Every row must be the plane's signed checkpoint of its tree
/// with no trusted cosignature that fails, and no two rows may hold two
/// roots at one size; a row below today's quorum (a witness replaced, a
/// quorum raised) is genuine and set aside. What the sweep and `checkpoint
/// --cosigned` both hold the rows to before they trust a size, a root or a
/// note.
pub fn verify_cosigned_rows(
    rows: &[crate::store::SignedTree],
    origin: &Origin,
    log_key: &witness::VerifierKey,
    witness_keys: &[witness::TrustedWitness],
    quorum: usize,
) -> Result<Option<(usize, Tree)>, CosignedRowsError> {
    verify_cosigned_rows_remembering(rows, origin, log_key, witness_keys, quorum, &RememberedStandings::default())
}

/// The standings of the cosigned rows a process has verified, each under
/// the digest of what was verified: its tree and its note, with the origin,
/// the log key, the trusted witness keys and the quorum it was held to. A
/// plane that sweeps for months keeps a row a round: verified afresh every
/// round, the round's cost grew with the plane's age (a row is one log
/// signature and a cosignature a witness). Remembered, a row is verified
/// once; a row rewritten since (a forged note, another tree) has another
/// digest and is verified again, so nothing a round trusts was verified
/// under other bytes or other keys.
#[derive(Debug, Default)]
pub struct RememberedStandings {
    verified: std::sync::Mutex<Standings>,
}

/// What [`RememberedStandings`] holds.
#[derive(Debug, Default)]
struct Standings {
    /// The standings by the digest of each row with the keys and quorum it
    /// was verified under: a runtime sweeps several tenants, each with its
    /// own origin and log key, and remembers the rows of each.
    by_row: std::collections::HashMap<[u8; 32], CosignedStanding>,
}

/// The most rows remembered: past it the memory is emptied and rows are
/// verified afresh (about 50 MB at the bound).
const MAX_REMEMBERED_ROWS: usize = 1 << 20;

impl RememberedStandings {
    /// How many rows are remembered as verified.
    pub fn len(&self) -> usize {
        self.verified.lock().unwrap_or_else(std::sync::PoisonError::into_inner).by_row.len()
    }

    /// Whether no row is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The digest of what every row is held to.
    fn context(
        origin: &Origin,
        log_key: &witness::VerifierKey,
        witness_keys: &[witness::TrustedWitness],
        quorum: usize,
    ) -> [u8; 32] {
        use sha2::{Digest as _, Sha256};
        let mut digest = Sha256::new();
        let keys = witness_keys.iter().map(|key| key.verifier_key().to_string());
        for part in [origin.as_str().to_owned(), log_key.to_string(), quorum.to_string()].into_iter().chain(keys) {
            digest.update((part.len() as u64).to_be_bytes());
            digest.update(part.as_bytes());
        }
        digest.finalize().into()
    }

    /// The digest of one row as verified under `context`.
    fn row(context: &[u8; 32], row: &SignedTree) -> [u8; 32] {
        use sha2::{Digest as _, Sha256};
        let mut digest = Sha256::new();
        digest.update(context);
        digest.update(row.tree.size.to_be_bytes());
        digest.update(row.tree.root.as_bytes());
        digest.update(row.note.as_bytes());
        digest.finalize().into()
    }
}

/// [`verify_cosigned_rows`], verifying only the rows `remembered` does not
/// hold verified under the same keys and quorum, and remembering those.
pub fn verify_cosigned_rows_remembering(
    rows: &[crate::store::SignedTree],
    origin: &Origin,
    log_key: &witness::VerifierKey,
    witness_keys: &[witness::TrustedWitness],
    quorum: usize,
    remembered: &RememberedStandings,
) -> Result<Option<(usize, Tree)>, CosignedRowsError> {
    let context = RememberedStandings::context(origin, log_key, witness_keys, quorum);
    let mut memory = remembered.verified.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let standings = &mut memory.by_row;
    if standings.len() > MAX_REMEMBERED_ROWS {
        standings.clear();
    }
    let mut by_size: std::collections::BTreeMap<u64, (usize, Tree)> = std::collections::BTreeMap::new();
    let mut newest: Option<(usize, Tree)> = None;
    for (i, row) in rows.iter().enumerate() {
        let digest = RememberedStandings::row(&context, row);
        let standing = match standings.get(&digest) {
            Some(standing) => *standing,
            None => {
                let standing = verify_cosigned_note(&row.note, row.tree, origin, log_key, witness_keys, quorum)
                    .map_err(|why| CosignedRowsError::DoesNotVerify { number: i + 1, size: row.tree.size, why })?;
                standings.insert(digest, standing);
                standing
            }
        };
        if let Some((first, tree)) = by_size.insert(row.tree.size, (i, row.tree))
            && tree.root != row.tree.root
        {
            return Err(CosignedRowsError::TwoRootsAtOneSize { first: first + 1, second: i + 1, size: row.tree.size });
        }
        if standing == CosignedStanding::Witnessed && newest.is_none_or(|(_, tree)| tree.size <= row.tree.size) {
            newest = Some((i, row.tree));
        }
    }
    Ok(newest)
}

/// Verifies one stored cosigned note before its size or root is trusted:
/// the log's signature with `log_key`, its checkpoint of `origin` and of
/// `tree` (the tree kept beside it), and every cosignature by a key among
/// `witness_keys`. Whether at least `quorum` distinct witnesses among them
/// cosigned it, or why the note does not verify.
pub fn verify_cosigned_note(
    note: &str,
    tree: Tree,
    origin: &Origin,
    log_key: &witness::VerifierKey,
    witness_keys: &[witness::TrustedWitness],
    quorum: usize,
) -> Result<CosignedStanding, String> {
    let (signed, verified) = witness::SignedCheckpoint::open(note.as_bytes(), &[log_key as &dyn witness::NoteVerifier])
        .map_err(|err| format!("the log's signature does not verify: {err}"))?;
    let checkpoint = signed.checkpoint();
    if checkpoint.origin() != origin.as_str() {
        return Err(format!("its checkpoint is of origin {}, not {origin}", checkpoint.origin()));
    }
    if checkpoint.tree() != tree {
        return Err(format!(
            "its checkpoint is of size {} (root {}), the tree kept beside it of size {} (root {})",
            checkpoint.tree().size,
            checkpoint.tree().root,
            tree.size,
            tree.root
        ));
    }
    let report = witness::verify_cosignatures(verified.text(), verified.other_signatures(), witness_keys)
        .map_err(|err| format!("a cosignature does not verify: {err}"))?;
    let witnesses = report.witnesses();
    Ok(if witnesses < quorum {
        CosignedStanding::BelowQuorum { trusted: witnesses }
    } else {
        CosignedStanding::Witnessed
    })
}

/// A round held, or why the plane refused to sign.
type Round = Result<(witness::SignedCheckpoint, witness::QuorumOutcome), String>;

/// What one witnessing round of a tenant's log came to (R-WIT-8, R-WIT-9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SweepOutcome {
    /// The log has not grown since the last round that met the bar.
    Skipped {
        /// The size already witnessed by a quorum.
        size: u64,
    },
    /// No witnesses are configured.
    NoWitnesses,
    /// A round was held: met, short, or an integrity refusal.
    Round(witness::QuorumOutcome),
    /// The plane refused to sign its own log (holes, or a tree that does not
    /// extend the last checkpoint it signed): nothing was signed or sent. An
    /// integrity finding, like a witness's refusal.
    RefusedToSign {
        /// Why.
        reason: String,
    },
}

/// The report of [`Runtime::sweep`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepReport {
    /// The tenant swept.
    pub tenant: TenantId,
    /// The tree submitted (or found already witnessed).
    pub tree: tlog::Tree,
    /// What happened.
    pub outcome: SweepOutcome,
}

impl SweepReport {
    /// A shortfall or an integrity refusal: a finding for the operator to clear.
    pub fn needs_attention(&self) -> bool {
        matches!(self.outcome, SweepOutcome::Round(witness::QuorumOutcome::Shortfall { .. }))
            || self.integrity_refusal()
    }

    /// A witness saw this log shrink or fork, or the plane itself refused to
    /// sign it for that reason.
    pub fn integrity_refusal(&self) -> bool {
        matches!(
            self.outcome,
            SweepOutcome::Round(witness::QuorumOutcome::IntegrityRefusal { .. }) | SweepOutcome::RefusedToSign { .. }
        )
    }
}

/// Whether any witness answered that the checkpoint was stale.
fn has_stale(outcome: &witness::QuorumOutcome) -> bool {
    let failures = match outcome {
        witness::QuorumOutcome::Met { failures, .. }
        | witness::QuorumOutcome::Shortfall { failures, .. }
        | witness::QuorumOutcome::IntegrityRefusal { failures, .. } => failures,
    };
    failures.iter().any(|failure| matches!(failure.error, witness::WitnessError::Stale { .. }))
}

/// The cosigned note of a met round: the checkpoint, the log's signature,
/// then every verified cosignature (one per identity).
fn cosigned_note(signed: &witness::SignedCheckpoint, outcome: &witness::QuorumOutcome) -> String {
    match outcome {
        witness::QuorumOutcome::Met { cosigned, .. } | witness::QuorumOutcome::IntegrityRefusal { cosigned, .. } => {
            signed.cosigned_note(cosigned.iter().flat_map(|c| c.cosignatures.iter()).map(|c| &c.signature))
        }
        witness::QuorumOutcome::Shortfall { .. } => signed.note().to_owned(),
    }
}

fn integrity(tenant: &TenantId, tree: tlog::Tree, what: &str) {
    tracing::error!(
        target: "agentplane.witness.integrity",
        tenant = %tenant,
        size = tree.size,
        root = %tree.root,
        "{what}"
    );
}

impl Runtime {
    /// Verifies every cosigned note the store keeps for the tenant (issue
    /// 21), each once in this runtime's life unless it was rewritten since
    /// ([`RememberedStandings`]); the tree of the last one, or why the rows
    /// cannot be trusted.
    fn verified_cosigned(
        &self,
        config: &super::TenantConfig,
        log_key: &witness::LogKey,
    ) -> Result<Option<Tree>, String> {
        let rows = self.store.cosigned_checkpoints(&config.tenant).map_err(|err| err.to_string())?;
        let needed = if self.witness_keys.is_empty() { 0 } else { self.quorum.needed() };
        let newest = verify_cosigned_rows_remembering(
            &rows,
            &config.origin,
            &log_key.verifier_key(),
            &self.witness_keys,
            needed,
            &self.cosigned_verified,
        )
        .map_err(|err| {
            format!(
                "{err}: the store was written behind the plane's back; nothing was signed or sent (run \
                     `agentplane verify`)"
            )
        })?;
        // Without witness keys no cosignature was checked: trust nothing.
        Ok(newest.map(|(_, tree)| tree).filter(|_| !self.witness_keys.is_empty()))
    }

    /// The refusal of a sweep over a log of another origin, or a store
    /// older than the plane's high-water mark (or with a damaged mark),
    /// before anything is appended to it; `None` when the store extends the
    /// mark, or no tree is marked (a lost mark is rebuilt from the
    /// witnesses later).
    fn refuse_older_store_to_sweep(&self, config: &super::TenantConfig) -> Result<Option<SweepReport>, RuntimeError> {
        let tenant = &config.tenant;
        let tree = LogView::open(self.store.as_ref(), tenant)?.head()?.tree;
        // A heads leaf appended under another origin would be a leaf of
        // another log in this one (R-PLANE-1).
        let another = crate::log::log_of_another_origin(self.store.as_ref(), tenant, tree.size, &config.origin)?;
        let older = match (another, self.high_water.as_deref()) {
            (Some(reason), _) => Ok(Some(reason)),
            (None, None) => return Ok(None),
            (None, Some(high_water)) => {
                crate::log::older_than_mark(self.store.as_ref(), tenant, &config.origin, high_water).map(|older| {
                    older.map(|reason| {
                        format!(
                            "{reason}. Nothing was signed, sent or appended: put the store the plane last signed \
                             from back in place, then run `agentplane verify`. {}",
                            crate::log::NO_NEWER_COPY
                        )
                    })
                })
            }
        };
        let reason = match older {
            Ok(None) => return Ok(None),
            Ok(Some(reason)) => reason,
            Err(JournalError::WouldSignRollback { reason, .. }) => reason,
            Err(err) => return Err(err.into()),
        };
        integrity(tenant, tree, &format!("the plane refused to sign its own log: {reason}"));
        Ok(Some(SweepReport { tenant: tenant.clone(), tree, outcome: SweepOutcome::RefusedToSign { reason } }))
    }

    /// Whether the tenant's witnesses are due to be asked what they hold.
    fn probe_due(&self, tenant: &TenantId) -> bool {
        match self.last_probe.lock() {
            Ok(last) => last.get(tenant).is_none_or(|at| at.elapsed() >= self.probe_every),
            Err(_) => true,
        }
    }

    fn probed(&self, tenant: &TenantId) {
        if let Ok(mut last) = self.last_probe.lock() {
            last.insert(tenant.clone(), std::time::Instant::now());
        }
    }

    /// Signs the tenant's current head (never a rollback) and holds one
    /// round: the tree, its signed note, and the outcome; or why the plane
    /// refused to sign.
    fn round(&self, config: &super::TenantConfig, log_key: &witness::LogKey) -> Result<Round, RuntimeError> {
        // The witnesses were asked before the round: asked again should
        // signing start over on a fresh view.
        let ask_again = |view: &LogView<'_>| {
            let log = log_key.verifier_key();
            ask_witnesses(view, (&config.origin, &log), &self.probes, self.high_water.as_deref()).map(drop)
        };
        let signing = sign_current_head_asking(
            self.store.as_ref(),
            &config.tenant,
            &config.origin,
            log_key,
            self.high_water.as_deref(),
            &ask_again,
        );
        let (view, signed) = match signing {
            Ok(signed) => signed,
            Err(JournalError::WouldSignRollback { reason, .. }) => return Ok(Err(reason)),
            Err(err) => return Err(err.into()),
        };
        let witnesses: Vec<&(dyn witness::Witness + Sync)> =
            self.witnesses.iter().map(|w| w.as_ref() as &(dyn witness::Witness + Sync)).collect();
        let outcome = witness::cosign_quorum(&witnesses, self.quorum, &signed, &view);
        Ok(Ok((signed, outcome)))
    }

    /// Submits the tenant's current checkpoint, signed now, to the configured
    /// witnesses and holds the round to the quorum. Off the run path: call it
    /// periodically. Every stored cosigned note is verified first (one that
    /// does not verify is an integrity refusal); a round is skipped when the
    /// log has not grown since the last round that met the bar, unless the
    /// witnesses are due to be asked what they hold
    /// ([`super::RuntimeBuilder::probe_every`]); before signing, a head that
    /// does not extend what a witness holds is refused; a shortfall or an integrity refusal is
    /// reported (`needs_attention`), and an integrity refusal is also logged to
    /// the tracing target `agentplane.witness.integrity`.
    pub fn sweep(&self, tenant: &TenantId) -> Result<SweepReport, RuntimeError> {
        let config = self.tenant(tenant)?;
        // Runs that moved since the last heads leaf make the log grow, so
        // the round is held even when no run was sealed (issue 20).
        if !self.witnesses.is_empty() && config.log_key.is_some() {
            // Held to the plane's mark before anything is written, as
            // `sign_current_head` holds it: a store put back from before the
            // plane's last signature got a heads leaf, a fork of the signed
            // log, and only then the refusal (review 28).
            if let Some(report) = self.refuse_older_store_to_sweep(config)? {
                return Ok(report);
            }
            self.store.append_heads(tenant, &config.origin)?;
        }
        // The rounds that met the bar, kept in the store, read before the
        // view: each is then of a tree the view holds. Read after it, a
        // round another process of the plane recorded meanwhile (of a
        // larger log) looked like a rewritten history.
        let kept = match &config.log_key {
            Some(log_key) if !self.witnesses.is_empty() => self.verified_cosigned(config, log_key),
            _ => Ok(None),
        };
        let view = LogView::open(self.store.as_ref(), tenant)?;
        let head = view.head()?;
        let report = |outcome| SweepReport { tenant: tenant.clone(), tree: head.tree, outcome };
        if self.witnesses.is_empty() {
            return Ok(report(SweepOutcome::NoWitnesses));
        }
        let refused = |reason: String| {
            integrity(tenant, head.tree, &format!("the plane refused to sign its own log: {reason}"));
            Ok(report(SweepOutcome::RefusedToSign { reason }))
        };
        let log_key = config.log_key.as_ref().ok_or_else(|| {
            RuntimeError::Checkpoint(format!("tenant {tenant} has no log key to sign its checkpoints"))
        })?;
        if head.source.has_holes() {
            return refused(
                "its positions have holes: sealed runs were removed behind the store (run `agentplane audit`)".into(),
            );
        }
        // Each kept note was verified before its size or root is trusted (a
        // forged row is an alarm).
        let last_met = match kept {
            Ok(last_met) => last_met,
            Err(reason) => return refused(reason),
        };
        let probe_due = self.probe_due(tenant);
        if let Some(met) = last_met {
            if met == head.tree && !probe_due {
                return Ok(report(SweepOutcome::Skipped { size: head.tree.size }));
            }
            if met.size >= head.tree.size && met != head.tree {
                return refused(format!(
                    "the log has {} sealed runs with root {}; a quorum cosigned size {} with root {}: its history was rewritten",
                    head.tree.size, head.tree.root, met.size, met.root
                ));
            }
            if let Err(err) = crate::log::extends_or_failed_read(&view, head.tree, &met)? {
                return refused(format!(
                    "the log of {} does not extend the checkpoint of {} a quorum cosigned ({err}): its history was rewritten",
                    head.tree.size, met.size
                ));
            }
        }
        // Ask the witnesses what they hold before anything is signed.
        match ask_witnesses(&view, (&config.origin, &log_key.verifier_key()), &self.probes, self.high_water.as_deref())
        {
            Ok(_) => self.probed(tenant),
            Err(JournalError::WouldSignRollback { reason, .. }) => return refused(reason),
            Err(err) => return Err(err.into()),
        }
        if last_met == Some(head.tree) {
            return Ok(report(SweepOutcome::Skipped { size: head.tree.size }));
        }
        drop(view);
        let mut round = self.round(config, log_key)?;
        // Another instance had the witnesses cosign more of this log: sign the
        // log as it is now and hold the round again, once. The witnesses
        // hold more than they did when asked, so they are asked again first:
        // what they hold now binds the new signature, as it bound the first
        // (the log may have been replaced meanwhile by another history that
        // extends all this plane signed, but not what they cosigned).
        // A witness that cannot be asked again (unreachable, or serving no
        // monitor endpoint) may hold the larger tree it answered stale
        // about, and a new signature would not be held to it: the first
        // round's answer stands, and the next sweep asks again.
        if let Ok((_, outcome)) = &round
            && has_stale(outcome)
        {
            let view = LogView::open(self.store.as_ref(), tenant)?;
            match ask_witnesses(
                &view,
                (&config.origin, &log_key.verifier_key()),
                &self.probes,
                self.high_water.as_deref(),
            ) {
                Ok(views) if views.failures.is_empty() => {}
                Ok(views) => {
                    for (witness, err) in &views.failures {
                        tracing::warn!(
                            tenant = %tenant,
                            witness = %witness,
                            "a witness answered stale and cannot be asked what it holds ({err}): not signing afresh \
                             until it can"
                        );
                    }
                    drop(view);
                    return self.finish_round(config, head.tree, round);
                }
                Err(JournalError::WouldSignRollback { reason, .. }) => {
                    let tree = view.head()?.tree;
                    drop(view);
                    return self.finish_round(config, tree, Err(reason));
                }
                Err(err) => return Err(err.into()),
            }
            drop(view);
            round = self.round(config, log_key)?;
        }
        self.finish_round(config, head.tree, round)
    }

    /// Keeps a round that met the bar, reports one that did not, and
    /// raises the alarm for a round the plane refused to sign (`head`: the
    /// tree it would have signed).
    fn finish_round(
        &self,
        config: &super::TenantConfig,
        head: Tree,
        round: Round,
    ) -> Result<SweepReport, RuntimeError> {
        let tenant = &config.tenant;
        let tree = match &round {
            Ok((signed, _)) => signed.checkpoint().tree(),
            Err(_) => head,
        };
        let report = |outcome| SweepReport { tenant: tenant.clone(), tree, outcome };
        let (signed, outcome) = match round {
            Ok(round) => round,
            Err(reason) => {
                integrity(tenant, tree, &format!("the plane refused to sign its own log: {reason}"));
                return Ok(report(SweepOutcome::RefusedToSign { reason }));
            }
        };
        match &outcome {
            witness::QuorumOutcome::Met { .. } => {
                let note = cosigned_note(&signed, &outcome);
                self.store.record_cosigned_checkpoint(tenant, SignedTree { tree, note })?;
            }
            witness::QuorumOutcome::IntegrityRefusal { refusals, quorum_met, .. } => {
                // A refusal is that witness's word alone (a 409 naming a
                // larger tree, a 422: no note the plane signed backs it), so
                // the quorum met beside it is kept, as it would be with that
                // witness away; the alarm is raised all the same. Thrown away,
                // one witness out of the quorum kept the plane from ever
                // recording a cosigned checkpoint (review 51).
                if *quorum_met {
                    let note = cosigned_note(&signed, &outcome);
                    self.store.record_cosigned_checkpoint(tenant, SignedTree { tree, note })?;
                }
                for refusal in refusals {
                    tracing::error!(
                        target: "agentplane.witness.integrity",
                        tenant = %tenant,
                        origin = %config.origin,
                        size = tree.size,
                        root = %tree.root,
                        witness = %refusal.witness,
                        "{}",
                        refusal.error
                    );
                }
            }
            witness::QuorumOutcome::Shortfall { got, needed, .. } => {
                tracing::warn!(tenant = %tenant, got, needed, "witness quorum not met");
            }
        }
        Ok(report(SweepOutcome::Round(outcome)))
    }
}
