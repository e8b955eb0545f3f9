#![doc = include_str!("../README.md")]

pub mod append;
pub mod chain;
pub mod chain_hash;
pub mod checkpoints;
pub mod clock;
pub mod compare;
pub mod encoding;
pub mod error;
pub mod export;
pub mod golden;
pub mod group_commit;
pub mod heads;
pub mod ids;
pub mod journal;
pub mod log;
pub mod memory;
pub mod record;
pub mod regression;
pub mod run_state;
pub mod runtime;
pub mod seal;
pub mod signature;
pub mod snapshot;
pub mod store;
#[cfg(feature = "testkit")]
pub mod testkit;
#[cfg(feature = "testkit")]
pub mod testkit_faults;
#[cfg(feature = "testkit")]
pub mod testkit_runtime;
pub mod version;
pub mod writer;

pub use chain::{
    ChainCheck, ChainHash, ExpectedHead, StoredRecord, Unvouched, VerifiedRecord, verify_links, verify_run,
    verify_run_owned, verify_run_owned_or_back,
};
pub use clock::{At, Clock, SteppingClock, SystemClock};
pub use error::{BuildSkew, ErrorClass, JournalError, StorageError, TamperKind};
pub use ids::{RunId, TenantId};
pub use journal::{Appended, Journal, VerifiedRun, last_conclusion};
pub use log::{HeadInclusion, LogHead, LogSource, LogView, RunInclusion, RunProof};
pub use memory::MemoryStore;
pub use record::{
    Budget, Build, CostOverflow, Counters, Dimension, DoubtAnswer, EffectResult, Holding, Outcome, Record, RecordBody,
    RecordKind, Verdict,
};
pub use run_state::RunState;
pub use runtime::{
    Admission, AdmitRequest, BuildError, EffectOutput, MAX_WITNESS_KEYS, RunHandle, RunStatus, Runtime, RuntimeBuilder,
    RuntimeError, SweepOutcome, SweepReport, TimeWindow,
};
pub use seal::SealLeaf;
#[cfg(feature = "signing")]
pub use signature::{Ed25519Signer, Ed25519Verifier};
pub use signature::{KeySignature, Prechecked, SignatureCheck, SignedHash, Signer, Verifier, VerifyOptions};
pub use snapshot::{CollectSnapshot, RecordsInRunOrder, RunTooLarge, SnapshotRun, TenantSnapshot, stream_snapshot};
pub use store::{AdmittedRun, AppendRequest, Conclusion, LogCounters, RunRows, SealEntry, SnapshotSink, Store};
pub use version::{Upcaster, Upcasters};
pub use witness::Origin;
