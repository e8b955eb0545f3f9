//! Records: the typed bodies of every kind, the envelope around them, the one
//! canonical encoding, and the read pipeline (hash first, then `(kind, v)`,
//! then the upcaster registry, then the strict parse).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::clock::At;
use crate::error::{BuildSkew, JournalError};
use crate::ids::RunId;
use crate::version::Upcasters;

/// The most bytes one record may hold as written (its canonical JSON): an
/// effect's output is kept in the journal to be replayed, so a record is
/// read whole by every resume, audit and export, and a plane refuses what
/// it could not read back in bounded memory. Large artifacts belong in an
/// object store, the record holding their reference and digest.
pub const MAX_RECORD_BYTES: usize = 16 << 20;

/// Refuses a record of `bytes` bytes past [`MAX_RECORD_BYTES`]: before it
/// is hashed or signed, and again at every store's append gate.
pub fn within_record_bound(run: &RunId, seq: u64, bytes: usize) -> Result<(), JournalError> {
    if bytes > MAX_RECORD_BYTES {
        return Err(JournalError::RecordTooLarge { run: run.clone(), seq, bytes, max: MAX_RECORD_BYTES });
    }
    Ok(())
}
pub use crate::writer::Build;

/// Reads an `Option` field that must be present (`null` for none): serde
/// would otherwise read a missing field as `None`, and a record missing its
/// budget ceiling would read as "unlimited" (R-VER-3: a missing field is a
/// shape this build does not read, like an unknown one).
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer)
}

/// A budget dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Model tokens.
    Tokens,
    /// Cost in micro-units of the plane's currency.
    CostMicros,
    /// Steps started.
    Steps,
    /// Effects performed.
    Effects,
    /// Wall time in milliseconds.
    WallMillis,
}

impl Dimension {
    /// Every dimension, in a fixed order.
    pub const ALL: [Dimension; 5] =
        [Dimension::Tokens, Dimension::CostMicros, Dimension::Steps, Dimension::Effects, Dimension::WallMillis];
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Tokens => "tokens",
            Self::CostMicros => "cost_micros",
            Self::Steps => "steps",
            Self::Effects => "effects",
            Self::WallMillis => "wall_millis",
        })
    }
}

/// Counters in every dimension. Also used as ceilings (a `None` ceiling is
/// unlimited) through [`Budget`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counters {
    /// Model tokens.
    pub tokens: u64,
    /// Cost in micro-units.
    pub cost_micros: u64,
    /// Steps started.
    pub steps: u64,
    /// Effects performed.
    pub effects: u64,
    /// Wall time in milliseconds.
    pub wall_millis: u64,
}

impl Counters {
    /// The counter of one dimension.
    pub fn get(&self, dimension: Dimension) -> u64 {
        match dimension {
            Dimension::Tokens => self.tokens,
            Dimension::CostMicros => self.cost_micros,
            Dimension::Steps => self.steps,
            Dimension::Effects => self.effects,
            Dimension::WallMillis => self.wall_millis,
        }
    }

    /// These counters and `other` added, or the first dimension whose total
    /// passes `u64::MAX`: what a figure reported as a total is made with,
    /// never held at the limit (R-RUN-7).
    pub fn checked_add(&self, other: &Counters) -> Result<Counters, CostOverflow> {
        let sum = |dimension: Dimension| {
            self.get(dimension).checked_add(other.get(dimension)).ok_or(CostOverflow { dimension })
        };
        Ok(Counters {
            tokens: sum(Dimension::Tokens)?,
            cost_micros: sum(Dimension::CostMicros)?,
            steps: sum(Dimension::Steps)?,
            effects: sum(Dimension::Effects)?,
            wall_millis: sum(Dimension::WallMillis)?,
        })
    }

