//! Self-contained exports of runs (R-EXP-1): records with their exact bytes
//! and signatures, the leaf that covers them, its inclusion proof and a
//! signed checkpoint, verified offline with only the trusted keys.
//!
//! The file is JSON Lines, in this order:
//! 1. `{"type":"header","format":"agentplane-export/v4","origin":…,"run":…}`
//! 2. one `{"type":"record","seq":…,"kind":…,"effect_key":…,"prev_hash":…,"hash":…,"bytes":…,"signature":…}` per record
//!    (`bytes` is the record's exact wire text; hashes are lowercase hex)
//! 3. the leaf that covers the records, one of:
//!    - `{"type":"seal","leaf":…}`: a sealed run's seal leaf (its exact text);
//!    - `{"type":"head","leaf":…,"entry_index":…,"entry_proof":[…]}` (format v4): the heads leaf
//!      (its exact text) holding an open run's head, the entry's index in the leaf's entries tree
//!      and its audit path there. The export's records end at that head: it attests that the run
//!      had this history at this checkpoint, never that the history is complete (issue 20).
//! 4. `{"type":"inclusion","index":…,"size":…,"root":…,"proof":[…]}`: the leaf in the checkpoint's tree
//! 5. `{"type":"checkpoint","note":…}` (the log's signed checkpoint note)
//! 6. optionally, `{"type":"cosigned","note":…,"index":…,"proof":[…]}`: the latest checkpoint a witness
//!    quorum cosigned that holds the leaf (its note carries the log's signature and the witnesses'
//!    cosignatures), with the leaf's inclusion proof in it. Format v3 and later.
//!
//! Proof hashes are lowercase hex from format v4 on (one encoding for every
//! hash in the file); v2 and v3 files carry them in standard base64, and are
//! still read.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use tlog::{InclusionProof, NodeHash, RootHash, Tree};
use witness::{NoteVerifier, Origin, SignedCheckpoint, TrustedWitness, VerifierKey};

use crate::chain::{ChainCheck, ChainHash, ExpectedHead, StoredRecord, verify_links, verify_run};
use crate::error::JournalError;
use crate::heads::{HeadEntry, HeadsLeaf};
use crate::ids::RunId;
use crate::journal::{VerifiedRun, last_conclusion};
use crate::log::{HeadInclusion, RunInclusion};
use crate::seal::SealLeaf;
use crate::signature::KeySignature;

/// The format name on the header line this build writes. v2: the records
/// carry `at` (the hard cut of the record envelope before the format freeze);
/// v3: an optional cosigned checkpoint line after the checkpoint; v4: open
/// runs export too (a `head` line in place of the seal), proof hashes in hex.
pub const EXPORT_FORMAT: &str = "agentplane-export/v4";

/// The formats whose proof hashes are standard base64 (before v4).
const BASE64_PROOF_FORMATS: &[&str] = &["agentplane-export/v2", "agentplane-export/v3"];

/// Every format this build reads (R-GOLD-2: every export ever blessed keeps verifying).
const READ_FORMATS: &[&str] = &["agentplane-export/v2", "agentplane-export/v3", EXPORT_FORMAT];

/// Export formats this build knows it cannot read, with the reason.
const RETIRED_FORMATS: &[(&str, &str)] = &[(
    "agentplane-export/v1",
    "its records were written before records carried `at` (a hard cut before the format freeze); read it with the build that wrote it",
)];

/// An export line: its `type` and that type's fields. Written through
/// serde's tag; read by [`parse_line`], which reads the `type` first.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    Header(HeaderLine),
    Record(RecordLine),
    Seal(LeafLine),
    Head(HeadLine),
    Inclusion(InclusionLine),
    Checkpoint(NoteLine),
    Cosigned(CosignedLine),
}

