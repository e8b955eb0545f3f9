//! The frozen corpus (R-GOLD-1..3): the bytes this build writes for one
//! record of every kind, and a sealed export every build must verify. Tests
//! compare against `tests/golden/`; only `cargo xtask bless` rewrites it.

use serde::{Deserialize, Serialize};

use crate::chain::ChainHash;
use crate::error::JournalError;
use crate::ids::RunId;
use crate::record::{
    Budget, Build, CeilingRaised, Counters, Dimension, DoubtAnswer, DoubtAnswered, EffectDone, EffectResult,
    EffectStarted, Holding, Outcome, PlanFrozen, Record, RecordBody, Released, RunAdmitted, RunConcluded, StepMark,
    Verdict, WithholdingLifted,
};

/// The path of the record corpus, from the workspace root.
pub const RECORDS_PATH: &str = "tests/golden/records.jsonl";
/// The folder of frozen exports, from the workspace root: one file per export
/// format ever blessed ([`export_file_name`]), each of which every later build
/// must still verify (R-GOLD-2). Blessing adds a file; it never rewrites one.
pub const EXPORTS_DIR: &str = "tests/golden/exports";
/// The instant the golden records were written at (each a quarter second apart).
pub const GOLDEN_START_MILLIS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00.000Z
/// The step between the golden records' instants.
pub const GOLDEN_STEP_MILLIS: i64 = 250;

/// The file in [`EXPORTS_DIR`] that freezes this build's export format.
pub fn export_file_name() -> String {
    format!("{}.jsonl", crate::export::EXPORT_FORMAT.replace('/', "-"))
}

/// The file in [`EXPORTS_DIR`] that freezes this build's export of an open
/// run (its head covered by a heads leaf; format v4 and later).
pub fn open_export_file_name() -> String {
    format!("{}-open.jsonl", crate::export::EXPORT_FORMAT.replace('/', "-"))
}

/// The clock the golden corpus is written with.
pub fn golden_clock() -> Result<crate::clock::SteppingClock, JournalError> {
    let start = crate::clock::At::from_unix_millis(GOLDEN_START_MILLIS)
        .map_err(|err| JournalError::InvalidRecord(err.to_string()))?;
    Ok(crate::clock::SteppingClock::new(start, GOLDEN_STEP_MILLIS))
}

/// The golden tenant's origin, validated.
pub fn origin() -> Result<witness::Origin, JournalError> {
    witness::Origin::new(ORIGIN).map_err(|err| JournalError::InvalidRecord(err.to_string()))
}
/// The seed of the golden export's record signing key.
pub const RECORD_KEY_SEED: [u8; 32] = [0x52; 32];
/// The record key's id.
pub const RECORD_KEY_ID: &str = "spiffe://golden.test/agent";
/// The seed of the golden export's log key.
pub const LOG_KEY_SEED: [u8; 32] = [0x4c; 32];
/// The golden tenant's origin (and log key name).
pub const ORIGIN: &str = "golden.test/plane/tenant-a";

/// One corpus line: a record's chain digest and its exact bytes.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoldenLine {
    /// `SHA-256(prev || record)` in the corpus chain.
    pub chain_hash: String,
    /// The record's wire bytes, as text.
    pub record: String,
}

fn counters(tokens: u64, cost: u64) -> Counters {
    Counters { tokens, cost_micros: cost, steps: 1, effects: 1, wall_millis: 250 }
}

/// The writer the golden corpus names: fixed, so a version bump does not
/// change frozen bytes.
pub fn golden_build() -> Build {
    Build { name: "agentplane-journal-core".into(), version: "golden".into() }
}