    /// Adds `other` to these counters, saturating: what a budget is held to
    /// (a counter at the limit crosses every ceiling). A figure reported as
    /// a total is made with [`Counters::checked_add`].
    pub fn add(&mut self, other: &Counters) {
        self.tokens = self.tokens.saturating_add(other.tokens);
        self.cost_micros = self.cost_micros.saturating_add(other.cost_micros);
        self.steps = self.steps.saturating_add(other.steps);
        self.effects = self.effects.saturating_add(other.effects);
        self.wall_millis = self.wall_millis.saturating_add(other.wall_millis);
    }
}

/// A total past `u64::MAX` in one dimension. A total held at the limit
/// would hide every charge counted after it (the figure stops moving), so
/// no figure is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the {dimension} total passes {max} (u64::MAX), so it has no exact figure: a total held at the limit would hide \
     every charge counted after it. Count a narrower scope (one run, or a --since/--until window), and look at the \
     effect whose record charged that much",
    max = u64::MAX
)]
pub struct CostOverflow {
    /// The dimension whose total passed the limit.
    pub dimension: Dimension,
}

/// Ceilings per dimension; `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Token ceiling.
    #[serde(deserialize_with = "present")]
    pub tokens: Option<u64>,
    /// Cost ceiling in micro-units.
    #[serde(deserialize_with = "present")]
    pub cost_micros: Option<u64>,
    /// Step ceiling.
    #[serde(deserialize_with = "present")]
    pub steps: Option<u64>,
    /// Effect ceiling.
    #[serde(deserialize_with = "present")]
    pub effects: Option<u64>,
    /// Wall-time ceiling in milliseconds.
    #[serde(deserialize_with = "present")]
    pub wall_millis: Option<u64>,
}

impl Budget {
    /// The ceiling of one dimension.
    pub fn ceiling(&self, dimension: Dimension) -> Option<u64> {
        match dimension {
            Dimension::Tokens => self.tokens,
            Dimension::CostMicros => self.cost_micros,
            Dimension::Steps => self.steps,
            Dimension::Effects => self.effects,
            Dimension::WallMillis => self.wall_millis,
        }
    }

    /// Sets the ceiling of one dimension.
    pub fn set_ceiling(&mut self, dimension: Dimension, ceiling: Option<u64>) {
        let slot = match dimension {
            Dimension::Tokens => &mut self.tokens,
            Dimension::CostMicros => &mut self.cost_micros,
            Dimension::Steps => &mut self.steps,
            Dimension::Effects => &mut self.effects,
            Dimension::WallMillis => &mut self.wall_millis,
        };
        *slot = ceiling;
    }

    /// The first dimension whose counter is above its ceiling.
    pub fn first_exceeded(&self, counters: &Counters) -> Option<(Dimension, u64)> {
        Dimension::ALL
            .into_iter()
            .find_map(|d| self.ceiling(d).filter(|ceiling| counters.get(d) > *ceiling).map(|ceiling| (d, ceiling)))
    }
}

/// How a run ended (for now). Succeeded, cancelled and abandoned seal the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Finished its plan. Seals.
    Succeeded,
    /// Cancelled by its owner. Seals.
    Cancelled,
    /// Given up for good. Seals.
    Abandoned,
    /// An effect failed; a resume may continue it.
    Failed,
    /// A budget ceiling was crossed; a raised ceiling continues it.
    Exhausted,
    /// Held by an operator; lifting continues it.
    Withheld,
    /// An effect's fate is unknown; a person's answer continues it.
    Quarantined,
}

impl Outcome {
    /// Every outcome.
    pub const ALL: [Outcome; 7] = [
        Outcome::Succeeded,
        Outcome::Cancelled,
        Outcome::Abandoned,
        Outcome::Failed,
        Outcome::Exhausted,
        Outcome::Withheld,
        Outcome::Quarantined,
    ];

    /// Whether this conclusion seals the run (R-RUN-1).
    pub fn seals(&self) -> bool {
        matches!(self, Self::Succeeded | Self::Cancelled | Self::Abandoned)
    }