/// A line's `type`, among its fields when read (already read by
/// [`parse_line`]); written by [`Line`]'s tag.
#[derive(Default, Deserialize)]
struct TypeField(serde::de::IgnoredAny);

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderLine {
    #[serde(rename = "type", skip_serializing)]
    _tag: TypeField,
    format: String,
    origin: String,
    run: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordLine {
    #[serde(rename = "type", skip_serializing)]
    _tag: TypeField,
    seq: u64,
    kind: String,
    effect_key: Option<String>,
    prev_hash: String,
    hash: String,
    bytes: String,
    signature: Option<KeySignature>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LeafLine {
    #[serde(rename = "type", skip_serializing)]
    _tag: TypeField,
    leaf: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeadLine {
    #[serde(rename = "type", skip_serializing)]
    _tag: TypeField,
    leaf: String,
    entry_index: u64,
    #[serde(deserialize_with = "bounded_proof")]
    entry_proof: Vec<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct InclusionLine {
    #[serde(rename = "type", skip_serializing)]
    _tag: TypeField,
    index: u64,
    size: u64,
    root: String,
    #[serde(deserialize_with = "bounded_proof")]
    proof: Vec<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoteLine {
    #[serde(rename = "type", skip_serializing)]
    _tag: TypeField,
    note: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CosignedLine {
    #[serde(rename = "type", skip_serializing)]
    _tag: TypeField,
    note: String,
    index: u64,
    #[serde(deserialize_with = "bounded_proof")]
    proof: Vec<String>,
}

/// The most hashes a proof line holds: an audit path in a tree of fewer
/// than 2^64 leaves has at most 64.
const MAX_PROOF_HASHES: usize = 64;

/// One export line read: its `type` first, every other value skimmed
/// without being kept, then that type's fields, so nothing is buffered
/// whole (serde's internally tagged enums buffer every value of a line
/// first: a list of empty strings cost ten times its bytes) and a proof
/// longer than any tree has is refused at its 65th hash.
fn parse_line(raw: &str) -> Result<Line, serde_json::Error> {
    #[derive(Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
    }
    let tag: Tag<'_> = serde_json::from_str(raw)?;
    Ok(match tag.kind.as_ref() {
        "header" => Line::Header(serde_json::from_str(raw)?),
        "record" => Line::Record(serde_json::from_str(raw)?),
        "seal" => Line::Seal(serde_json::from_str(raw)?),
        "head" => Line::Head(serde_json::from_str(raw)?),
        "inclusion" => Line::Inclusion(serde_json::from_str(raw)?),
        "checkpoint" => Line::Checkpoint(serde_json::from_str(raw)?),
        "cosigned" => Line::Cosigned(serde_json::from_str(raw)?),
        other => {
            return Err(<serde_json::Error as serde::de::Error>::unknown_variant(
                other,
                &["header", "record", "seal", "head", "inclusion", "checkpoint", "cosigned"],
            ));
        }
    })
}

/// A proof's hashes, refused past [`MAX_PROOF_HASHES`] as they are read.
fn bounded_proof<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    struct Bounded;
    impl<'de> serde::de::Visitor<'de> for Bounded {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a list of at most {MAX_PROOF_HASHES} hashes")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut hashes = Vec::new();
            while let Some(hash) = seq.next_element::<String>()? {
                if hashes.len() == MAX_PROOF_HASHES {
                    return Err(serde::de::Error::invalid_length(MAX_PROOF_HASHES + 1, &self));
                }
                hashes.push(hash);
            }
            Ok(hashes)
        }
    }
    deserializer.deserialize_seq(Bounded)
}

/// A checkpoint a witness quorum cosigned, with the run's inclusion in it:
/// what an export carries so an auditor can check the witnesses offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosignedInclusion {
    /// The cosigned note (checkpoint, the log's signature, the cosignatures).
    pub note: String,
    /// The run's leaf index in it.
    pub index: u64,
    /// The run's inclusion proof in the cosigned tree.
    pub proof: InclusionProof,
}

/// The cosigned checkpoint of a verified export: its tree is signed by a
/// trusted log key and the run is proven in it; the cosignatures are checked
/// by [`VerifiedExport::cosignatures`] against the witness keys a reader trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedCosigned {
    /// The cosigned tree.
    pub tree: Tree,
    /// The checkpoint text the cosignatures cover.
    pub text: String,
    /// The signature lines by keys other than the log's.
    pub lines: Vec<witness::NoteSignature>,
}

/// The most an export reader takes: 1 GiB (real exports are far smaller).
pub const MAX_EXPORT_BYTES: usize = 1 << 30;

/// The longest line an export reader takes: 64 MiB. Past it the input is
/// refused without reading on, so `/dev/zero` costs 64 MiB, not all memory.
pub const MAX_EXPORT_LINE_BYTES: usize = 64 << 20;

/// Why an input could not be read as an export's text.
#[derive(Debug, thiserror::Error)]
pub enum ExportReadError {
    /// The input could not be read.
    #[error("reading {name}: {source}")]
    Io {
        /// The file's name, or `standard input`.
        name: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// A line past [`MAX_EXPORT_LINE_BYTES`]: not an export.
    #[error("{name} has a line longer than 64 MiB: not an export (exports are read in lines of up to 64 MiB)")]
    LineTooLong {
        /// The file's name, or `standard input`.
        name: String,
    },
    /// Past [`MAX_EXPORT_BYTES`]: not an export.
    #[error("{name} is larger than 1 GiB: not an export (exports are read up to 1 GiB)")]
    TooLarge {
        /// The file's name, or `standard input`.
        name: String,
    },
    /// Not UTF-8 text: not an export.
    #[error("{name} is not UTF-8 text: not an export")]
    NotText {
        /// The file's name, or `standard input`.
        name: String,
    },
}

/// Reads an export's text from `reader` (named `name` in errors) within
/// [`MAX_EXPORT_BYTES`] and [`MAX_EXPORT_LINE_BYTES`], stopping as soon as
/// either is passed: what every reader of export files reads through.
pub fn read_export_text(reader: &mut dyn std::io::Read, name: &str) -> Result<String, ExportReadError> {
    let mut text = Vec::new();
    let mut chunk = vec![0_u8; 64 * 1024];
    let mut line_start = 0;
    loop {
        let read = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => return Err(ExportReadError::Io { name: name.to_owned(), source }),
        };
        let got = chunk.get(..read).unwrap_or_default();
        if let Some(newline) = got.iter().rposition(|b| *b == b'\n') {
            line_start = text.len() + newline + 1;
        }
        text.extend_from_slice(got);
        if text.len() - line_start > MAX_EXPORT_LINE_BYTES {
            return Err(ExportReadError::LineTooLong { name: name.to_owned() });
        }
        if text.len() > MAX_EXPORT_BYTES {
            return Err(ExportReadError::TooLarge { name: name.to_owned() });
        }
    }
    String::from_utf8(text).map_err(|_| ExportReadError::NotText { name: name.to_owned() })
}

/// Why an export was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// A line is not what the format says.
    #[error("export line {line}: {detail}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        detail: String,
    },
    /// The records fail their chain, signature or shape checks.
    #[error("export records: {0}")]
    Journal(#[from] JournalError),
    /// The checkpoint is not signed by a trusted log key.
    #[error("export checkpoint: {0}")]
    Checkpoint(String),
    /// The seal, proof and checkpoint do not agree with each other.
    #[error("export: {0}")]
    Mismatch(String),
    /// The witness quorum asked for is not met by the export's cosigned checkpoint.
    #[error("export cosignatures: {0}")]
    Cosignatures(String),
    /// The header names a format this build does not read: a retired one, or
    /// one a newer build wrote. Build skew, never damage (R-VER-4): the
    /// detail names the build that reads it.
    #[error("export line {line}: format {format:?} is not read by this build: {detail}")]
    UnreadableFormat {
        /// 1-based line number of the header.
        line: usize,
        /// The format the header names.
        format: String,
        /// Why, and which build reads it.
        detail: String,
    },
    /// The export verifies, but its run is a fork: the effects its source
    /// served it up to the fork point are in the source's journal, not in
    /// this export, so it cannot be replayed alone (neither damage nor build
    /// skew: the caller gave too little).
    #[error(
        "run {run} is a fork of run {source_run} after seq {at_seq}: the effects its source served it are in the \
         source's export, not this one; replay it with replay_folder beside its source's export"
    )]
    ForkWithoutSource {
        /// The forked run.
        run: RunId,
        /// The run it was forked from.
        source_run: String,
        /// The seq of the source's record it was forked after.
        at_seq: u64,
    },
}

