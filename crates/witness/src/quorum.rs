//! The witness protocol without I/O: what a log offers a witness client
//! ([`LogHistory`]), what a witness does ([`Witness`]), how a round is held to
//! a quorum ([`cosign_quorum`]) and how readings of several witnesses reveal a
//! split view ([`find_split_views`]). The HTTP client that implements
//! [`Witness`] lives in `client`, behind the `client` feature.

use tlog::{ConsistencyProof, ExtendsError, MemoryHashStore, RootHash, Tree, VerifyError};

use crate::checkpoint::{Checkpoint, SignedCheckpoint};
use crate::cosignature::{Cosignature, TrustedWitness, verify_cosignatures};
use crate::error::{HistoryError, WitnessError};
use crate::note::parse_signature_lines;
use crate::protocol::AddCheckpointRequest;

/// What the log offers a client: its roots and consistency proofs at any size
/// it has reached, and whether it has reached a size at all (so a witness
/// ahead of a stale checkpoint is not mistaken for a log that lost history).
pub trait LogHistory {
    /// The root of the first `size` leaves.
    fn root_at(&self, size: u64) -> Result<RootHash, HistoryError>;
    /// The consistency proof from `old_size` to `new_size`, for any
    /// `0 < old_size <= new_size <= ` the log's size.
    fn consistency_proof(&self, old_size: u64, new_size: u64) -> Result<ConsistencyProof, HistoryError>;
    /// Whether the log has reached `size` leaves by now (it may have grown
    /// since the checkpoint being submitted was signed).
    fn reached(&self, size: u64) -> Result<bool, HistoryError>;
}

impl LogHistory for MemoryHashStore {
    fn root_at(&self, size: u64) -> Result<RootHash, HistoryError> {
        Ok(tlog::tree_root(self, size)?)
    }

    fn consistency_proof(&self, old_size: u64, new_size: u64) -> Result<ConsistencyProof, HistoryError> {
        Ok(tlog::prove_consistency(self, old_size, new_size)?)
    }

    fn reached(&self, size: u64) -> Result<bool, HistoryError> {
        Ok(size <= self.size())
    }
}

/// A checkpoint with verified cosignatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosignedCheckpoint {
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// Verified cosignatures from trusted witnesses (at least one).
    pub cosignatures: Vec<Cosignature>,
}

/// Who a witness is: the public key its cosignatures are checked against. A
/// quorum counts identities, not endpoints and not names (R-AUD-10): a
/// cosignature/v1 signature does not cover the name, so two identities are
/// equal (and order, and hash) by public key alone; the name and key id are
/// there to say which entry it was.
#[derive(Debug, Clone)]
pub struct WitnessIdentity {
    /// The key name.
    pub name: String,
    /// The key id.
    pub key_id: u32,
    /// The public key (without the algorithm byte).
    pub public_key: Vec<u8>,
}

impl WitnessIdentity {
    /// The identity of a trusted witness key.
    pub fn of(trusted: &TrustedWitness) -> Self {
        Self { name: trusted.name().to_owned(), key_id: trusted.key_id(), public_key: trusted.public_key().to_vec() }
    }

    /// The identity behind a verified cosignature.
    pub fn of_cosignature(cosignature: &Cosignature) -> Self {
        Self { name: cosignature.name.clone(), key_id: cosignature.key_id, public_key: cosignature.public_key.clone() }
    }
}

impl PartialEq for WitnessIdentity {
    fn eq(&self, other: &Self) -> bool {
        self.public_key == other.public_key
    }
}

impl Eq for WitnessIdentity {}

impl std::hash::Hash for WitnessIdentity {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.public_key.hash(state);
    }
}

impl PartialOrd for WitnessIdentity {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for WitnessIdentity {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.public_key.cmp(&other.public_key)
    }
}

/// A witness a log submits to. Implemented by `HttpWitness` (feature `client`).
pub trait Witness {
    /// A name for reports: the URL.
    fn endpoint(&self) -> &str;
    /// The identities whose cosignatures this client accepts.
    fn identities(&self) -> Vec<WitnessIdentity>;
    /// Submits a signed checkpoint with a consistency proof from the size the
    /// witness last cosigned, and returns its verified cosignatures.
    fn add_checkpoint(
        &self,
        signed: &SignedCheckpoint,
        history: &dyn LogHistory,
    ) -> Result<CosignedCheckpoint, WitnessError>;
}

