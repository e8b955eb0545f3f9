//! C2SP tlog-checkpoint bodies, parsed strictly, and checkpoints signed by a
//! log's key as they go out.

use core::fmt;

use tlog::{RootHash, Tree};

use crate::error::{CheckpointError, KeyError, NoteError};
use crate::keys::{ALG_ED25519, SignerKey, VerifierKey, decode_base64_canonical, encode_base64};
use crate::note::{self, NoteSignature, NoteVerifier, VerifiedNote};

/// A log's origin: the first line of its checkpoints, validated once
/// (non-empty, one line, printable: no control character).
///
/// ```
/// use witness::Origin;
/// assert!(Origin::new("example.com/log").is_ok());
/// assert!(Origin::new("").is_err());
/// assert!(Origin::new("two\nlines").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin(String);

impl Origin {
    /// The longest origin accepted: a line, not a document.
    pub const MAX_LEN: usize = 1024;

    /// Validates `origin`.
    pub fn new(origin: &str) -> Result<Self, CheckpointError> {
        if origin.is_empty() {
            return Err(CheckpointError::BadOrigin("the origin is empty"));
        }
        if origin.len() > Self::MAX_LEN {
            return Err(CheckpointError::BadOrigin("the origin is longer than 1024 bytes"));
        }
        if origin.chars().any(char::is_control) {
            return Err(CheckpointError::BadOrigin("the origin contains a newline or another control character"));
        }
        Ok(Self(origin.to_owned()))
    }

    /// The origin line.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Origin {
    type Err = CheckpointError;

    fn from_str(origin: &str) -> Result<Self, CheckpointError> {
        Self::new(origin)
    }
}

impl AsRef<str> for Origin {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Origin {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Origin {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// The body of a checkpoint: origin, tree size and root, and opaque extension lines.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Checkpoint {
    origin: Origin,
    tree: Tree,
    extensions: Vec<String>,
}

/// Parses a decimal with no sign, no leading zero (except `0` itself), that fits u64.
pub(crate) fn parse_canonical_u64(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) || (text.len() > 1 && text.starts_with('0')) {
        return None;
    }
    text.parse().ok()
}

impl Checkpoint {
    /// A checkpoint of `tree` for `origin`, with no extension lines.
    pub fn new(origin: &Origin, tree: Tree) -> Self {
        Self { origin: origin.clone(), tree, extensions: Vec::new() }
    }

    /// A checkpoint with extension lines (NOT RECOMMENDED by the spec: they are
    /// not auditable).
    pub fn with_extensions(origin: &Origin, tree: Tree, extensions: Vec<String>) -> Result<Self, CheckpointError> {
        let valid_line = |line: &str| !line.is_empty() && !line.chars().any(|c| c < '\u{20}');
        if !extensions.iter().all(|line| valid_line(line)) {
            return Err(CheckpointError::Malformed("extension lines must be non-empty single lines"));
        }
        Ok(Self { origin: origin.clone(), tree, extensions })
    }

    /// Parses a checkpoint body (the note text): every line non-empty and
    /// newline-terminated, a canonical decimal size, a canonical base64
    /// 32-byte root.
    pub fn parse(text: &str) -> Result<Self, CheckpointError> {
        let body = text.strip_suffix('\n').ok_or(CheckpointError::Malformed("the body must end with a newline"))?;
        let mut lines = body.split('\n');
        let origin = lines.next().unwrap_or_default();
        let size = lines.next().ok_or(CheckpointError::Malformed("no tree size line"))?;
        let root = lines.next().ok_or(CheckpointError::Malformed("no root hash line"))?;
        let extensions: Vec<String> = lines.map(str::to_owned).collect();
        let size = parse_canonical_u64(size)
            .ok_or(CheckpointError::Malformed("the tree size must be a decimal with no sign or leading zeros"))?;
        let root = decode_base64_canonical(root)
            .and_then(|bytes| RootHash::try_from(bytes.as_slice()).ok())
            .ok_or(CheckpointError::Malformed("the root must be the canonical base64 of 32 bytes"))?;
        Self::with_extensions(&Origin::new(origin)?, Tree::new(size, root), extensions)
    }