impl ExportError {
    /// Whether this is evidence of tampering rather than a malformed or foreign file.
    pub fn is_tamper(&self) -> bool {
        matches!(self, Self::Journal(err) if err.is_tamper())
            || matches!(self, Self::Mismatch(_) | Self::Checkpoint(_) | Self::Cosignatures(_))
    }

    /// Whether this build cannot read what another build wrote (R-VER-4):
    /// a format it does not read, or records of a version it does not read.
    pub fn is_build_skew(&self) -> bool {
        matches!(self, Self::UnreadableFormat { .. })
            || matches!(self, Self::Journal(err) if err.class() == crate::ErrorClass::BuildSkew)
    }
}

fn to_json(line: &Line) -> String {
    serde_json::to_string(line).unwrap_or_default()
}

/// The leaf an export carries to cover its run, with the leaf's inclusion in
/// the checkpoint.
#[derive(Debug, Clone, Copy)]
pub enum ExportProof<'a> {
    /// A sealed run: its seal leaf.
    Seal(&'a RunInclusion),
    /// An open run: the heads leaf holding its head (format v4); the export's
    /// records end at that head.
    Head(&'a HeadInclusion),
}

impl ExportProof<'_> {
    fn index(&self) -> u64 {
        match self {
            Self::Seal(inclusion) => inclusion.index,
            Self::Head(inclusion) => inclusion.index,
        }
    }

    fn tree(&self) -> Tree {
        match self {
            Self::Seal(inclusion) => inclusion.tree,
            Self::Head(inclusion) => inclusion.tree,
        }
    }

    fn proof(&self) -> &InclusionProof {
        match self {
            Self::Seal(inclusion) => &inclusion.proof,
            Self::Head(inclusion) => &inclusion.proof,
        }
    }
}

fn hex_path(proof: &InclusionProof) -> Vec<String> {
    proof.path().iter().map(ToString::to_string).collect()
}