/// One record of every kind, with fixed values and a fixed build.
pub fn golden_records() -> Result<Vec<Record>, JournalError> {
    let run = RunId::new("golden-run-0001")?;
    let build = golden_build();
    let effect = Some("ek:search-1".to_owned());
    let bodies: Vec<(Option<String>, RecordBody)> = vec![
        (
            None,
            RecordBody::RunAdmitted(RunAdmitted {
                tenant: "tenant-a".into(),
                idempotency_key: "idem-0001".into(),
                budget: Budget {
                    tokens: Some(10_000),
                    cost_micros: Some(2_500_000),
                    steps: Some(8),
                    effects: None,
                    wall_millis: Some(60_000),
                },
            }),
        ),
        (None, RecordBody::PlanFrozen(PlanFrozen { steps: vec!["search".into(), "summarize \"é\" \u{4e2d}".into()] })),
        (None, RecordBody::StepStarted(StepMark { step: "search".into() })),
        (
            effect.clone(),
            RecordBody::EffectStarted(EffectStarted { step: "search".into(), reserved: counters(500, 1_000) }),
        ),
        (
            effect.clone(),
            RecordBody::EffectDone(EffectDone {
                result: EffectResult::Ok { output: "{\"hits\":3}".into() },
                charged: counters(420, 840),
            }),
        ),
        (effect.clone(), RecordBody::Released(Released { holding: Holding::Reservation, amount: counters(80, 160) })),
        (None, RecordBody::StepFinished(StepMark { step: "search".into() })),
        (
            None,
            RecordBody::RunConcluded(RunConcluded {
                outcome: Outcome::Exhausted,
                verdict: Verdict::BudgetExceeded {
                    dimension: Dimension::Tokens,
                    ceiling: 10_000,
                    counters: counters(10_420, 20_840),
                },
                reason: "token ceiling 10000 crossed at 10420".into(),
            }),
        ),
        (None, RecordBody::CeilingRaised(CeilingRaised { dimension: Dimension::Tokens, ceiling: Some(20_000) })),
        (None, RecordBody::WithholdingLifted(WithholdingLifted { note: "lifted by operator".into() })),
        (effect, RecordBody::DoubtAnswered(DoubtAnswered { answer: DoubtAnswer::DidNotHappen })),
        (
            None,
            RecordBody::RunForked(crate::record::RunForked {
                source_run: "golden-run-0000".into(),
                at_seq: 5,
                source_hash: "00".repeat(32),
            }),
        ),
    ];
    let clock = golden_clock()?;
    Ok(bodies
        .into_iter()
        .enumerate()
        .map(|(i, (effect_key, body))| Record {
            run: run.clone(),
            seq: i as u64 + 1,
            at: crate::clock::Clock::now(&clock),
            effect_key,
            build: build.clone(),
            body,
        })
        .collect())
}

/// The record corpus as this build writes it.
pub fn records_corpus() -> Result<String, JournalError> {
    let mut prev = ChainHash::GENESIS;
    let mut out = String::new();
    for record in golden_records()? {
        let bytes = record.encode()?;
        prev = ChainHash::link(&prev, &bytes);
        let line = GoldenLine { chain_hash: prev.to_string(), record: String::from_utf8_lossy(&bytes).into_owned() };
        out.push_str(&serde_json::to_string(&line).map_err(|err| JournalError::InvalidRecord(err.to_string()))?);
        out.push('\n');
    }
    Ok(out)
}

/// The seed of the golden witness's cosigning key.
pub const WITNESS_KEY_SEED: [u8; 32] = [0x57; 32];
/// The golden witness's name.
pub const WITNESS_NAME: &str = "golden.test/witness";
/// When the golden witness cosigned (POSIX seconds): 2026-01-01T00:00:00Z.
pub const GOLDEN_COSIGNATURE_TIME: u64 = 1_767_225_600;

/// The golden witness's cosigner.
pub fn witness_cosigner() -> Result<witness::Cosigner, JournalError> {
    let key = witness::SignerKey::from_seed(WITNESS_NAME, witness::ALG_COSIGNATURE_V1, WITNESS_KEY_SEED)
        .map_err(|err| JournalError::InvalidRecord(err.to_string()))?;
    witness::Cosigner::new(key).map_err(|err| JournalError::InvalidRecord(err.to_string()))
}

/// The golden log key.
pub fn log_key() -> Result<witness::LogKey, JournalError> {
    let signer = witness::SignerKey::from_seed(ORIGIN, witness::ALG_ED25519, LOG_KEY_SEED)
        .map_err(|err| JournalError::InvalidRecord(err.to_string()))?;
    witness::LogKey::new(signer).map_err(|err| JournalError::InvalidRecord(err.to_string()))
}

/// The golden plane: two sealed runs, then `golden-run-0001`, sealed
/// (succeeded); or, when `open`, two failed (open) runs after the two
/// sealed ones, the last `golden-run-0001`.
#[cfg(feature = "signing")]
fn golden_plane(
    open: bool,
) -> Result<
    (crate::memory::MemoryStore, crate::ids::TenantId, witness::Origin, RunId, crate::journal::VerifiedRun),
    JournalError,