    /// The lowercase name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Cancelled => "cancelled",
            Self::Abandoned => "abandoned",
            Self::Failed => "failed",
            Self::Exhausted => "exhausted",
            Self::Withheld => "withheld",
            Self::Quarantined => "quarantined",
        }
    }

    /// Parses the lowercase name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == text)
    }

    /// A stored outcome name this build does not know (a newer build's, or
    /// forged), as a read keeps it to report: at most
    /// [`MAX_UNKNOWN_OUTCOME_CHARS`] characters, so that a forged row of a
    /// megabyte makes no message of one.
    pub fn unknown_name(text: &str) -> String {
        match text.char_indices().nth(MAX_UNKNOWN_OUTCOME_CHARS) {
            Some((cut, _)) => format!("{}... (cut)", text.get(..cut).unwrap_or_default()),
            None => text.to_owned(),
        }
    }
}

/// The most of an unknown outcome name a read keeps ([`Outcome::unknown_name`]).
pub const MAX_UNKNOWN_OUTCOME_CHARS: usize = 64;

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The machine-readable reason behind a conclusion (R-RUN-4): no control
/// flow ever parses the human reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Verdict {
    /// A ceiling was crossed.
    BudgetExceeded {
        /// Which dimension.
        dimension: Dimension,
        /// Its ceiling.
        ceiling: u64,
        /// The counters when it was crossed.
        counters: Counters,
    },
    /// An effect started and has no recorded end.
    Doubt {
        /// The effect.
        effect_key: String,
    },
    /// An effect reported an error.
    EffectFailed {
        /// The effect.
        effect_key: String,
        /// Its error, cut after
        /// [`MAX_VERDICT_ERROR_BYTES`](crate::runtime::handle::MAX_VERDICT_ERROR_BYTES)
        /// (the whole error is the effect's `EffectDone` record's).
        error: String,
    },
    /// No machine reason beyond the outcome.
    None,
}

/// What an effect produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum EffectResult {
    /// It happened, with this output (opaque text, often JSON).
    Ok {
        /// The output.
        output: String,
    },
    /// It failed with this error.
    Err {
        /// The error.
        error: String,
    },
}

/// A person's answer to a doubt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DoubtAnswer {
    /// It happened, with this result.
    Happened {
        /// The result to record.
        result: EffectResult,
    },
    /// It did not happen; it may be performed again.
    DidNotHappen,
}

/// What a `Released` record releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Holding {
    /// A budget reservation made for an effect.
    Reservation,
    /// A lease on an outside resource.
    Lease,
}

/// `RunAdmitted`: a run enters the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunAdmitted {
    /// The tenant.
    pub tenant: String,
    /// The admission's idempotency key.
    pub idempotency_key: String,
    /// The ceilings.
    pub budget: Budget,
}

/// `PlanFrozen`: the plan the run follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFrozen {
    /// Step names, in order.
    pub steps: Vec<String>,
}

/// `StepStarted` / `StepFinished`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepMark {
    /// The step's name.
    pub step: String,
}

/// `EffectStarted`: about to perform an effect (its key is in the envelope).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffectStarted {
    /// The step performing it.
    pub step: String,
    /// The budget reserved for it.
    pub reserved: Counters,
}

/// `EffectDone`: the effect's result and what it cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffectDone {
    /// Its result.
    pub result: EffectResult,
    /// What it charged.
    pub charged: Counters,
}

/// `Released`: a reservation or lease is released.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Released {
    /// What kind of holding.
    pub holding: Holding,
    /// The amounts released (for a reservation).
    pub amount: Counters,
}

/// `RunConcluded`: how the run ended, machine-readable and for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConcluded {
    /// The outcome.
    pub outcome: Outcome,
    /// The machine reason.
    pub verdict: Verdict,
    /// The human reason.
    pub reason: String,
}