/// Writes the export of a verified run: sealed, with its seal leaf; open,
/// with the heads leaf holding its head, the records cut at that head.
pub fn write_export(
    tenant: &crate::ids::TenantId,
    origin: &Origin,
    run: &RunId,
    verified: &VerifiedRun,
    covering: ExportProof<'_>,
    checkpoint: &SignedCheckpoint,
    cosigned: Option<&CosignedInclusion>,
) -> Result<String, JournalError> {
    let (leaf_line, last_seq) = match covering {
        ExportProof::Seal(_) => {
            let seal = verified
                .seal
                .as_ref()
                .ok_or_else(|| JournalError::NotSealed { tenant: tenant.clone(), run: run.clone() })?;
            (
                Line::Seal(LeafLine {
                    _tag: TypeField::default(),
                    leaf: String::from_utf8_lossy(&seal.leaf_bytes).into_owned(),
                }),
                u64::MAX,
            )
        }
        ExportProof::Head(head) => {
            if head.entry.run != *run {
                return Err(JournalError::InvalidRecord(format!(
                    "the heads entry is for run {}, not {run}",
                    head.entry.run
                )));
            }
            let line = Line::Head(HeadLine {
                _tag: TypeField::default(),
                leaf: String::from_utf8_lossy(&head.leaf_bytes).into_owned(),
                entry_index: head.entry_index,
                entry_proof: hex_path(&head.entry_proof),
            });
            (line, head.entry.seq)
        }
    };
    let mut out = String::new();
    let mut push = |line: Line| {
        out.push_str(&to_json(&line));
        out.push('\n');
    };
    push(Line::Header(HeaderLine {
        _tag: TypeField::default(),
        format: EXPORT_FORMAT.into(),
        origin: origin.to_string(),
        run: run.to_string(),
    }));
    for record in verified.records.iter().take_while(|record| record.stored.seq <= last_seq) {
        let row = &record.stored;
        push(Line::Record(RecordLine {
            _tag: TypeField::default(),
            seq: row.seq,
            kind: row.kind.clone(),
            effect_key: row.effect_key.clone(),
            prev_hash: row.prev_hash.to_string(),
            hash: row.hash.to_string(),
            bytes: String::from_utf8_lossy(&row.bytes).into_owned(),
            signature: row.signature.clone(),
        }));
    }
    push(leaf_line);
    push(Line::Inclusion(InclusionLine {
        _tag: TypeField::default(),
        index: covering.index(),
        size: covering.tree().size,
        root: covering.tree().root.to_string(),
        proof: hex_path(covering.proof()),
    }));
    push(Line::Checkpoint(NoteLine { _tag: TypeField::default(), note: checkpoint.note().to_owned() }));
    if let Some(cosigned) = cosigned {
        push(Line::Cosigned(CosignedLine {
            _tag: TypeField::default(),
            note: cosigned.note.clone(),
            index: cosigned.index,
            proof: hex_path(&cosigned.proof),
        }));
    }
    Ok(out)
}

/// What an export's checkpoint covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportCovers {
    /// The sealed run, complete: its seal leaf is in the log.
    Seal,
    /// An open run's head: the run had these records, ending at `seq`, when
    /// the checkpoint was signed. A prefix, never a complete history.
    Head {
        /// The head's seq (the last exported record).
        seq: u64,
        /// How many heads the covering heads leaf holds.
        entries: u64,
    },
}

impl ExportCovers {
    /// `"seal"` or `"head"`, as the CLI's JSON says it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Seal => "seal",
            Self::Head { .. } => "head",
        }
    }
}

/// What a verified export holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedExport {
    /// The log origin.
    pub origin: Origin,
    /// The run.
    pub run: RunId,
    /// How many records.
    pub records: u64,
    /// The covering leaf's index: the run's seal leaf, or the heads leaf
    /// holding its head.
    pub index: u64,
    /// The checkpoint's tree.
    pub tree: Tree,
    /// What the checkpoint covers: the sealed run, or the open run's head.
    pub covers: ExportCovers,
    /// The run's last conclusion's outcome (of the exported records).
    pub outcome: Option<crate::record::Outcome>,
    /// The cosigned checkpoint it carries, if any (format v3).
    pub cosigned: Option<VerifiedCosigned>,
    /// The run's records, verified (for a replay of the exported run).
    pub chain: Vec<crate::chain::VerifiedRecord>,
}

impl VerifiedExport {
    /// Checks the carried cosigned checkpoint against the witness keys the
    /// reader trusts: at least `quorum` distinct trusted witnesses must have
    /// cosigned it. Returns how many did.
    pub fn cosignatures(&self, trusted: &[TrustedWitness], quorum: usize) -> Result<usize, ExportError> {
        let cosigned = self
            .cosigned
            .as_ref()
            .ok_or_else(|| ExportError::Cosignatures("the export carries no cosigned checkpoint".into()))?;
        let report = witness::verify_cosignatures(&cosigned.text, &cosigned.lines, trusted)
            .map_err(|err| ExportError::Cosignatures(err.to_string()))?;
        let valid = report.witnesses();
        if valid < quorum {
            return Err(ExportError::Cosignatures(format!(
                "{valid} trusted witnesses cosigned the checkpoint of size {}; {quorum} are required",
                cosigned.tree.size
            )));
        }
        Ok(valid)
    }
}

/// The stored row a record line carries.
fn stored_record(line: usize, record: RecordLine) -> Result<StoredRecord, ExportError> {
    let malformed = |detail: String| ExportError::Malformed { line, detail };
    let RecordLine { seq, kind, effect_key, prev_hash, hash, bytes, signature, .. } = record;
    let hash_of = |text: &str| ChainHash::from_hex(text).ok_or_else(|| malformed(format!("{text:?} is not a hash")));
    Ok(StoredRecord {
        seq,
        kind,
        effect_key,
        prev_hash: hash_of(&prev_hash)?,
        hash: hash_of(&hash)?,
        bytes: bytes.into_bytes(),
        signature,
    })
}

