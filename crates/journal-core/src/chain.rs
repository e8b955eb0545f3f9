//! The per-run hash chain (R-CHAIN-1..5): `hash = SHA-256(prev_hash || bytes)`,
//! genesis zero, verified over the stored bytes before anything is parsed.

pub use crate::chain_hash::ChainHash;
use crate::error::{JournalError, TamperKind};
use crate::ids::RunId;
use crate::record::{Record, RecordKind};
use crate::signature::{KeySignature, SignatureCheck, Signer, Verifier, VerifyOptions};
use crate::version::Upcasters;

/// One stored row: `seq | kind | effect_key | prev_hash | hash`, the exact
/// wire bytes and an optional signature beside the hash (R-CHAIN-1, R-SIG-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRecord {
    /// Position in the run, from 1.
    pub seq: u64,
    /// The kind column.
    pub kind: String,
    /// The effect key column.
    pub effect_key: Option<String>,
    /// The previous record's hash (genesis for seq 1).
    pub prev_hash: ChainHash,
    /// This record's hash.
    pub hash: ChainHash,
    /// The exact bytes written.
    pub bytes: Vec<u8>,
    /// The signature over `hash`, if the plane signs.
    pub signature: Option<KeySignature>,
}

impl StoredRecord {
    /// What this row holds in memory, every column counted (a hostile store
    /// may make any of them large): what a reader bounds when it gathers rows.
    pub fn held_bytes(&self) -> usize {
        let signature = self.signature.as_ref().map_or(0, |s| s.key_id.len() + s.signature.len());
        self.bytes.len() + self.kind.len() + self.effect_key.as_ref().map_or(0, String::len) + signature + 2 * 32 + 8
    }

    /// The row for `record` after `prev`: encoded once, chained, and signed
    /// by `signer` when the plane has one.
    pub fn new(record: &Record, prev: ChainHash, signer: Option<&dyn Signer>) -> Result<Self, JournalError> {
        let bytes = record.encode()?;
        let hash = ChainHash::link(&prev, &bytes);
        let signature = signer.map(|signer| signer.sign(&hash));
        Ok(Self {
            seq: record.seq,
            kind: record.kind().as_str().to_owned(),
            effect_key: record.effect_key.clone(),
            prev_hash: prev,
            hash,
            bytes,
            signature,
        })
    }
}

/// A row whose chain link, signature and shape were verified, with its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedRecord {
    /// The row as stored.
    pub stored: StoredRecord,
    /// The decoded record (upcast to this build's shape if it was older).
    pub record: Record,
}

/// Records a lenient read accepted (R-SIG-3) that no trusted key vouches
/// for: what a forger with the store and no key could have written beside
/// an intact chain. Counted without checking a signature again: a record
/// that was read is unsigned, signed under a key id the verifier does not
/// trust, or signed validly by a key it trusts (a signature that does not
/// verify under a trusted key fails the read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unvouched {
    /// Records with no signature.
    pub unsigned: u64,
    /// Records signed under a key id the verifier does not trust.
    pub untrusted: u64,
}

impl Unvouched {
    /// Counts `records`, each of them read through `verifier`.
    pub fn count<'r>(records: impl IntoIterator<Item = &'r VerifiedRecord>, verifier: &dyn Verifier) -> Self {
        let mut counted = Self::default();
        for record in records {
            match &record.stored.signature {
                None => counted.unsigned += 1,
                Some(signature) if !verifier.trusts(&signature.key_id) => counted.untrusted += 1,
                Some(_) => {}
            }
        }
        counted
    }

    /// Both counts of `self` and `other`.
    #[must_use]
    pub fn plus(self, other: Self) -> Self {
        Self { unsigned: self.unsigned + other.unsigned, untrusted: self.untrusted + other.untrusted }
    }

    /// Whether a trusted key vouches for every record counted.
    pub fn is_none(&self) -> bool {
        self.unsigned == 0 && self.untrusted == 0
    }
}

/// What the caller knows of the run's head from elsewhere (the runs table, a
/// seal), to catch a truncated tail that the chain alone cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedHead {
    /// The last seq.
    pub seq: u64,
    /// Its hash.
    pub hash: ChainHash,
}

/// How a run is verified: which upcasters, which signature keys, how strict.
#[derive(Clone, Copy)]
pub struct ChainCheck<'a> {
    /// The upcaster registry (consulted on every read).
    pub upcasters: &'a Upcasters,
    /// The record signature verifier, if the caller trusts keys.
    pub verifier: Option<&'a dyn Verifier>,
    /// Lenient or strict about signatures.
    pub options: VerifyOptions,
}

fn tamper(run: &RunId, seq: u64, kind: TamperKind, detail: Option<String>) -> JournalError {
    JournalError::Tamper { run: run.clone(), seq, kind, detail }
}