/// `CeilingRaised`: an operator raised a ceiling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CeilingRaised {
    /// The dimension.
    pub dimension: Dimension,
    /// The new ceiling (`None`: unlimited).
    #[serde(deserialize_with = "present")]
    pub ceiling: Option<u64>,
}

/// `WithholdingLifted`: an operator lifted a withholding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithholdingLifted {
    /// Who lifted it, or why.
    pub note: String,
}

/// `DoubtAnswered`: a person answered a doubt about an effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DoubtAnswered {
    /// The answer.
    pub answer: DoubtAnswer,
}

/// `RunForked`: this run was forked from another at a record of its chain;
/// the source's effects up to that record are served from the source's
/// record, not performed again. It follows `RunAdmitted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunForked {
    /// The run forked from.
    pub source_run: String,
    /// The seq of the source's record the fork starts after.
    pub at_seq: u64,
    /// That record's chain hash (lowercase hex): the provenance the audit checks.
    pub source_hash: String,
}

macro_rules! kinds {
    ($($kind:ident($body:ty) = $version:literal, effect_key: $has_key:literal;)*) => {
        /// The kind of a record, stored beside it as a column.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RecordKind { $(#[doc = stringify!($kind)] $kind,)* }

        impl RecordKind {
            /// Every kind.
            pub const ALL: &'static [RecordKind] = &[$(RecordKind::$kind,)*];

            /// The name on the wire.
            pub fn as_str(&self) -> &'static str {
                match self { $(Self::$kind => stringify!($kind),)* }
            }

            /// Parses the name on the wire.
            pub fn parse(name: &str) -> Option<Self> {
                match name { $(stringify!($kind) => Some(Self::$kind),)* _ => None }
            }

            /// The version of this kind's shape that this build writes and reads.
            pub fn current_version(&self) -> u32 {
                match self { $(Self::$kind => $version,)* }
            }

            /// Whether records of this kind carry an effect key.
            pub fn has_effect_key(&self) -> bool {
                match self { $(Self::$kind => $has_key,)* }
            }
        }

        /// A record's typed body.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum RecordBody { $(#[doc = stringify!($kind)] $kind($body),)* }

        impl RecordBody {
            /// The kind.
            pub fn kind(&self) -> RecordKind {
                match self { $(Self::$kind(_) => RecordKind::$kind,)* }
            }

            fn to_json(&self) -> Result<String, serde_json::Error> {
                match self { $(Self::$kind(body) => serde_json::to_string(body),)* }
            }

            fn from_json(kind: RecordKind, json: &str) -> Result<Self, serde_json::Error> {
                match kind { $(RecordKind::$kind => serde_json::from_str(json).map(Self::$kind),)* }
            }
        }
    };
}

kinds! {
    RunAdmitted(RunAdmitted) = 1, effect_key: false;
    PlanFrozen(PlanFrozen) = 1, effect_key: false;
    StepStarted(StepMark) = 1, effect_key: false;
    EffectStarted(EffectStarted) = 1, effect_key: true;
    EffectDone(EffectDone) = 1, effect_key: true;
    Released(Released) = 1, effect_key: true;
    StepFinished(StepMark) = 1, effect_key: false;
    RunConcluded(RunConcluded) = 1, effect_key: false;
    CeilingRaised(CeilingRaised) = 1, effect_key: false;
    WithholdingLifted(WithholdingLifted) = 1, effect_key: false;
    DoubtAnswered(DoubtAnswered) = 1, effect_key: true;
    RunForked(RunForked) = 1, effect_key: false;
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A record: envelope fields and typed body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The run.
    pub run: RunId,
    /// Position in the run's chain, from 1.
    pub seq: u64,
    /// When the writer wrote it (UTC, milliseconds), from its injected clock.
    pub at: At,
    /// The effect this record is about, for the kinds that have one.
    pub effect_key: Option<String>,
    /// The build that wrote it.
    pub build: Build,
    /// The body.
    pub body: RecordBody,
}