/// Builds and checks the add-checkpoint request from `old_size` before
/// anything is sent (R-WIT-2): the checkpoint must extend the log's own tree
/// at `old_size` by [`Tree::extends`] (a size-zero checkpoint carries the
/// empty root, the proof verifies against the log's own roots), so no 422 is
/// ever caused by this log's own input.
pub fn build_request(
    signed: &SignedCheckpoint,
    old_size: u64,
    history: &dyn LogHistory,
) -> Result<AddCheckpointRequest, WitnessError> {
    let tree = signed.checkpoint().tree();
    if old_size > tree.size {
        return Err(WitnessError::OldSizeBeyondCheckpoint { old_size, new_size: tree.size });
    }
    let history_error = |source: HistoryError| WitnessError::History { old_size, new_size: tree.size, source };
    // The log's root at size 0 is the empty root by definition, not a read.
    let older = match old_size {
        0 => Tree::empty(),
        _ => Tree::new(old_size, history.root_at(old_size).map_err(history_error)?),
    };
    let proof = tree.extends_with(&older, |old, new| history.consistency_proof(old, new)).map_err(|err| match err {
        ExtendsError::Prove(source) => history_error(source),
        ExtendsError::Verify(VerifyError::EmptyTreeRoot) => WitnessError::EmptyTreeRootMismatch,
        ExtendsError::Verify(err) => {
            WitnessError::OwnProofInvalid { old_size, new_size: tree.size, reason: err.to_string() }
        }
    })?;
    Ok(AddCheckpointRequest { old_size, proof, checkpoint_note: signed.note().to_owned() })
}

/// Verifies the cosignature lines a witness answered over a checkpoint body;
/// at least one must come from a trusted witness.
pub fn verified_cosignatures(
    witness: &str,
    checkpoint: &Checkpoint,
    lines: &str,
    trusted: &[TrustedWitness],
    status: u16,
) -> Result<CosignedCheckpoint, WitnessError> {
    let signatures = parse_signature_lines(lines).map_err(|err| WitnessError::BadAnswer {
        witness: witness.to_owned(),
        status,
        reason: err.to_string(),
    })?;
    let report = verify_cosignatures(&checkpoint.to_text(), &signatures, trusted)
        .map_err(|source| WitnessError::Cosignature { witness: witness.to_owned(), source })?;
    if report.valid.is_empty() {
        return Err(WitnessError::NoTrustedCosignature { witness: witness.to_owned() });
    }
    Ok(CosignedCheckpoint { checkpoint: checkpoint.clone(), cosignatures: report.valid })
}

/// How many verified cosignatures a round needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WitnessQuorum(usize);

impl WitnessQuorum {
    /// A quorum of `n` witnesses.
    pub const fn of(n: usize) -> Self {
        Self(n)
    }

    /// The number of cosignatures needed.
    pub const fn needed(&self) -> usize {
        self.0
    }
}

/// One witness's failure in a round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessFailure {
    /// The witness's endpoint.
    pub witness: String,
    /// What happened.
    pub error: WitnessError,
}

/// The result of a submission round: three answers kept apart (R-WIT-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuorumOutcome {
    /// Enough witnesses cosigned and none saw the log misbehave.
    Met {
        /// Every verified cosignature.
        cosigned: Vec<CosignedCheckpoint>,
        /// Witnesses that did not cosign, for reasons that are not integrity.
        failures: Vec<WitnessFailure>,
    },
    /// Too few cosignatures: a finding to clear.
    Shortfall {
        /// Cosignatures gathered.
        got: usize,
        /// Cosignatures needed.
        needed: usize,
        /// Why the others did not cosign.
        failures: Vec<WitnessFailure>,
    },
    /// A witness saw this log fork or its history move. Reported whether or
    /// not the quorum was met.
    IntegrityRefusal {
        /// The witnesses that refused on integrity grounds.
        refusals: Vec<WitnessFailure>,
        /// Every verified cosignature of the others: a refusal is one
        /// witness's word (a 409 or a 422 carries no proof), so a quorum met
        /// beside it is kept, never thrown away with the refusal.
        cosigned: Vec<CosignedCheckpoint>,
        /// Cosignatures gathered all the same.
        got: usize,
        /// Cosignatures needed.
        needed: usize,
        /// Whether `got >= needed`.
        quorum_met: bool,
        /// Every other failure.
        failures: Vec<WitnessFailure>,
    },
}