/// Verifies a run's rows in stored order and decodes them. The first problem
/// is returned, naming the run and the first bad seq.
pub fn verify_run(
    run: &RunId,
    rows: &[StoredRecord],
    expected_head: Option<ExpectedHead>,
    check: ChainCheck<'_>,
) -> Result<Vec<VerifiedRecord>, JournalError> {
    verify_rows(run, rows.iter().cloned(), expected_head, check)
}

/// [`verify_run`] over rows the caller owns: each row moves into its
/// [`VerifiedRecord`] instead of being copied (the audit reads every
/// record of a plane once: a copy of each was an allocation and a memmove
/// per field for nothing).
pub fn verify_run_owned(
    run: &RunId,
    rows: Vec<StoredRecord>,
    expected_head: Option<ExpectedHead>,
    check: ChainCheck<'_>,
) -> Result<Vec<VerifiedRecord>, JournalError> {
    verify_rows(run, rows.into_iter(), expected_head, check)
}

/// [`verify_run_owned`] that hands the rows back, in stored order, with the
/// error: what the audit needs to check the links of a run this build cannot
/// read (hash before parse holds whatever the records' versions, R-CHAIN-4),
/// never copying a row on the way.
pub fn verify_run_owned_or_back(
    run: &RunId,
    rows: Vec<StoredRecord>,
    expected_head: Option<ExpectedHead>,
    check: ChainCheck<'_>,
) -> Result<Vec<VerifiedRecord>, (JournalError, Vec<StoredRecord>)> {
    verify_rows_or_back(run, rows.into_iter(), expected_head, check).map_err(|failed| {
        let Failed { error, verified, row, rest } = *failed;
        let rows = verified.into_iter().map(|record| record.stored).chain(row).chain(rest).collect();
        (error, rows)
    })
}

/// Where [`verify_rows_or_back`] stopped: the error, the rows verified
/// before it, the row it stopped at, and the rows not reached.
struct Failed<I> {
    error: JournalError,
    verified: Vec<VerifiedRecord>,
    row: Option<StoredRecord>,
    rest: I,
}

fn verify_rows(
    run: &RunId,
    rows: impl ExactSizeIterator<Item = StoredRecord>,
    expected_head: Option<ExpectedHead>,
    check: ChainCheck<'_>,
) -> Result<Vec<VerifiedRecord>, JournalError> {
    verify_rows_or_back(run, rows, expected_head, check).map_err(|failed| {
        let Failed { error, verified, row, rest } = *failed;
        match (&error, row) {
            // A skew is a statement about the reader only once the chain
            // vouches for the bytes (R-VER-4): the rows after the one this
            // build cannot read must still link to it, their signatures
            // verify, and the recorded head be the chain's. A record whose
            // version was raised and its own hash made to match, the rest
            // of the chain left as written, is tamper, never "run the build
            // that wrote it".
            (JournalError::BuildSkew(_), Some(row)) => {
                held_past_the_skew(run, verified.len(), &row, rest, expected_head, check).err().unwrap_or(error)
            }
            _ => error,
        }
    })
}

/// The rest of a chain past `row`, the `index`-th, whose body this build
/// cannot read: the links, signatures and recorded head that need no body.
fn held_past_the_skew(
    run: &RunId,
    index: usize,
    row: &StoredRecord,
    rest: impl Iterator<Item = StoredRecord>,
    expected_head: Option<ExpectedHead>,
    check: ChainCheck<'_>,
) -> Result<(), JournalError> {
    let mut prev = row.hash;
    let mut count = index + 1;
    for row in rest {
        check_link(run, count, prev, &row)?;
        check_signature(run, &row, check)?;
        prev = row.hash;
        count += 1;
    }
    check_head(run, count, prev, expected_head)
}

fn verify_rows_or_back<I: ExactSizeIterator<Item = StoredRecord>>(
    run: &RunId,
    mut rows: I,
    expected_head: Option<ExpectedHead>,
    check: ChainCheck<'_>,
) -> Result<Vec<VerifiedRecord>, Box<Failed<I>>> {
    let mut prev = ChainHash::GENESIS;
    let count = rows.len();
    let mut out = Vec::with_capacity(count);
    let mut index = 0;
    while let Some(row) = rows.next() {
        let checked = verify_row(run, index, prev, &row, check);
        let record = match checked {
            Ok(record) => record,
            Err(error) => return Err(Box::new(Failed { error, verified: out, row: Some(row), rest: rows })),
        };
        prev = row.hash;
        out.push(VerifiedRecord { stored: row, record });
        index += 1;
    }
    match check_head(run, count, prev, expected_head) {
        Ok(()) => Ok(out),
        Err(error) => Err(Box::new(Failed { error, verified: out, row: None, rest: rows })),
    }
}