/// A proof hash as the file's format writes it: hex from v4 on, standard
/// base64 before.
fn proof_hash(line: usize, text: &str, base64: bool) -> Result<[u8; 32], ExportError> {
    let encoding = if base64 { "base64" } else { "hex" };
    let malformed =
        || ExportError::Malformed { line, detail: format!("{text:?} is not the {encoding} of a 32-byte hash") };
    if !base64 {
        return NodeHash::from_hex(text).map(|hash| *hash.as_bytes()).map_err(|_| malformed());
    }
    let bytes = STANDARD.decode(text).map_err(|_| malformed())?;
    bytes.try_into().map_err(|_| malformed())
}

fn proof_path(line: usize, proof: &[String], base64: bool) -> Result<InclusionProof, ExportError> {
    let path = proof
        .iter()
        .map(|hash| proof_hash(line, hash, base64).map(NodeHash::from_hash_bytes))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(InclusionProof::new(path))
}

/// Reads the run an export holds and verifies its chain (and its signatures,
/// as `check` asks), without the log's checkpoint: for reading an exported
/// run (a diff, a replay fixture) where the log key is not at hand. Use
/// [`verify_export`] to check the run's place in the log too.
pub fn verified_chain(
    text: &str,
    check: ChainCheck<'_>,
) -> Result<(RunId, Vec<crate::chain::VerifiedRecord>), ExportError> {
    let mut run = None;
    let mut rows = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let malformed = |detail: String| ExportError::Malformed { line: index + 1, detail };
        match parse_line(raw).map_err(|err| malformed(err.to_string()))? {
            Line::Header(HeaderLine { run: name, .. }) => {
                run = Some(RunId::new(&name).map_err(|err| malformed(err.to_string()))?);
            }
            Line::Record(line) => rows.push(stored_record(index + 1, line)?),
            _ => {}
        }
    }
    let run = run.ok_or_else(|| ExportError::Malformed { line: 1, detail: "no header line".into() })?;
    let records = verify_run(&run, &rows, None, check)?;
    Ok((run, records))
}

/// The line of an export that covers its records.
enum CoveringLine {
    Seal(String),
    Head { leaf: String, entry_index: u64, entry_proof: InclusionProof },
}

