#![doc = include_str!("../README.md")]

pub mod checkpoint;
pub mod client;
pub mod cosignature;
pub mod error;
pub mod keys;
pub mod note;
pub mod protocol;
pub mod server;

pub use checkpoint::{Checkpoint, LogKey, SignedCheckpoint};
pub use client::{
    CosignedCheckpoint, HttpWitness, LogHistory, QuorumOutcome, SplitView, SplitViewReport, Witness, WitnessFailure,
    WitnessQuorum, WitnessReader, cosign_quorum, split_view,
};
pub use cosignature::{
    Cosignature, CosignatureCheck, CosignatureReport, Cosigner, TrustedWitness, verify_cosignatures,
};
pub use error::{CheckpointError, CosignatureError, KeyError, NoteError, WitnessError};
pub use keys::{ALG_COSIGNATURE_V1, ALG_ED25519, ALG_ML_DSA_44, SignerKey, VerifierKey, key_id};
pub use note::{NoteSignature, NoteVerifier, VerifiedNote, open, parse_signature_lines, sign};
pub use server::{Clock, LogConfig, SystemClock, WitnessConfig, WitnessServer};
