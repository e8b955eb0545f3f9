//! What an audit found, what it checked, and what it could not check.

use serde::Serialize;

/// The class of a finding: what kind of claim about the history failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingClass {
    /// The stored bytes or chain are not what was written.
    Tamper,
    /// A sealed run the log committed to is gone.
    Deletion,
    /// Two histories of one log were shown to different observers.
    Fork,
    /// Derived data (indexes, flags, heads, seal leaves, counters, cached
    /// nodes) disagrees with the verified chain.
    DerivedData,
    /// A record signature is missing, untrusted or invalid.
    Signature,
    /// This build cannot read what another build wrote: not damage.
    BuildSkew,
    /// An anchor the auditor named could not be read or verified (R-AUD-9):
    /// not evidence about the log, but the audit cannot vouch for it either.
    AnchorUnavailable,
}

impl FindingClass {
    /// The stable snake_case name, the one serde writes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tamper => "tamper",
            Self::Deletion => "deletion",
            Self::Fork => "fork",
            Self::DerivedData => "derived_data",
            Self::Signature => "signature",
            Self::BuildSkew => "build_skew",
            Self::AnchorUnavailable => "anchor_unavailable",
        }
    }
}

/// What was found, with a code that stays stable across versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingCode {
    /// A run's chain fails: a hash, a link, a gap, an order, a column.
    ChainBroken,
    /// Stored data outside any one chain is damaged (a log node, an id).
    StoreDamaged,
    /// A record has no signature (with `require_signature`).
    UnsignedRecord,
    /// A record is signed by a key the auditor does not trust (with `require_signature`).
    UntrustedKey,
    /// A trusted key's signature does not verify over the record's hash.
    BadSignature,
    /// A record this build cannot read (version or shape).
    BuildSkew,
    /// The outcome index disagrees with the run's last conclusion.
    OutcomeIndexMismatch,
    /// The sealed flag disagrees with the run's last conclusion.
    SealedFlagMismatch,
    /// The runs table's head is not the run's last record.
    RunsHeadMismatch,
    /// The seal leaf is not the one the verified chain gives.
    SealLeafMismatch,
    /// The idempotency index does not point at the run whose admission carries the key.
    IdempotencyIndexMismatch,
    /// A run whose last conclusion seals has no seal in the log.
    SealMissing,
    /// A seal in the log names a run with no journal, or a run that is not sealed.
    SealWithoutRun,
    /// Log positions have holes: seals were removed behind the store.
    LogHoles,
    /// Stored node hashes or counters disagree with the log rebuilt from its seals.
    CachedNodesMismatch,
    /// A sealed run does not prove its inclusion in the rebuilt log.
    InclusionFailed,
    /// The log is smaller than an anchor: it shrank below a size an observer saw.
    LogShrank,
    /// The log does not extend an anchor: a run the anchor covers was deleted or replaced.
    AnchorNotExtended,
    /// Two anchors hold one size with two roots.
    SplitView,
    /// The admission order (the console's listing) is missing a verified
    /// run's admission, or holds a row no verified admission gives.
    AdmissionOrderMismatch,
    /// A run was forked from a run that is gone.
    ForkSourceMissing,
    /// A run was forked from a record that is no longer the one it names.
    ForkSourceChanged,
    /// A run's admission names another tenant, or its id is not the one its
    /// tenant and idempotency key give: a run copied in from elsewhere.
    TenantMismatch,
    /// Records are stored for a run the runs table has no row for.
    RunRowMissing,
    /// An index row (outcome, idempotency, moved mark) with no verified run
    /// behind it (for a moved mark: no open one).
    IndexWithoutRun,
    /// A heads leaf that does not parse, or whose stored entries do not give its root.
    HeadsLeafBroken,
    /// A run a heads leaf covers is gone, or its journal now ends before the
    /// head the leaf committed to: cut back or deleted.
    HeadCutBack,
    /// A run holds another record at the seq a heads or seal leaf committed
    /// to, or records appended after the head its seal leaf holds.
    HeadRewritten,
    /// The newest-heads index (what `prove` of an open run looks up) names
    /// a heads leaf that is not the newest holding the run, or holds a row
    /// no heads entry gives.
    HeadsIndexMismatch,
    /// The seal index (which position seals each run, what `prove` and
    /// `export` of a sealed run look up; on a backend without a separate
    /// index, a seal row's run column) disagrees with the verified seals.
    SealIndexMismatch,
    /// An open run moved past its newest heads entry (or has none) but the
    /// store does not mark it moved: the next heads leaf would leave the move
    /// out, so no later checkpoint would cover it.
    MovedMarkMissing,
    /// An anchor the auditor named could not be read or verified: unreachable,
    /// timed out, refused, or an answer that does not verify (R-AUD-9).
    AnchorUnavailable,
}

