#![doc = include_str!("../README.md")]

pub mod checkpoint;
#[cfg(feature = "client")]
pub mod client;
pub mod cosignature;
pub mod error;
pub mod keys;
pub mod note;
pub mod protocol;
pub mod quorum;
pub mod text;

pub use checkpoint::{Checkpoint, LogKey, Origin, SignedCheckpoint};
#[cfg(feature = "client")]
pub use client::{HttpWitness, WitnessReader, split_view};
pub use cosignature::{
    Cosignature, CosignatureCheck, CosignatureReport, Cosigner, SubtreeStatement, TrustedWitness, check_distinct_keys,
    count_witnesses, verify_cosignatures,
};
pub use error::{CheckpointError, CosignatureError, HistoryError, KeyError, NoteError, WitnessError};
pub use keys::{ALG_COSIGNATURE_V1, ALG_ED25519, ALG_ML_DSA_44, SignerKey, VerifierKey, key_id, may_be_key_material};
pub use note::{NoteSignature, NoteVerifier, VerifiedNote, assemble, open, parse_signature_lines, sign, split_note};
pub use quorum::{
    CosignedCheckpoint, LogHistory, QuorumOutcome, SplitView, SplitViewReport, Witness, WitnessFailure,
    WitnessIdentity, WitnessQuorum, cosign_quorum, find_split_views,
};