/// The envelope as it is on the wire, body still raw.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireEnvelope<'a> {
    kind: String,
    v: u32,
    run: String,
    seq: u64,
    at: At,
    #[serde(deserialize_with = "present")]
    effect_key: Option<String>,
    build: Build,
    #[serde(borrow)]
    body: &'a RawValue,
}

/// Only `(kind, v, build)`, read before anything else.
#[derive(Deserialize)]
struct Header {
    kind: String,
    v: u32,
    build: Option<WriterName>,
}

/// The writer's name and version, read leniently: a writer ahead of this
/// build may name itself with fields this build does not know, and the
/// remedy must still name it.
#[derive(Deserialize)]
struct WriterName {
    name: String,
    version: String,
}

/// The version and writer of a record, read without parsing its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHeader {
    /// The kind's name as written.
    pub kind: String,
    /// The shape version as written.
    pub v: u32,
    /// The writer, when the header names one.
    pub build: Option<Build>,
}

impl Record {
    /// The record's kind.
    pub fn kind(&self) -> RecordKind {
        self.body.kind()
    }

    /// The run's admission, when this record is it: a `RunAdmitted` at seq 1
    /// (the only place one counts).
    pub fn admission(&self) -> Option<&RunAdmitted> {
        match &self.body {
            RecordBody::RunAdmitted(admitted) if self.seq == 1 => Some(admitted),
            _ => None,
        }
    }