/// One row of [`verify_rows_or_back`]: its link, its signature, then its body.
fn verify_row(
    run: &RunId,
    index: usize,
    prev: ChainHash,
    row: &StoredRecord,
    check: ChainCheck<'_>,
) -> Result<Record, JournalError> {
    check_link(run, index, prev, row)?;
    check_signature(run, row, check)?;
    // Only now, with the bytes proven to be the ones written, is the body read.
    let record = match Record::decode_verified(&row.bytes, check.upcasters) {
        Ok(record) => record,
        // Every build writes a JSON record with its kind and version, so
        // bytes without them are no build's record, whatever a newer
        // build reads: a row rewritten behind the plane with a hash made
        // to match, which must not pass as a rolling deploy (R-VER-4
        // keeps build skew for records a build did write).
        Err(JournalError::BuildSkew(_)) if Record::header(&row.bytes).is_none() => {
            return Err(tamper(
                run,
                row.seq,
                TamperKind::MalformedRow,
                Some("the bytes are no build's record (not JSON with a kind and a version)".into()),
            ));
        }
        Err(err) => return Err(err),
    };
    if record.run != *run || record.seq != row.seq {
        return Err(tamper(
            run,
            row.seq,
            TamperKind::Reorder,
            Some(format!("the record says run {} seq {}", record.run, record.seq)),
        ));
    }
    if RecordKind::parse(&row.kind) != Some(record.kind()) || row.effect_key != record.effect_key {
        return Err(tamper(run, row.seq, TamperKind::ColumnMismatch, None));
    }
    Ok(record)
}

/// Checks only the links of a run's rows (positions, `prev_hash`, hashes over
/// the stored bytes) without reading any body: what an upcast never changes (R-VER-5).
pub fn verify_links(
    run: &RunId,
    rows: &[StoredRecord],
    expected_head: Option<ExpectedHead>,
) -> Result<(), JournalError> {
    let mut prev = ChainHash::GENESIS;
    for (index, row) in rows.iter().enumerate() {
        check_link(run, index, prev, row)?;
        prev = row.hash;
    }
    check_head(run, rows.len(), prev, expected_head)
}

/// The `index`-th row's position and link: seq `index + 1`, linked to `prev`,
/// hash over its bytes.
fn check_link(run: &RunId, index: usize, prev: ChainHash, row: &StoredRecord) -> Result<(), JournalError> {
    let expected_seq = index as u64 + 1;
    if row.seq != expected_seq {
        let kind = if row.seq > expected_seq { TamperKind::Gap } else { TamperKind::Reorder };
        return Err(tamper(run, expected_seq, kind, Some(format!("found seq {}", row.seq))));
    }
    if row.prev_hash != prev {
        return Err(tamper(run, row.seq, TamperKind::BrokenLink, None));
    }
    if ChainHash::link(&prev, &row.bytes) != row.hash {
        return Err(tamper(run, row.seq, TamperKind::HashMismatch, None));
    }
    Ok(())
}

/// The head recorded elsewhere (runs table, seal) against the last row.
fn check_head(
    run: &RunId,
    rows: usize,
    last: ChainHash,
    expected_head: Option<ExpectedHead>,
) -> Result<(), JournalError> {
    let Some(head) = expected_head else {
        return Ok(());
    };
    let last_seq = rows as u64;
    if head.seq > last_seq {
        return Err(tamper(run, last_seq + 1, TamperKind::Gap, Some(format!("the head is at seq {}", head.seq))));
    }
    if head.seq < last_seq || head.hash != last {
        return Err(tamper(run, head.seq.max(1), TamperKind::SealMismatch, Some("the recorded head differs".into())));
    }
    Ok(())
}

fn check_signature(run: &RunId, row: &StoredRecord, check: ChainCheck<'_>) -> Result<(), JournalError> {
    let strict = check.options.require_signature;
    let unsigned = |problem: String| JournalError::Unsigned { run: run.clone(), seq: row.seq, problem };
    match (&row.signature, check.verifier) {
        (None, _) if strict => Err(unsigned("unsigned record; require_signature is on".into())),
        (None, _) => Ok(()),
        (Some(signature), Some(verifier)) => {
            match verifier.verify(&signature.key_id, &row.hash, &signature.signature) {
                SignatureCheck::Valid => Ok(()),
                SignatureCheck::Invalid => {
                    Err(tamper(run, row.seq, TamperKind::BadSignature, Some(format!("key id {}", signature.key_id))))
                }
                SignatureCheck::UnknownKey if strict => {
                    Err(unsigned(format!("signed by key id {:?}, which is not trusted here", signature.key_id)))
                }
                SignatureCheck::UnknownKey => Ok(()),
            }
        }
        (Some(signature), None) if strict => {
            Err(unsigned(format!("signed by key id {:?}, and no trusted keys were given", signature.key_id)))
        }
        (Some(_), None) => Ok(()),
    }
}
