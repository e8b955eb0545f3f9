//! C2SP signed-note: parse, verify and sign, following the contract of Go's
//! `note.Open`: the only way to a note's text is through verification.

use crate::error::NoteError;
use crate::keys::{ALG_ED25519, SignerKey, VerifierKey, check_key_name, decode_base64_go, encode_base64};

/// The largest note this crate reads (ML-DSA-44 cosignature lines are about
/// 3.3 kB each; a hundred of them fit).
pub const MAX_NOTE_BYTES: usize = 1 << 20;
/// The most signature lines a note may carry (Go's limit; the spec requires at least 16).
pub const MAX_SIGNATURES: usize = 100;

const EM_DASH_SPACE: &str = "\u{2014} ";

/// One signature line: who signed (name and key id) and the signature bytes
/// after the key id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NoteSignature {
    /// The key name on the line.
    pub name: String,
    /// The 4-byte key id that leads the decoded bytes.
    pub key_id: u32,
    /// The algorithm-specific signature (after the key id).
    pub signature: Vec<u8>,
}

impl NoteSignature {
    /// The line as it appears in a note, with its final newline.
    pub fn to_line(&self) -> String {
        let mut bytes = Vec::with_capacity(4 + self.signature.len());
        bytes.extend_from_slice(&self.key_id.to_be_bytes());
        bytes.extend_from_slice(&self.signature);
        format!("{EM_DASH_SPACE}{} {}\n", self.name, encode_base64(&bytes))
    }

    /// Parses one line (without its newline).
    pub fn parse_line(line: &str) -> Result<Self, NoteError> {
        let rest = line
            .strip_prefix(EM_DASH_SPACE)
            .ok_or(NoteError::Malformed("a signature line starts with an em dash and a space"))?;
        let (name, encoded) =
            rest.split_once(' ').ok_or(NoteError::Malformed("a signature line is name, space, base64"))?;
        check_key_name(name).map_err(|_| NoteError::Malformed("a signature line names an invalid key"))?;
        // Go's decoder, not the canonical one: a line Go's `note.Open` reads
        // (and ignores when its key is unknown) must not refuse the note here.
        let bytes = decode_base64_go(encoded).ok_or(NoteError::Malformed("a signature is not base64"))?;
        if bytes.len() < 5 {
            return Err(NoteError::Malformed("a signature is shorter than a key id and one byte"));
        }
        let (id, signature) = bytes.split_at(4);
        let key_id = u32::from_be_bytes(id.try_into().map_err(|_| NoteError::Malformed("a signature has no key id"))?);
        Ok(Self { name: name.to_owned(), key_id, signature: signature.to_vec() })
    }
}

/// A verifier of one key's signatures over note text.
pub trait NoteVerifier {
    /// The key name.
    fn name(&self) -> &str;
    /// The key id.
    fn key_id(&self) -> u32;
    /// Whether `signature` (the bytes after the key id) signs `text`.
    fn verify(&self, text: &[u8], signature: &[u8]) -> bool;
    /// The signature type byte: 0x01 (Ed25519 note signatures) unless said
    /// otherwise. [`open`] refuses a trusted key of any other type.
    fn algorithm(&self) -> u8 {
        ALG_ED25519
    }
}

impl NoteVerifier for VerifierKey {
    fn name(&self) -> &str {
        VerifierKey::name(self)
    }

    fn key_id(&self) -> u32 {
        VerifierKey::key_id(self)
    }

    fn algorithm(&self) -> u8 {
        VerifierKey::algorithm(self)
    }

    /// Only Ed25519 note signatures (0x01) verify as note signatures; a
    /// cosignature key (0x04) signs a different message, see [`crate::cosignature`].
    fn verify(&self, text: &[u8], signature: &[u8]) -> bool {
        if self.algorithm() != ALG_ED25519 {
            return false;
        }
        let Some(key) = self.ed25519_key() else {
            return false;
        };
        let Ok(signature) = ed25519_dalek::Signature::from_slice(signature) else {
            return false;
        };
        // Cofactorless RFC 8032 verification, as Go's crypto/ed25519 does.
        ed25519_dalek::Verifier::verify(&key, text, &signature).is_ok()
    }
}

/// A note whose text was verified by at least one trusted key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedNote {
    text: String,
    verified: Vec<NoteSignature>,
    others: Vec<NoteSignature>,
    /// Every kept line in the order received.
    lines: Vec<NoteSignature>,
}

impl VerifiedNote {
    /// The verified text, with its final newline.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Signatures by trusted keys, each verified (one per key).
    pub fn verified_signatures(&self) -> &[NoteSignature] {
        &self.verified
    }