/// Verifies an export offline: the records' chain and signatures, the
/// covering leaf against the chain (a sealed run's seal leaf, or the heads
/// entry of an open run's last exported record), the leaf's inclusion proof
/// against the checkpoint, and the checkpoint's signature by a trusted log key.
pub fn verify_export(
    text: &str,
    log_keys: &[VerifierKey],
    check: ChainCheck<'_>,
) -> Result<VerifiedExport, ExportError> {
    let mut header = None;
    let mut rows = Vec::new();
    let mut covering = None;
    let mut inclusion = None;
    let mut checkpoint = None;
    let mut cosigned_line = None;
    let mut format_read = String::new();
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let malformed = |detail: String| ExportError::Malformed { line: line_no, detail };
        let line = parse_line(raw).map_err(|err| malformed(err.to_string()))?;
        let base64 = BASE64_PROOF_FORMATS.contains(&format_read.as_str());
        let stage = match &line {
            Line::Header(_) => 0,
            Line::Record(_) => 1,
            Line::Seal(_) | Line::Head(_) => 2,
            Line::Inclusion(_) => 3,
            Line::Checkpoint(_) => 4,
            Line::Cosigned(_) => 5,
        };
        let expected = if header.is_none() {
            0
        } else if covering.is_none() {
            if stage == 2 { 2 } else { 1 }
        } else if inclusion.is_none() {
            3
        } else if checkpoint.is_none() {
            4
        } else if cosigned_line.is_none() && format_read != "agentplane-export/v2" {
            5
        } else {
            6
        };
        if stage != expected {
            return Err(malformed("a line out of the format's order".into()));
        }
        match line {
            Line::Header(HeaderLine { format, origin, run, .. }) => {
                if let Some((_, why)) = RETIRED_FORMATS.iter().find(|(retired, _)| *retired == format) {
                    return Err(ExportError::UnreadableFormat { line: line_no, format, detail: (*why).to_owned() });
                }
                if !READ_FORMATS.contains(&format.as_str()) {
                    let detail = format!(
                        "it reads {}; a newer build wrote it, verify it with that build",
                        READ_FORMATS.join(", ")
                    );
                    return Err(ExportError::UnreadableFormat { line: line_no, format, detail });
                }
                format_read = format;
                let origin = Origin::new(&origin).map_err(|err| malformed(err.to_string()))?;
                header = Some((origin, RunId::new(&run).map_err(|err| malformed(err.to_string()))?));
            }
            Line::Record(line) => rows.push(stored_record(line_no, line)?),
            Line::Seal(LeafLine { leaf, .. }) => covering = Some(CoveringLine::Seal(leaf)),
            Line::Head(HeadLine { leaf, entry_index, entry_proof, .. }) => {
                if base64 {
                    return Err(malformed(format!("a head line in a {format_read} file (open runs export from v4)")));
                }
                let entry_proof = proof_path(line_no, &entry_proof, false)?;
                covering = Some(CoveringLine::Head { leaf, entry_index, entry_proof });
            }
            Line::Inclusion(InclusionLine { index, size, root, proof, .. }) => {
                let root = RootHash::from_hash_bytes(proof_hash(line_no, &root, base64)?);
                inclusion = Some((index, Tree::new(size, root), proof_path(line_no, &proof, base64)?));
            }
            Line::Checkpoint(NoteLine { note, .. }) => checkpoint = Some(note),
            Line::Cosigned(CosignedLine { note, index, proof, .. }) => {
                cosigned_line = Some((note, index, proof_path(line_no, &proof, base64)?));
            }
        }
    }
    let missing =
        |what: &str| ExportError::Malformed { line: text.lines().count() + 1, detail: format!("no {what} line") };
    let (origin, run) = header.ok_or_else(|| missing("header"))?;
    let covering = covering.ok_or_else(|| missing("seal"))?;
    let (index, tree, proof) = inclusion.ok_or_else(|| missing("inclusion"))?;
    let note = checkpoint.ok_or_else(|| missing("checkpoint"))?;

    // Authenticated before any record's body is read: the links from the
    // bytes, the covering leaf from the last record's hash, the leaf's
    // inclusion under a checkpoint a trusted key signed. Reading bodies costs
    // several times their bytes (a list of empty strings, 8 times), so a file
    // no trusted key covers costs its bytes and no more.
    let last = rows.last().map(|row| ExpectedHead { seq: row.seq, hash: row.hash });
    verify_links(&run, &rows, last)?;
    let head = last.ok_or_else(|| ExportError::Mismatch("an export with no records".into()))?;
    let (leaf_hash, covers) = match covering {
        CoveringLine::Seal(seal) => {
            let expected_leaf = SealLeaf::new(&origin, &run, head);
            if !expected_leaf.matches(seal.as_bytes()) {
                return Err(ExportError::Mismatch("the seal leaf does not match the records".into()));
            }
            (expected_leaf.leaf_hash(), ExportCovers::Seal)
        }
        CoveringLine::Head { leaf, entry_index, entry_proof } => {
            let heads = HeadsLeaf::parse(leaf.as_bytes())
                .ok_or_else(|| ExportError::Mismatch("the head line's leaf is not a heads leaf".into()))?;
            if heads.origin != origin {
                return Err(ExportError::Mismatch(format!(
                    "the heads leaf is for origin {:?}, the export for {origin:?}",
                    heads.origin.as_str()
                )));
            }
            let entry = HeadEntry::new(&run, head);
            heads.entries.verify_inclusion(&entry.leaf_hash(), entry_index, &entry_proof).map_err(|err| {
                ExportError::Mismatch(format!(
                    "the heads leaf holds no entry for run {run} at seq {} with the last record's hash: {err}",
                    head.seq
                ))
            })?;
            (tlog::LeafHash::of(leaf.as_bytes()), ExportCovers::Head { seq: head.seq, entries: heads.entries.size })
        }
    };
    let verifiers: Vec<&dyn NoteVerifier> = log_keys.iter().map(|k| k as &dyn NoteVerifier).collect();
    let (signed, _) =
        SignedCheckpoint::open(note.as_bytes(), &verifiers).map_err(|err| ExportError::Checkpoint(err.to_string()))?;
    let checkpoint = signed.checkpoint();
    if checkpoint.origin_id() != &origin {
        return Err(ExportError::Mismatch(format!(
            "the checkpoint is for origin {:?}, the export for {origin:?}",
            checkpoint.origin()
        )));
    }
    if checkpoint.tree() != tree {
        return Err(ExportError::Mismatch("the inclusion proof is for another tree than the checkpoint's".into()));
    }
    tree.verify_inclusion(&leaf_hash, index, &proof)
        .map_err(|err| ExportError::Mismatch(format!("the run's inclusion proof fails: {err}")))?;
    let cosigned = match cosigned_line {
        None => None,
        Some((note, cosigned_index, proof)) => {
            let (signed, opened) = SignedCheckpoint::open(note.as_bytes(), &verifiers)
                .map_err(|err| ExportError::Checkpoint(format!("the cosigned checkpoint: {err}")))?;
            let body = signed.checkpoint();
            if body.origin_id() != &origin {
                return Err(ExportError::Mismatch("the cosigned checkpoint is for another origin".into()));
            }
            // A leaf is in the log once: at another index, the witnesses
            // cosigned another history than the one the run is proven in.
            if cosigned_index != index {
                return Err(ExportError::Mismatch(format!(
                    "the cosigned checkpoint places the run's leaf at index {cosigned_index}, the checkpoint at \
                     index {index}: a leaf is in the log once, so these are two histories signed by one log key"
                )));
            }
            if body.tree().size == tree.size && body.tree() != tree {
                return Err(ExportError::Mismatch(format!(
                    "the cosigned checkpoint and the checkpoint are both of size {} with different roots: two \
                     histories signed by one log key",
                    tree.size
                )));
            }
            body.tree().verify_inclusion(&leaf_hash, cosigned_index, &proof).map_err(|err| {
                ExportError::Mismatch(format!("the run's inclusion in the cosigned checkpoint fails: {err}"))
            })?;
            Some(VerifiedCosigned {
                tree: body.tree(),
                text: opened.text().to_owned(),
                lines: opened.other_signatures().to_vec(),
            })
        }
    };
    let records = verify_run(&run, &rows, last, check)?;
    let outcome = last_conclusion(&records).map(|concluded| concluded.outcome);
    if covers == ExportCovers::Seal && !outcome.is_some_and(|o| o.seals()) {
        return Err(ExportError::Mismatch("the last conclusion of an exported run must seal it".into()));
    }
    Ok(VerifiedExport { origin, run, records: head.seq, index, tree, covers, outcome, cosigned, chain: records })
}