impl FindingCode {
    /// The class of this finding.
    pub fn class(self) -> FindingClass {
        match self {
            Self::ChainBroken
            | Self::StoreDamaged
            | Self::InclusionFailed
            | Self::ForkSourceChanged
            | Self::TenantMismatch
            | Self::HeadsLeafBroken
            | Self::HeadRewritten => FindingClass::Tamper,
            Self::UnsignedRecord | Self::UntrustedKey | Self::BadSignature => FindingClass::Signature,
            Self::BuildSkew => FindingClass::BuildSkew,
            Self::OutcomeIndexMismatch
            | Self::SealedFlagMismatch
            | Self::RunsHeadMismatch
            | Self::SealLeafMismatch
            | Self::IdempotencyIndexMismatch
            | Self::AdmissionOrderMismatch
            | Self::HeadsIndexMismatch
            | Self::SealIndexMismatch
            | Self::MovedMarkMissing
            | Self::CachedNodesMismatch
            | Self::RunRowMissing
            | Self::IndexWithoutRun
            | Self::SealWithoutRun => FindingClass::DerivedData,
            Self::SealMissing
            | Self::LogHoles
            | Self::LogShrank
            | Self::AnchorNotExtended
            | Self::HeadCutBack
            | Self::ForkSourceMissing => FindingClass::Deletion,
            Self::SplitView => FindingClass::Fork,
            Self::AnchorUnavailable => FindingClass::AnchorUnavailable,
        }
    }
}

/// One finding: what, where, and for a build skew what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The stable code.
    pub code: FindingCode,
    /// Its class.
    pub class: FindingClass,
    /// The run it concerns.
    pub run: Option<String>,
    /// The first record it concerns.
    pub seq: Option<u64>,
    /// The anchors it concerns (by label).
    pub anchors: Vec<String>,
    /// What exactly.
    pub detail: String,
    /// What to do, where there is something to do (build skew).
    pub remedy: Option<String>,
}

impl Finding {
    pub(crate) fn new(code: FindingCode, detail: impl Into<String>) -> Self {
        Self {
            code,
            class: code.class(),
            run: None,
            seq: None,
            anchors: Vec::new(),
            detail: detail.into(),
            remedy: None,
        }
    }

    pub(crate) fn run(mut self, run: &journal_core::RunId) -> Self {
        self.run = Some(run.to_string());
        self
    }

    pub(crate) fn seq(mut self, seq: u64) -> Self {
        self.seq = Some(seq);
        self
    }

    pub(crate) fn anchor(mut self, label: &str) -> Self {
        self.anchors.push(label.to_owned());
        self
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] ", self.code.name())?;
        if let Some(run) = &self.run {
            write!(f, "run {run}")?;
            if let Some(seq) = self.seq {
                write!(f, " seq {seq}")?;
            }
            f.write_str(": ")?;
        }
        if !self.anchors.is_empty() {
            write!(f, "anchor {}: ", self.anchors.join(" vs "))?;
        }
        f.write_str(&self.detail)?;
        if let Some(remedy) = &self.remedy {
            write!(f, " Remedy: {remedy}")?;
        }
        Ok(())
    }
}

impl FindingCode {
    /// The stable snake_case name, the one serde writes.
    pub fn name(self) -> String {
        let debug = format!("{self:?}");
        let mut out = String::with_capacity(debug.len() + 4);
        for (i, c) in debug.chars().enumerate() {
            if c.is_ascii_uppercase() {
                if i > 0 {
                    out.push('_');
                }
                out.push(c.to_ascii_lowercase());
            } else {
                out.push(c);
            }
        }
        out
    }
}

/// Something the audit could not establish, and why: as prominent as a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotChecked {
    /// What is still unknown.
    pub what: String,
    /// Why, and what would check it.
    pub why: String,
}

/// What the audit checked, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Checked {
    /// Runs whose chain was verified from the stored bytes.
    pub runs: u64,
    /// Records verified (hash before parse, version, shape).
    pub records: u64,
    /// Record signatures verified against a trusted key.
    pub signatures: u64,
    /// Derived-data claims held to the chain (index entries, flags, heads, leaves, keys).
    pub derived: u64,
    /// Seals read and rebuilt into the log.
    pub seals: u64,
    /// Sealed runs proven included in the rebuilt log.
    pub inclusions: u64,
    /// Stored node hashes compared with the rebuilt log.
    pub nodes: u64,
    /// Anchors the rebuilt log was held to.
    pub anchors: u64,
    /// Heads entries (an open run's head a heads leaf committed to) held to the run's chain.
    pub heads: u64,
}

/// Where an anchor came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnchorKind {
    /// A signed checkpoint saved earlier.
    Saved,
    /// A witness read during the audit.
    Witness,
}

impl AnchorKind {
    /// The snake_case name, the one serde writes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Saved => "saved",
            Self::Witness => "witness",
        }
    }
}