    /// Signatures by keys not trusted here, left alone as the spec says
    /// (cosignatures, rotated keys); identical repeated lines appear once.
    pub fn other_signatures(&self) -> &[NoteSignature] {
        &self.others
    }

    /// The note again: text, blank line, every kept signature line in the
    /// order received.
    pub fn to_note(&self) -> String {
        assemble(&self.text, &self.lines)
    }
}

/// Assembles a signed note: `text` (with its final newline), a blank line,
/// then one line per signature in the order given. The inverse of
/// [`split_note`], and the one place note bytes are put together: [`sign`],
/// [`VerifiedNote::to_note`], a witness's served note and
/// [`SignedCheckpoint::cosigned_note`](crate::SignedCheckpoint::cosigned_note)
/// all come through here. The text is not checked: [`sign`] checks what it
/// signs, and the other callers hold verified text.
pub fn assemble<'a>(text: &str, signatures: impl IntoIterator<Item = &'a NoteSignature>) -> String {
    let mut note = String::with_capacity(text.len() + 1 + 128);
    note.push_str(text);
    note.push('\n');
    push_signature_lines(&mut note, signatures);
    note
}

/// Appends one line per signature to a note being assembled.
pub(crate) fn push_signature_lines<'a>(note: &mut String, signatures: impl IntoIterator<Item = &'a NoteSignature>) {
    for signature in signatures {
        note.push_str(&signature.to_line());
    }
}

/// A parsed note: its text and signature lines, before any verification.
pub(crate) struct ParsedNote<'a> {
    pub text: &'a str,
    pub signatures: Vec<NoteSignature>,
}

fn check_characters(message: &str) -> Result<(), NoteError> {
    if message.chars().any(|c| c < '\u{20}' && c != '\n') {
        return Err(NoteError::Malformed("a note contains a control character other than newline"));
    }
    Ok(())
}

/// Splits a note into text and signature lines, enforcing the format and limits.
pub(crate) fn parse(message: &[u8]) -> Result<ParsedNote<'_>, NoteError> {
    if message.len() > MAX_NOTE_BYTES {
        return Err(NoteError::TooLarge { size: message.len(), limit: MAX_NOTE_BYTES });
    }
    let message = std::str::from_utf8(message).map_err(|_| NoteError::Malformed("a note is not UTF-8"))?;
    check_characters(message)?;
    let (text, signature_block) = split_note(message)?;
    Ok(ParsedNote { text, signatures: parse_signature_lines(signature_block)? })
}

/// Splits a note at its last blank line into the text (with its final
/// newline) and the block of signature lines. The one place a note is split.
pub fn split_note(message: &str) -> Result<(&str, &str), NoteError> {
    let split = message.rfind("\n\n").ok_or(NoteError::Malformed("no blank line between text and signatures"))?;
    let (text, rest) = message.split_at(split + 1);
    Ok((text, rest.strip_prefix('\n').unwrap_or(rest)))
}

/// Parses a block of signature lines, each ending in a newline (such as a
/// witness's answer to add-checkpoint). At most [`MAX_SIGNATURES`] lines.
pub fn parse_signature_lines(block: &str) -> Result<Vec<NoteSignature>, NoteError> {
    if block.len() > MAX_NOTE_BYTES {
        return Err(NoteError::TooLarge { size: block.len(), limit: MAX_NOTE_BYTES });
    }
    if block.is_empty() {
        return Err(NoteError::Malformed("no signature lines"));
    }
    let lines =
        block.strip_suffix('\n').ok_or(NoteError::Malformed("the last signature line does not end in a newline"))?;
    let mut signatures = Vec::new();
    for line in lines.split('\n') {
        if signatures.len() == MAX_SIGNATURES {
            return Err(NoteError::Malformed("more than 100 signature lines"));
        }
        signatures.push(NoteSignature::parse_line(line)?);
    }
    Ok(signatures)
}