/// Submits `signed` to every witness concurrently and holds the round to `quorum`.
pub fn cosign_quorum(
    witnesses: &[&(dyn Witness + Sync)],
    quorum: WitnessQuorum,
    signed: &SignedCheckpoint,
    history: &(dyn LogHistory + Sync),
) -> QuorumOutcome {
    let submit =
        |witness: &&(dyn Witness + Sync)| (witness.endpoint().to_owned(), witness.add_checkpoint(signed, history));
    // A thread the system will not make (at its limit) submits in turn here.
    let results: Vec<(String, Result<CosignedCheckpoint, WitnessError>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = witnesses
            .iter()
            .map(|witness| {
                std::thread::Builder::new().spawn_scoped(scope, move || submit(witness)).map_err(|_| witness)
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| match handle {
                Ok(handle) => handle.join().unwrap_or_else(|_| {
                    (
                        String::from("?"),
                        Err(WitnessError::Transport {
                            witness: "?".into(),
                            reason: "submission thread panicked".into(),
                        }),
                    )
                }),
                Err(witness) => submit(witness),
            })
            .collect()
    });
    let mut cosigned = Vec::new();
    let mut refusals = Vec::new();
    let mut failures = Vec::new();
    for (witness, result) in results {
        match result {
            // Only cosignatures of the checkpoint submitted count, and only
            // they are kept beside it: lines of another root or size verify
            // over that checkpoint, never over ours.
            Ok(ok) if ok.checkpoint != *signed.checkpoint() => {
                let tree = ok.checkpoint.tree();
                let error = WitnessError::BadAnswer {
                    witness: witness.clone(),
                    status: 200,
                    reason: format!(
                        "its cosignatures are of another checkpoint (size {}, root {}), not the one submitted",
                        tree.size, tree.root
                    ),
                };
                failures.push(WitnessFailure { witness, error });
            }
            Ok(ok) => cosigned.push(ok),
            Err(error) if error.is_integrity() => refusals.push(WitnessFailure { witness, error }),
            Err(error) => failures.push(WitnessFailure { witness, error }),
        }
    }
    // Witnesses, not answers nor keys: one witness listed twice, two URLs of
    // one witness, one key under two names, or one name's two keys is one
    // cosigner (R-AUD-10).
    let got = crate::count_witnesses(
        cosigned.iter().flat_map(|c| c.cosignatures.iter().map(|c| (c.name.as_str(), c.public_key.as_slice()))),
    );
    let needed = quorum.needed();
    if !refusals.is_empty() {
        return QuorumOutcome::IntegrityRefusal {
            refusals,
            cosigned,
            got,
            needed,
            quorum_met: got >= needed,
            failures,
        };
    }
    if got >= needed {
        QuorumOutcome::Met { cosigned, failures }
    } else {
        QuorumOutcome::Shortfall { got, needed, failures }
    }
}

/// Two witnesses holding two roots for one size of one log (R-WIT-5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitView {
    /// The size with two roots.
    pub size: u64,
    /// Each witness with the root it cosigned.
    pub views: Vec<(String, RootHash)>,
}

/// What reading several witnesses found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SplitViewReport {
    /// Sizes at which witnesses disagree on the root.
    pub split_views: Vec<SplitView>,
    /// Verified checkpoints read, by witness.
    pub read: Vec<(String, CosignedCheckpoint)>,
    /// Witnesses that could not be read.
    pub failures: Vec<WitnessFailure>,
}

/// The sizes at which the checkpoints read from several witnesses disagree on
/// the root (R-WIT-5): each such size is a split view naming every witness
/// and the root it holds.
pub fn find_split_views(read: &[(String, CosignedCheckpoint)]) -> Vec<SplitView> {
    let mut by_size: Vec<(u64, Vec<(String, RootHash)>)> = Vec::new();
    for (witness, cosigned) in read {
        let tree = cosigned.checkpoint.tree();
        match by_size.iter_mut().find(|(size, _)| *size == tree.size) {
            Some((_, views)) => views.push((witness.clone(), tree.root)),
            None => by_size.push((tree.size, vec![(witness.clone(), tree.root)])),
        }
    }
    by_size
        .into_iter()
        .filter(|(_, views)| views.windows(2).any(|pair| matches!(pair, [a, b] if a.1 != b.1)))
        .map(|(size, views)| SplitView { size, views })
        .collect()
}