/// Holds what [`export_run`] read from the store to cover a run to what
/// [`verify_export`] will hold the file to, before anything is written
/// (R-EXP-1, R-COVER-2): the covering leaf to the verified chain (a sealed
/// run's seal leaf; an open run's heads entry to a record of the chain, the
/// entry to the heads leaf of this origin), the leaf's inclusion to the tree
/// just signed, and a stored cosigned note to the log key, the origin and the
/// leaf's inclusion in its tree. A store cut back below the head a heads
/// leaf covers, or with rows changed behind the plane, is tamper evidence,
/// never a file that claims more than the chain.
#[allow(clippy::too_many_arguments)]
fn check_covering(
    tenant: &crate::ids::TenantId,
    origin: &Origin,
    run: &RunId,
    verified: &VerifiedRun,
    covering: ExportProof<'_>,
    checkpoint: &SignedCheckpoint,
    key: &witness::LogKey,
    cosigned: Option<&CosignedInclusion>,
) -> Result<(), JournalError> {
    let damage = |detail: String| JournalError::StoreDamage {
        tenant: tenant.clone(),
        detail: format!("{detail}; nothing was exported (run `agentplane audit`)"),
    };
    let leaf_bytes = match covering {
        ExportProof::Seal(inclusion) => {
            let expected = SealLeaf::of_verified_chain(origin, run, &verified.records);
            if !expected.is_some_and(|leaf| leaf.matches(&inclusion.leaf_bytes)) {
                return Err(damage(format!(
                    "the log's leaf {} found for run {run} is not the seal of its verified journal",
                    inclusion.index
                )));
            }
            &inclusion.leaf_bytes
        }
        ExportProof::Head(head) => {
            let entry = &head.entry;
            let last = verified.records.last().map_or(0, |record| record.stored.seq);
            let held = verified.records.iter().find(|record| record.stored.seq == entry.seq);
            if entry.run != *run || held.is_none_or(|record| record.stored.hash != entry.hash) {
                return Err(JournalError::Tamper {
                    run: run.clone(),
                    seq: entry.seq.min(last.saturating_add(1)).max(1),
                    kind: crate::error::TamperKind::SealMismatch,
                    detail: Some(format!(
                        "the log's newest heads leaf (leaf {}) holds its head at seq {} (hash {}), and its verified \
                         journal, which ends at seq {last}, has no such record: the run was cut back or rewritten \
                         below what a checkpoint covers; nothing was exported (run `agentplane audit`)",
                        head.index, entry.seq, entry.hash
                    )),
                });
            }
            let heads = HeadsLeaf::parse(&head.leaf_bytes)
                .ok_or_else(|| damage(format!("the log's leaf {} is not a heads leaf", head.index)))?;
            if heads.origin != *origin {
                return Err(damage(format!(
                    "the heads leaf {} is of origin {}, not {origin}",
                    head.index, heads.origin
                )));
            }
            heads.entries.verify_inclusion(&entry.leaf_hash(), head.entry_index, &head.entry_proof).map_err(|err| {
                damage(format!(
                    "the heads leaf {} does not hold the entry of run {run} stored beside it: {err}",
                    head.index
                ))
            })?;
            &head.leaf_bytes
        }
    };
    let leaf = tlog::LeafHash::of(leaf_bytes);
    let tree = checkpoint.checkpoint().tree();
    if covering.tree() != tree {
        return Err(damage("the covering leaf is proven in another tree than the one signed".into()));
    }
    tree.verify_inclusion(&leaf, covering.index(), covering.proof())
        .map_err(|err| damage(format!("the covering leaf's inclusion in the tree signed fails: {err}")))?;
    if let Some(cosigned) = cosigned {
        let verifier = key.verifier_key();
        let (signed, _) = SignedCheckpoint::open(cosigned.note.as_bytes(), &[&verifier as &dyn NoteVerifier])
            .map_err(|err| damage(format!("the stored cosigned checkpoint is not signed by the log key: {err}")))?;
        let body = signed.checkpoint();
        if body.origin_id() != origin {
            return Err(damage(format!("the stored cosigned checkpoint is of origin {}", body.origin())));
        }
        body.tree().verify_inclusion(&leaf, cosigned.index, &cosigned.proof).map_err(|err| {
            damage(format!(
                "the stored cosigned checkpoint of size {} does not hold the run's leaf as proven: {err}",
                body.tree().size
            ))
        })?;
    }
    Ok(())
}