/// Verifies a note against trusted keys and returns its text (Go's `note.Open`).
///
/// A signature whose name and key id both match a trusted key must verify,
/// or the whole note is refused ([`NoteError::InvalidSignature`]); a note no
/// trusted key signed is refused ([`NoteError::Unverified`]); signatures by
/// other keys are kept, unverified, in [`VerifiedNote::other_signatures`].
/// One departure from Go, on purpose: a trusted key's signature spelled in
/// non-canonical base64 (padding bits set, which Go ignores) is refused, so
/// a verified note's bytes are exactly the ones signed.
///
/// A trusted key that is not a note key (a witness's cosignature key, 0x04
/// or 0x06) is refused before anything is read ([`NoteError::NotANoteKey`]):
/// no line verifies under it, and a mistaken key must not read as a forged note.
pub fn open(message: &[u8], trusted: &[&dyn NoteVerifier]) -> Result<VerifiedNote, NoteError> {
    if let Some(key) = trusted.iter().find(|key| key.algorithm() != ALG_ED25519) {
        return Err(NoteError::NotANoteKey { name: key.name().to_owned(), algorithm: key.algorithm() });
    }
    let parsed = parse(message)?;
    // `parse` read UTF-8 and split already; these are the same lines, one per signature.
    let block = std::str::from_utf8(message).ok().map(split_note).and_then(Result::ok).map_or("", |(_, block)| block);
    let total = parsed.signatures.len();
    let mut verified: Vec<NoteSignature> = Vec::new();
    let mut others: Vec<NoteSignature> = Vec::new();
    let mut lines = Vec::new();
    for (signature, line) in parsed.signatures.into_iter().zip(block.split_terminator('\n')) {
        let key = trusted.iter().find(|key| key.name() == signature.name && key.key_id() == signature.key_id);
        match key {
            None => {
                if !others.contains(&signature) {
                    others.push(signature.clone());
                    lines.push(signature);
                }
            }
            Some(key) => {
                // One signature per trusted key counts; later ones by the same key are dropped unread.
                if verified.iter().any(|seen| seen.name == signature.name && seen.key_id == signature.key_id) {
                    continue;
                }
                if !key.verify(parsed.text.as_bytes(), &signature.signature) {
                    return Err(NoteError::InvalidSignature { name: signature.name, key_id: signature.key_id });
                }
                // Go's decoder ignores base64's padding bits, so several
                // spellings decode to one signature; a verified note accepts
                // only the one its signer wrote, so no byte of it can change.
                if signature.to_line().strip_suffix('\n') != Some(line) {
                    return Err(NoteError::Malformed(
                        "a trusted key's signature is not canonical base64: the line is not what its signer wrote",
                    ));
                }
                verified.push(signature.clone());
                lines.push(signature);
            }
        }
    }
    if verified.is_empty() {
        return Err(NoteError::Unverified { signatures: total });
    }
    Ok(VerifiedNote { text: parsed.text.to_owned(), verified, others, lines })
}

/// Checks text that is about to be signed: non-empty, newline-terminated,
/// no control characters, no blank line at the end (it would be read as the separator).
pub(crate) fn check_text(text: &str) -> Result<(), NoteError> {
    if !text.ends_with('\n') {
        return Err(NoteError::BadText("note text must end with a newline"));
    }
    if text.len() > MAX_NOTE_BYTES {
        return Err(NoteError::BadText("note text is larger than the note limit"));
    }
    check_characters(text).map_err(|_| NoteError::BadText("note text contains a control character"))?;
    if text == "\n" || text.ends_with("\n\n") {
        return Err(NoteError::BadText("note text must not end with a blank line"));
    }
    Ok(())
}

/// Signs `text` with Ed25519 note keys (algorithm 0x01) and returns the whole
/// note, byte-identical to Go's `note.Sign`. A note [`open`] would refuse is
/// never returned: at most [`MAX_SIGNATURES`] signers, no control character
/// in a signer's name, and the whole note at most [`MAX_NOTE_BYTES`]
/// ([`NoteError::BadText`] otherwise).
pub fn sign(text: &str, signers: &[&SignerKey]) -> Result<String, NoteError> {
    check_text(text)?;
    if signers.is_empty() {
        return Err(NoteError::BadText("no signer given"));
    }
    if signers.len() > MAX_SIGNATURES {
        return Err(NoteError::BadText("more than 100 signers: no reader accepts a note with that many signatures"));
    }
    let mut signatures = Vec::with_capacity(signers.len());
    for signer in signers {
        if signer.algorithm() != ALG_ED25519 {
            return Err(NoteError::BadText("a note signer must be an Ed25519 note key (0x01)"));
        }
        let signature = signer
            .sign_ed25519(text.as_bytes())
            .ok_or(NoteError::BadText("a note signer must be an Ed25519 note key (0x01)"))?;
        signatures.push(NoteSignature {
            name: signer.name().to_owned(),
            key_id: signer.key_id(),
            signature: signature.to_vec(),
        });
    }
    let note = assemble(text, &signatures);
    // What is signed here must open: `open` refuses a note past the limit.
    if note.len() > MAX_NOTE_BYTES {
        return Err(NoteError::BadText(
            "with its signature lines the note would be larger than the 1 MiB note limit: sign shorter text",
        ));
    }
    // The text is checked already: a control character here is in a key's
    // name (a name refuses only white space and '+'), and `open` refuses it.
    if check_characters(&note).is_err() {
        return Err(NoteError::BadText(
            "a signer's key name contains a control character, which no reader accepts in a note: rename the key",
        ));
    }
    Ok(note)
}