> {
    use crate::chain::ChainCheck;
    use crate::ids::TenantId;
    use crate::journal::Journal;
    use crate::memory::MemoryStore;
    use crate::signature::{Ed25519Signer, VerifyOptions};
    use crate::version::Upcasters;

    let store = MemoryStore::new();
    let tenant = TenantId::new("tenant-a")?;
    let signer = Ed25519Signer::from_seed(RECORD_KEY_ID, RECORD_KEY_SEED);
    let origin = origin()?;
    let clock = golden_clock()?;
    let build = golden_build();
    let journal = Journal::new(&store, &tenant, &origin).signed_by(&signer).timed_by(&clock).written_by(&build);
    // Two earlier sealed runs, so the proof has siblings.
    let mut target = None;
    // The open plane has one more open run, so the heads entry has a sibling.
    let names: &[&str] = if open {
        &["golden-a", "golden-b", "golden-open-0000", "golden-run-0001"]
    } else {
        &["golden-a", "golden-b", "golden-run-0001"]
    };
    for (n, name) in names.iter().enumerate() {
        let run = RunId::new(name)?;
        let mut head = None;
        for (effect_key, body) in [
            (
                None,
                RecordBody::RunAdmitted(RunAdmitted {
                    tenant: "tenant-a".into(),
                    idempotency_key: format!("idem-{n}"),
                    budget: Budget::default(),
                }),
            ),
            (None, RecordBody::PlanFrozen(PlanFrozen { steps: vec!["answer".into()] })),
            (None, RecordBody::StepStarted(StepMark { step: "answer".into() })),
            (
                Some(format!("ek:answer-{n}")),
                RecordBody::EffectStarted(EffectStarted { step: "answer".into(), reserved: Counters::default() }),
            ),
            (
                Some(format!("ek:answer-{n}")),
                RecordBody::EffectDone(EffectDone {
                    result: EffectResult::Ok { output: format!("answer {n}") },
                    charged: counters(100, 200),
                }),
            ),
            (None, RecordBody::StepFinished(StepMark { step: "answer".into() })),
            (
                None,
                RecordBody::RunConcluded(if open && n >= 2 {
                    RunConcluded {
                        outcome: Outcome::Failed,
                        verdict: Verdict::None,
                        reason: "the answer failed".into(),
                    }
                } else {
                    RunConcluded { outcome: Outcome::Succeeded, verdict: Verdict::None, reason: "plan complete".into() }
                }),
            ),
        ] {
            head = Some(journal.append(&run, head, effect_key, body)?.head);
        }
        target = Some(run);
    }
    let run = target.ok_or_else(|| JournalError::InvalidRecord("no run".into()))?;
    let upcasters = Upcasters::builtin();
    let verified =
        journal.read(&run, ChainCheck { upcasters: &upcasters, verifier: None, options: VerifyOptions::default() })?;
    Ok((store, tenant, origin, run, verified))
}

/// The golden witness's cosignature of `signed`, at the fixed time, as a
/// cosigned note holding `index` with `proof`.
#[cfg(feature = "signing")]
fn golden_cosigned(
    signed: &witness::SignedCheckpoint,
    index: u64,
    proof: &tlog::InclusionProof,
) -> Result<crate::export::CosignedInclusion, JournalError> {
    let cosignature = witness_cosigner()?
        .cosign(&signed.checkpoint().to_text(), GOLDEN_COSIGNATURE_TIME)
        .map_err(|err| JournalError::InvalidRecord(err.to_string()))?;
    Ok(crate::export::CosignedInclusion { note: signed.cosigned_note([&cosignature]), index, proof: proof.clone() })
}

/// A sealed, signed run exported, with every value fixed.
#[cfg(feature = "signing")]
pub fn export_corpus() -> Result<String, JournalError> {
    let (store, tenant, origin, run, verified) = golden_plane(false)?;
    let inclusion = crate::log::LogView::open(&store, &tenant)?.inclusion(&run)?;
    let signed = crate::log::sign_checkpoint(&origin, inclusion.tree, &log_key()?)?;
    // A witness cosigned that checkpoint: the export carries it (format v3).
    let cosigned = golden_cosigned(&signed, inclusion.index, &inclusion.proof)?;
    crate::export::write_export(
        &tenant,
        &origin,
        &run,
        &verified,
        crate::export::ExportProof::Seal(&inclusion),
        &signed,
        Some(&cosigned),
    )
}

/// An open (failed), signed run exported with the heads leaf that holds its
/// head (format v4), with every value fixed.
#[cfg(feature = "signing")]
pub fn open_export_corpus() -> Result<String, JournalError> {
    let (store, tenant, origin, run, verified) = golden_plane(true)?;
    let (view, signed) = crate::log::sign_current_head(&store, &tenant, &origin, &log_key()?, None)?;
    let head = view.head_inclusion(&run)?;
    let cosigned = golden_cosigned(&signed, head.index, &head.proof)?;
    crate::export::write_export(
        &tenant,
        &origin,
        &run,
        &verified,
        crate::export::ExportProof::Head(&head),
        &signed,
        Some(&cosigned),
    )
}