/// What became of one anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnchorStatus {
    /// Read, and the rebuilt log extends it.
    Held,
    /// Read, and a finding names it (not extended, or a split view).
    Failed,
    /// Named but could not be read or verified: an `anchor_unavailable` finding.
    Unavailable,
    /// Not read, and not a failure: the witness serves no monitor endpoint or
    /// has cosigned nothing for the origin, or it was unavailable and the
    /// auditor allowed that. Listed in `not_checked`.
    NotChecked,
}

impl AnchorStatus {
    /// The snake_case name, the one serde writes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Held => "held",
            Self::Failed => "failed",
            Self::Unavailable => "unavailable",
            Self::NotChecked => "not_checked",
        }
    }
}

/// One anchor the auditor named, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AnchorReport {
    /// Its label (a file name, a witness URL).
    pub label: String,
    /// Saved or read from a witness.
    pub kind: AnchorKind,
    /// The tree size it holds, when read.
    pub size: Option<u64>,
    /// The root it holds, as lowercase hex, when read.
    pub root: Option<String>,
    /// What became of it.
    pub status: AnchorStatus,
    /// Why it was not read (unavailable or not checked).
    pub reason: Option<String>,
}

/// The audit's verdict in one word (R-AUD-9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No finding, and everything was checked.
    Clean,
    /// At least one finding.
    Findings,
    /// No finding, but something could not be checked (`not_checked`).
    Incomplete,
}

/// The audit's answer. It serializes as the documented JSON report (see the
/// crate README, "The JSON report"), not field by field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditReport {
    /// The tenant audited.
    pub tenant: String,
    /// Its log's origin.
    pub origin: String,
    /// Every finding, in check order.
    pub findings: Vec<Finding>,
    /// What is still unknown.
    pub not_checked: Vec<NotChecked>,
    /// What was checked.
    pub checked: Checked,
    /// Every anchor the auditor named, in the order given.
    pub anchors: Vec<AnchorReport>,
    /// The log rebuilt from the seals: its size.
    pub log_size: u64,
    /// The rebuilt log's root, as lowercase hex.
    pub log_root: String,
}

/// The JSON report's version, written as `schema`.
pub const JSON_SCHEMA: &str = "agentplane.audit/v1";

#[derive(Serialize)]
struct JsonReport<'a> {
    schema: &'static str,
    verdict: Verdict,
    tenant: &'a str,
    origin: &'a str,
    log: JsonLog<'a>,
    anchors: &'a [AnchorReport],
    findings: Vec<JsonFinding<'a>>,
    not_checked: &'a [NotChecked],
    checked: Checked,
}

#[derive(Serialize)]
struct JsonLog<'a> {
    size: u64,
    root: &'a str,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    code: FindingCode,
    class: FindingClass,
    run: Option<&'a str>,
    seq: Option<u64>,
    anchor: Option<&'a str>,
    anchors: &'a [String],
    message: &'a str,
    remedy: Option<&'a str>,
}

impl Serialize for AuditReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        JsonReport {
            schema: JSON_SCHEMA,
            verdict: self.verdict(),
            tenant: &self.tenant,
            origin: &self.origin,
            log: JsonLog { size: self.log_size, root: &self.log_root },
            anchors: &self.anchors,
            findings: self
                .findings
                .iter()
                .map(|finding| JsonFinding {
                    code: finding.code,
                    class: finding.class,
                    run: finding.run.as_deref(),
                    seq: finding.seq,
                    anchor: finding.anchors.first().map(String::as_str),
                    anchors: &finding.anchors,
                    message: &finding.detail,
                    remedy: finding.remedy.as_deref(),
                })
                .collect(),
            not_checked: &self.not_checked,
            checked: self.checked,
        }
        .serialize(serializer)
    }
}

/// Why [`AuditReport::assert_complete`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the audit is not clean and complete: {findings} findings, {not_checked} checks not made")]
pub struct Incomplete {
    /// How many findings.
    pub findings: usize,
    /// How many checks were not made.
    pub not_checked: usize,
}

impl AuditReport {
    /// The verdict: findings, else incomplete when anything was not
    /// checked, else clean.
    pub fn verdict(&self) -> Verdict {
        match (self.findings.is_empty(), self.not_checked.is_empty()) {
            (false, _) => Verdict::Findings,
            (true, false) => Verdict::Incomplete,
            (true, true) => Verdict::Clean,
        }
    }

    /// Clean: no finding. (Something may still be unchecked.)
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// Fails on a finding and on a check not made (R-AUD-5).
    pub fn assert_complete(&self) -> Result<(), Incomplete> {
        if self.findings.is_empty() && self.not_checked.is_empty() {
            Ok(())
        } else {
            Err(Incomplete { findings: self.findings.len(), not_checked: self.not_checked.len() })
        }
    }

    /// The findings of one code.
    pub fn with_code(&self, code: FindingCode) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |finding| finding.code == code)
    }

    /// Whether every finding is a build skew (the history may be intact;
    /// this build cannot read it).
    pub fn only_build_skew(&self) -> bool {
        !self.findings.is_empty() && self.findings.iter().all(|finding| finding.class == FindingClass::BuildSkew)
    }
}