    /// The log's origin line.
    pub fn origin(&self) -> &str {
        self.origin.as_str()
    }

    /// The log's origin, validated.
    pub fn origin_id(&self) -> &Origin {
        &self.origin
    }

    /// The tree head: size and root.
    pub fn tree(&self) -> Tree {
        self.tree
    }

    /// The extension lines.
    pub fn extensions(&self) -> &[String] {
        &self.extensions
    }

    /// The body as note text.
    pub fn to_text(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Checkpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.origin)?;
        writeln!(f, "{}", self.tree.size)?;
        writeln!(f, "{}", encode_base64(self.tree.root.as_bytes()))?;
        for line in &self.extensions {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

/// A checkpoint with its whole signed note, as sent to witnesses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCheckpoint {
    checkpoint: Checkpoint,
    note: String,
}

impl SignedCheckpoint {
    /// Verifies a signed checkpoint note against the log's trusted keys and parses its body.
    pub fn open(note_bytes: &[u8], log_keys: &[&dyn NoteVerifier]) -> Result<(Self, VerifiedNote), CheckpointError> {
        let verified = note::open(note_bytes, log_keys)?;
        let checkpoint = Checkpoint::parse(verified.text())?;
        let note = String::from_utf8_lossy(note_bytes).into_owned();
        Ok((Self { checkpoint, note }, verified))
    }

    /// The checkpoint.
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The whole note: body, blank line, signature lines.
    pub fn note(&self) -> &str {
        &self.note
    }

    /// The cosigned note: this note as it is, then one cosignature line per
    /// witness identity (name and key id; later lines of an identity already
    /// given are dropped), in the order given. What a log saves and serves
    /// after a witness round; the lines are written by the same code as
    /// every note's ([`note::assemble`]).
    pub fn cosigned_note<'a>(&self, cosignatures: impl IntoIterator<Item = &'a NoteSignature>) -> String {
        let mut seen: Vec<(&str, u32)> = Vec::new();
        let unique = cosignatures.into_iter().filter(|line| {
            let identity = (line.name.as_str(), line.key_id);
            let new = !seen.contains(&identity);
            if new {
                seen.push(identity);
            }
            new
        });
        let mut note = self.note.clone();
        note::push_signature_lines(&mut note, unique);
        note
    }
}

/// A log's signing key and note key name (R-NOTE-2). Every checkpoint is
/// signed as it goes out; nothing holds a signature for later.
#[derive(Debug, Clone)]
pub struct LogKey {
    signer: SignerKey,
}

impl LogKey {
    /// A log key from an Ed25519 note signer (algorithm 0x01); a cosignature
    /// key (0x04, 0x06) is refused as [`KeyError::NotANoteKey`]. The key name
    /// SHOULD be the log's origin.
    pub fn new(signer: SignerKey) -> Result<Self, KeyError> {
        if signer.algorithm() != ALG_ED25519 {
            return Err(KeyError::NotANoteKey { name: signer.name().to_owned(), algorithm: signer.algorithm() });
        }
        Ok(Self { signer })
    }

    /// The note key name.
    pub fn name(&self) -> &str {
        self.signer.name()
    }

    /// The verifier key others use to check this log's checkpoints.
    pub fn verifier_key(&self) -> VerifierKey {
        self.signer.verifier_key()
    }

    /// Signs this checkpoint now.
    pub fn sign(&self, checkpoint: &Checkpoint) -> Result<SignedCheckpoint, NoteError> {
        let note = note::sign(&checkpoint.to_text(), &[&self.signer])?;
        Ok(SignedCheckpoint { checkpoint: checkpoint.clone(), note })
    }
}