/// A run's export, as [`export_run`] assembled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunExport {
    /// The export file's text ([`write_export`]).
    pub text: String,
    /// How many records it carries.
    pub records: usize,
    /// What its checkpoint covers: the sealed run, or an open run's head.
    pub covers: ExportCovers,
    /// The cosigned checkpoint it carries, with the covering leaf's
    /// inclusion in it; `None` when no witness quorum has cosigned a
    /// checkpoint holding that leaf yet.
    pub cosigned: Option<CosignedInclusion>,
}

/// Assembles the export of a run from the store, in this order: the run read
/// and verified as `check` asks; the log's current head signed now with
/// `key` ([`crate::log::sign_current_head`], which first appends the heads
/// leaf of every run whose head moved, held to `high_water` when given:
/// recorded as the plane's latest signed checkpoint, never a rollback); the
/// covering leaf's inclusion in it (a sealed run's seal leaf; an open run's
/// newest heads leaf, the records cut at that head); and the latest
/// checkpoint a witness quorum cosigned that holds that leaf, with its
/// inclusion in it ([`crate::checkpoints::cosigned_inclusion`]), so a reader
/// can check the witnesses offline.
pub fn export_run(
    store: &dyn crate::store::Store,
    tenant: &crate::ids::TenantId,
    origin: &Origin,
    key: &witness::LogKey,
    run: &RunId,
    check: ChainCheck<'_>,
    high_water: Option<&dyn crate::log::HighWater>,
) -> Result<RunExport, JournalError> {
    export_run_asking(store, tenant, origin, key, run, check, high_water, &|_| Ok(()))
}

/// [`export_run`] for a plane that asked its witnesses what they hold
/// before it began: its signature is made by
/// [`crate::log::sign_current_head_asking`], which asks them again
/// (`ask_again`) on every fresh view signing starts over on (another signer
/// got further), as `checkpoint` and the sweep do.
#[allow(clippy::too_many_arguments)]
pub fn export_run_asking<'a>(
    store: &'a dyn crate::store::Store,
    tenant: &'a crate::ids::TenantId,
    origin: &Origin,
    key: &witness::LogKey,
    run: &RunId,
    check: ChainCheck<'_>,
    high_water: Option<&dyn crate::log::HighWater>,
    ask_again: &dyn Fn(&crate::log::LogView<'a>) -> Result<(), JournalError>,
) -> Result<RunExport, JournalError> {
    let journal = crate::journal::Journal::new(store, tenant, origin);
    let mut verified = journal.read(run, check)?;
    // Sealed or open is the chain's to say: a sealed run the seal lookup
    // lost is not exported as an open run's prefix (nothing is signed).
    verified.seal_found(tenant, run)?;
    let (view, signed) = crate::log::sign_current_head_asking(store, tenant, origin, key, high_water, ask_again)?;
    let (text, covers, cosigned) = if verified.seal.is_some() {
        let inclusion = view.inclusion(run)?;
        let cosigned = crate::checkpoints::cosigned_inclusion(store, &view, inclusion.index, &inclusion.leaf)?;
        let covering = ExportProof::Seal(&inclusion);
        check_covering(tenant, origin, run, &verified, covering, &signed, key, cosigned.as_ref())?;
        (
            write_export(tenant, origin, run, &verified, covering, &signed, cosigned.as_ref())?,
            ExportCovers::Seal,
            cosigned,
        )
    } else {
        let head = view.head_inclusion(run)?;
        // A run that grew after it was read had its new head entered
        // before the signature: read again, so the chain reaches it.
        if verified.records.last().is_none_or(|record| record.stored.seq < head.entry.seq) {
            verified = journal.read(run, check)?;
        }
        let cosigned = crate::checkpoints::cosigned_inclusion(store, &view, head.index, &head.leaf)?;
        let covers = ExportCovers::Head { seq: head.entry.seq, entries: head.entries };
        let covering = ExportProof::Head(&head);
        check_covering(tenant, origin, run, &verified, covering, &signed, key, cosigned.as_ref())?;
        (write_export(tenant, origin, run, &verified, covering, &signed, cosigned.as_ref())?, covers, cosigned)
    };
    let records = match covers {
        ExportCovers::Seal => verified.records.len(),
        ExportCovers::Head { seq, .. } => verified.records.iter().filter(|record| record.stored.seq <= seq).count(),
    };
    Ok(RunExport { text, records, covers, cosigned })
}