    /// The idempotency key this record admits its run under: its
    /// [`admission`](Self::admission)'s key. What the idempotency index is keyed by.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.admission().map(|admitted| admitted.idempotency_key.as_str())
    }

    /// The canonical wire bytes: one JSON object, fields in the fixed order
    /// `kind, v, run, seq, at, effect_key, build, body`, nothing skipped (an
    /// absent effect key is `null`), body fields in declaration order,
    /// compact (no spaces), UTF-8, no trailing newline.
    pub fn encode(&self) -> Result<Vec<u8>, JournalError> {
        let kind = self.kind();
        if kind.has_effect_key() != self.effect_key.is_some() {
            return Err(JournalError::InvalidRecord(format!(
                "{kind} records {} an effect key",
                if kind.has_effect_key() { "need" } else { "take no" }
            )));
        }
        let to_json =
            |value: &dyn erased::Json| value.json().map_err(|err| JournalError::InvalidRecord(err.to_string()));
        let out = format!(
            "{{\"kind\":{},\"v\":{},\"run\":{},\"seq\":{},\"at\":{},\"effect_key\":{},\"build\":{},\"body\":{}}}",
            to_json(&kind.as_str())?,
            kind.current_version(),
            to_json(&self.run.as_str())?,
            self.seq,
            to_json(&self.at)?,
            to_json(&self.effect_key)?,
            to_json(&self.build)?,
            self.body.to_json().map_err(|err| JournalError::InvalidRecord(err.to_string()))?,
        );
        within_record_bound(&self.run, self.seq, out.len())?;
        Ok(out.into_bytes())
    }

    /// Reads the header `(kind, v, build)` of stored bytes, nothing more.
    pub fn header(bytes: &[u8]) -> Option<RecordHeader> {
        let header: Header = serde_json::from_slice(bytes).ok()?;
        let build = header.build.map(|writer| Build { name: writer.name, version: writer.version });
        Some(RecordHeader { kind: header.kind, v: header.v, build })
    }

    /// Decodes bytes whose chain hash the caller has already checked
    /// (R-CHAIN-4): reads `(kind, v)`, consults the upcasters on every read
    /// (R-VER-2), then parses strictly (R-VER-3). Every failure here is a
    /// build skew, never damage: the bytes are the ones that were written.
    pub fn decode_verified(bytes: &[u8], upcasters: &Upcasters) -> Result<Record, JournalError> {
        // A record of this build's version needs no upcast: one pass reads
        // it (the header pass would scan every byte a second time, and the
        // audit reads every record of a plane).
        if let Ok(wire) = serde_json::from_slice::<WireEnvelope<'_>>(bytes)
            && let Some(kind) = RecordKind::parse(&wire.kind).filter(|kind| kind.current_version() == wire.v)
        {
            return Self::from_wire(wire, kind, None, upcasters);
        }
        let header = Self::header(bytes).ok_or_else(|| {
            JournalError::BuildSkew(Box::new(BuildSkew::UnreadableRecordShape {
                kind: String::from("?"),
                v: 0,
                writer: None,
                detail: "no readable kind and version".into(),
                remedy: BuildSkew::remedy(None, upcasters.reader()),
            }))
        })?;
        let current = upcasters.upcast(&header, bytes)?;
        let skew = |detail: String| Self::shape_skew(&header, detail, upcasters);
        let wire: WireEnvelope<'_> = serde_json::from_slice(&current).map_err(|err| skew(err.to_string()))?;
        let kind = RecordKind::parse(&wire.kind).ok_or_else(|| skew(format!("unknown kind {:?}", wire.kind)))?;
        if wire.v != kind.current_version() {
            return Err(skew(format!("upcast left version {} where {} is read", wire.v, kind.current_version())));
        }
        Self::from_wire(wire, kind, Some(&header), upcasters)
    }

    /// The record from its envelope, at this build's version; `header` is
    /// what was written before any upcast (`None`: the envelope itself).
    fn from_wire(
        wire: WireEnvelope<'_>,
        kind: RecordKind,
        header: Option<&RecordHeader>,
        upcasters: &Upcasters,
    ) -> Result<Record, JournalError> {
        let skew = |detail: String| match header {
            Some(header) => Self::shape_skew(header, detail, upcasters),
            None => {
                let header = RecordHeader { kind: wire.kind.clone(), v: wire.v, build: Some(wire.build.clone()) };
                Self::shape_skew(&header, detail, upcasters)
            }
        };
        let body = RecordBody::from_json(kind, wire.body.get()).map_err(|err| skew(err.to_string()))?;
        if kind.has_effect_key() != wire.effect_key.is_some() {
            return Err(skew(format!(
                "{kind} with{} an effect key",
                if wire.effect_key.is_some() { "" } else { "out" }
            )));
        }
        let run = RunId::new(&wire.run).map_err(|err| skew(err.to_string()))?;
        Ok(Record { run, seq: wire.seq, at: wire.at, effect_key: wire.effect_key, build: wire.build, body })
    }

    fn shape_skew(header: &RecordHeader, detail: String, upcasters: &Upcasters) -> JournalError {
        JournalError::BuildSkew(Box::new(BuildSkew::UnreadableRecordShape {
            kind: header.kind.clone(),
            v: header.v,
            writer: header.build.clone(),
            detail,
            remedy: BuildSkew::remedy(header.build.as_ref(), upcasters.reader()),
        }))
    }
}

/// A tiny object-safe view of `Serialize` for the encoder above.
mod erased {
    pub trait Json {
        fn json(&self) -> Result<String, serde_json::Error>;
    }

    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> Result<String, serde_json::Error> {
            serde_json::to_string(self)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every input has a size bound: a stored outcome name this build does
    /// not know is kept cut, so a forged runs row of a megabyte makes no
    /// megabyte message (the reads and the audit quote it); a short one, a
    /// newer build's name, is kept whole.
    #[test]
    fn an_unknown_outcome_name_is_kept_cut() {
        assert_eq!(Outcome::unknown_name("expired"), "expired");
        let forged = "é".repeat(1 << 20);
        let kept = Outcome::unknown_name(&forged);
        assert_eq!(kept.chars().filter(|c| *c == 'é').count(), MAX_UNKNOWN_OUTCOME_CHARS);
        assert!(kept.ends_with("... (cut)"), "{kept}");
    }
}
