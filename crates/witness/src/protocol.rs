//! The C2SP tlog-witness wire format (HEAD text, see the crate README):
//! the add-checkpoint request, the 409 size answer, the monitor path, and the
//! optional sign-subtree request (tlog-witness HEAD only, C2SP #245).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};
use tlog::{ConsistencyProof, NodeHash, Subtree, SubtreeConsistencyProof};

use crate::checkpoint::parse_canonical_u64;
use crate::keys::decode_base64_canonical;

/// The most consistency proof lines a request may carry (the spec's limit).
pub const MAX_PROOF_LINES: usize = 63;
/// The largest add-checkpoint request body this crate sends or reads.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024;
/// The largest response body the client reads.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;
/// The content type of a 409 answer's size body.
pub const SIZE_CONTENT_TYPE: &str = "text/x.tlog.size";
/// The submission path, below the submission prefix.
pub const ADD_CHECKPOINT_PATH: &str = "/add-checkpoint";
/// The optional subtree signing path, below the submission prefix.
pub const SIGN_SUBTREE_PATH: &str = "/sign-subtree";
/// The largest sign-subtree request body this crate sends or reads: the
/// reference checkpoint carries the witness's own cosignatures, and an
/// ML-DSA-44 line alone is about 3.3 kB, so it admits the log's signatures
/// and eight such lines beside 63 proof lines.
pub const MAX_SIGN_SUBTREE_BYTES: usize = 32 * 1024;

/// A parsed add-checkpoint request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddCheckpointRequest {
    /// The size the client believes the witness last cosigned.
    pub old_size: u64,
    /// Consistency proof from `old_size` to the checkpoint's size.
    pub proof: ConsistencyProof,
    /// The signed checkpoint note.
    pub checkpoint_note: String,
}

/// Why a request body was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed add-checkpoint request: {0}")]
pub struct RequestError(pub &'static str);

impl AddCheckpointRequest {
    /// The request body: `old N`, proof lines, a blank line, the note.
    pub fn to_body(&self) -> String {
        let mut body = format!("old {}\n", self.old_size);
        push_proof_and_note(&mut body, self.proof.path(), &self.checkpoint_note);
        body
    }

    /// Parses a request body strictly.
    pub fn parse(body: &[u8]) -> Result<Self, RequestError> {
        let (head, note) = split_body(body, MAX_REQUEST_BYTES).map_err(RequestError)?;
        let mut lines = head.split('\n');
        let old = lines
            .next()
            .and_then(|line| line.strip_prefix("old "))
            .ok_or(RequestError("first line is not `old <size>`"))?;
        let old_size = parse_canonical_u64(old).ok_or(RequestError("old size is not a canonical decimal"))?;
        let path = proof_path(lines, |line| {
            let bytes = decode_base64_canonical(line).ok_or("a proof line is not canonical base64")?;
            NodeHash::try_from(bytes.as_slice()).map_err(|_| "a proof hash is not 32 bytes")
        })
        .map_err(RequestError)?;
        Ok(Self { old_size, proof: ConsistencyProof::new(path), checkpoint_note: note.to_owned() })
    }
}

/// A parsed sign-subtree request (C2SP tlog-witness HEAD, "sign-subtree"):
/// `subtree <start> <end>`, the subtree hash, 0 to 63 proof lines, a blank
/// line, then a checkpoint note carrying the witness's own cosignature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignSubtreeRequest {
    /// The subtree to sign; valid by construction
    /// (draft-ietf-plants-merkle-tree-certs-03 section 4.1).
    pub subtree: Subtree,
    /// The subtree's hash.
    pub hash: NodeHash,
    /// The subtree consistency proof to the reference checkpoint's tree
    /// (draft section 4.4).
    pub proof: SubtreeConsistencyProof,
    /// The reference checkpoint, with the witness's cosignature among its signatures.
    pub checkpoint_note: String,
}

/// Why a sign-subtree request body was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed sign-subtree request: {0}")]
pub struct SubtreeRequestError(pub &'static str);

impl SignSubtreeRequest {
    /// The request body.
    pub fn to_body(&self) -> String {
        let mut body = format!(
            "subtree {} {}\n{}\n",
            self.subtree.start(),
            self.subtree.end(),
            STANDARD.encode(self.hash.as_bytes())
        );
        push_proof_and_note(&mut body, self.proof.path(), &self.checkpoint_note);
        body
    }

    /// Parses a request body strictly: canonical decimals, a valid subtree,
    /// canonical base64 of 32-byte hashes, at most 63 proof lines, at most
    /// [`MAX_SIGN_SUBTREE_BYTES`].
    pub fn parse(body: &[u8]) -> Result<Self, SubtreeRequestError> {
        let (head, note) = split_body(body, MAX_SIGN_SUBTREE_BYTES).map_err(SubtreeRequestError)?;
        let mut lines = head.split('\n');
        let range = lines
            .next()
            .and_then(|line| line.strip_prefix("subtree "))
            .ok_or(SubtreeRequestError("first line is not `subtree <start> <end>`"))?;
        let (start, end) =
            range.split_once(' ').ok_or(SubtreeRequestError("first line is not `subtree <start> <end>`"))?;
        let decimal = |text| parse_canonical_u64(text).ok_or(SubtreeRequestError("a bound is not a canonical decimal"));
        let subtree = Subtree::new(decimal(start)?, decimal(end)?).map_err(|_| {
            SubtreeRequestError("not a valid subtree (draft-ietf-plants-merkle-tree-certs section 4.1)")
        })?;
        let hash_line = lines.next().ok_or(SubtreeRequestError("no subtree hash line"))?;
        let hash = parse_hash(hash_line).ok_or(SubtreeRequestError("the subtree hash is not base64 of 32 bytes"))?;
        let path = proof_path(lines, |line| parse_hash(line).ok_or("a proof line is not base64 of 32 bytes"))
            .map_err(SubtreeRequestError)?;
        Ok(Self { subtree, hash, proof: SubtreeConsistencyProof::new(path), checkpoint_note: note.to_owned() })
    }
}

/// What every witness request body is: at most `max` bytes of UTF-8, lines
/// of its own, a blank line, then the checkpoint note.
fn split_body(body: &[u8], max: usize) -> Result<(&str, &str), &'static str> {
    if body.len() > max {
        return Err("body too large");
    }
    let body = std::str::from_utf8(body).map_err(|_| "not UTF-8")?;
    body.split_once("\n\n").ok_or("no blank line before the checkpoint")
}

/// A request's proof lines, at most [`MAX_PROOF_LINES`], each read by `hash`.
fn proof_path<'a>(
    lines: impl Iterator<Item = &'a str>,
    hash: impl Fn(&str) -> Result<NodeHash, &'static str>,
) -> Result<Vec<NodeHash>, &'static str> {
    let mut path = Vec::new();
    for line in lines {
        if path.len() == MAX_PROOF_LINES {
            return Err("more than 63 proof lines");
        }
        path.push(hash(line)?);
    }
    Ok(path)
}

/// A request body's tail: one base64 line per proof hash, a blank line, the note.
fn push_proof_and_note(body: &mut String, path: &[NodeHash], note: &str) {
    for hash in path {
        body.push_str(&STANDARD.encode(hash.as_bytes()));
        body.push('\n');
    }
    body.push('\n');
    body.push_str(note);
}

fn parse_hash(line: &str) -> Option<NodeHash> {
    NodeHash::try_from(decode_base64_canonical(line)?.as_slice()).ok()
}

/// Reads the witness's size from a 409 answer, strictly: the content type
/// exactly `text/x.tlog.size` and the body a canonical decimal and one newline.
pub fn parse_conflict_size(content_type: Option<&str>, body: &[u8]) -> Option<u64> {
    if content_type != Some(SIZE_CONTENT_TYPE) {
        return None;
    }
    let text = std::str::from_utf8(body).ok()?.strip_suffix('\n')?;
    parse_canonical_u64(text)
}

/// The monitor path segment of an origin: lowercase hex SHA-256 of its bytes.
pub fn origin_hash(origin: &str) -> String {
    let digest: [u8; 32] = Sha256::digest(origin.as_bytes()).into();
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The monitor path of an origin, below the monitoring prefix.
pub fn monitor_path(origin: &str) -> String {
    format!("/{}/checkpoint", origin_hash(origin))
}
