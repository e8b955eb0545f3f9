//! Note keys: names, key ids, verifier keys (`vkey`) and signer keys (`skey`)
//! in the exact text forms Go's `golang.org/x/mod/sumdb/note` reads and writes.

use core::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::error::KeyError;

/// Signature type 0x01: Ed25519 over the note text (C2SP signed-note).
pub const ALG_ED25519: u8 = 0x01;
/// Signature type 0x04: timestamped Ed25519 checkpoint cosignature (cosignature/v1).
pub const ALG_COSIGNATURE_V1: u8 = 0x04;
/// Signature type 0x06: timestamped ML-DSA-44 (sub)tree cosignature
/// (tlog-cosignature v1.1.0-rc.1, `subtree/v1`).
pub const ALG_ML_DSA_44: u8 = 0x06;

const ED25519_KEY_LEN: usize = 32;
/// The length of an ML-DSA-44 public key (FIPS 204 pkEncode).
pub const ML_DSA_44_KEY_LEN: usize = 1312;
const SKEY_PREFIX: &str = "PRIVATE+KEY+";

/// The 4-byte key id of signed-note: the first four bytes, big-endian, of
/// `SHA-256(name || 0x0A || algorithm || public key)`.
pub fn key_id(name: &str, algorithm: u8, public_key: &[u8]) -> u32 {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update([b'\n', algorithm]);
    hasher.update(public_key);
    let digest: [u8; 32] = hasher.finalize().into();
    let [a, b, c, d, ..] = digest;
    u32::from_be_bytes([a, b, c, d])
}

/// Checks a key name: non-empty, no Unicode white space, no `+`.
pub fn check_key_name(name: &str) -> Result<(), KeyError> {
    if name.is_empty() {
        return Err(KeyError::BadName { name: name.to_owned(), reason: "it is empty" });
    }
    if name.chars().any(char::is_whitespace) {
        return Err(KeyError::BadName { name: name.to_owned(), reason: "it contains white space" });
    }
    if name.contains('+') {
        return Err(KeyError::BadName { name: name.to_owned(), reason: "it contains '+'" });
    }
    Ok(())
}

/// Decodes standard padded base64 and refuses any non-canonical spelling.
pub(crate) fn decode_base64_canonical(text: &str) -> Option<Vec<u8>> {
    let bytes = STANDARD.decode(text).ok()?;
    (STANDARD.encode(&bytes) == text).then_some(bytes)
}

/// Decodes base64 as Go's `base64.StdEncoding` does: padding required,
/// non-zero trailing bits accepted. Signed-note signature lines are read this
/// way, so that a line from an unknown key that Go's `note.Open` ignores is
/// ignored here too rather than refusing the whole note.
pub(crate) fn decode_base64_go(text: &str) -> Option<Vec<u8>> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const GO_STD: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
    );
    GO_STD.decode(text).ok()
}

pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

fn parse_key_id(text: &str) -> Result<u32, KeyError> {
    if text.len() != 8 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(KeyError::Malformed("the key id must be 8 hex digits"));
    }
    u32::from_str_radix(text, 16).map_err(|_| KeyError::Malformed("the key id must be 8 hex digits"))
}

/// Refuses an Ed25519 public key of small order ([`KeyError::WeakKey`]): the
/// signature (R = identity, s = 0) verifies under it for every message, with
/// the cofactorless verification Go and this crate use. Bytes that are no
/// point are left to verification, which answers no for every signature.
fn check_not_weak(public_key: &[u8]) -> Result<(), KeyError> {
    let weak = <[u8; ED25519_KEY_LEN]>::try_from(public_key)
        .ok()
        .and_then(|bytes| VerifyingKey::from_bytes(&bytes).ok())
        .is_some_and(|key| key.is_weak());
    if weak { Err(KeyError::WeakKey) } else { Ok(()) }
}

/// A public key as a note verifier key: name, key id, algorithm and key bytes.
/// Parsed from and printed as `name+hexid+base64(algorithm || key)`.
#[derive(Clone, PartialEq, Eq)]
pub struct VerifierKey {
    name: String,
    key_id: u32,
    algorithm: u8,
    public_key: Vec<u8>,
}

impl fmt::Debug for VerifierKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VerifierKey({self})")
    }
}

impl fmt::Display for VerifierKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut encoded = Vec::with_capacity(1 + self.public_key.len());
        encoded.push(self.algorithm);
        encoded.extend_from_slice(&self.public_key);
        write!(f, "{}+{:08x}+{}", self.name, self.key_id, encode_base64(&encoded))
    }
}

impl core::str::FromStr for VerifierKey {
    type Err = KeyError;

    fn from_str(text: &str) -> Result<Self, KeyError> {
        Self::parse(text)
    }
}

impl VerifierKey {
    /// Parses a vkey. The key id must match the one recomputed from the name
    /// and key; the algorithm must be one this crate knows (0x01, 0x04, 0x06).
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let mut parts = text.splitn(3, '+');
        let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(KeyError::Malformed("a verifier key is name+hexid+base64"));
        };
        check_key_name(name)?;
        let key_id = parse_key_id(id)?;
        let encoded = decode_base64_canonical(key).ok_or(KeyError::Malformed("the key is not canonical base64"))?;
        let (&algorithm, public_key) = encoded.split_first().ok_or(KeyError::Malformed("the key is empty"))?;
        let expected_len = match algorithm {
            ALG_ED25519 | ALG_COSIGNATURE_V1 => ED25519_KEY_LEN,
            ALG_ML_DSA_44 => ML_DSA_44_KEY_LEN,
            other => return Err(KeyError::UnknownAlgorithm(other)),
        };
        if public_key.len() != expected_len {
            return Err(KeyError::WrongKeyLength { algorithm, expected: expected_len, actual: public_key.len() });
        }
        if algorithm == ALG_ML_DSA_44 {
            check_ml_dsa_name(name)?;
        } else {
            check_not_weak(public_key)?;
        }
        let computed = self::key_id(name, algorithm, public_key);
        if computed != key_id {
            return Err(KeyError::KeyIdMismatch { stated: key_id, computed });
        }
        Ok(Self { name: name.to_owned(), key_id, algorithm, public_key: public_key.to_vec() })
    }

    /// A verifier key for a 32-byte Ed25519 public key with the given
    /// algorithm byte (0x01 note signer, 0x04 cosigner).
    pub fn ed25519(name: &str, algorithm: u8, public_key: [u8; 32]) -> Result<Self, KeyError> {
        check_key_name(name)?;
        if !matches!(algorithm, ALG_ED25519 | ALG_COSIGNATURE_V1) {
            return Err(KeyError::UnknownAlgorithm(algorithm));
        }
        VerifyingKey::from_bytes(&public_key).map_err(|_| KeyError::Malformed("not a valid Ed25519 public key"))?;
        check_not_weak(&public_key)?;
        let bytes = public_key;
        Ok(Self {
            name: name.to_owned(),
            key_id: key_id(name, algorithm, &bytes),
            algorithm,
            public_key: bytes.to_vec(),
        })
    }

    /// The key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The 4-byte key id.
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    /// The signature type byte.
    pub fn algorithm(&self) -> u8 {
        self.algorithm
    }

    /// The public key bytes, without the algorithm byte.
    pub fn public_key(&self) -> &[u8] {
        &self.public_key
    }

    /// The ML-DSA-44 key, for algorithm 0x06.
    pub(crate) fn ml_dsa_44_key(&self) -> Option<ml_dsa::VerifyingKey<ml_dsa::MlDsa44>> {
        if self.algorithm != ALG_ML_DSA_44 {
            return None;
        }
        let encoded = ml_dsa::EncodedVerifyingKey::<ml_dsa::MlDsa44>::try_from(self.public_key.as_slice()).ok()?;
        Some(ml_dsa::VerifyingKey::decode(&encoded))
    }

    /// The Ed25519 key, for algorithms 0x01 and 0x04.
    pub(crate) fn ed25519_key(&self) -> Option<VerifyingKey> {
        if !matches!(self.algorithm, ALG_ED25519 | ALG_COSIGNATURE_V1) {
            return None;
        }
        let bytes: [u8; ED25519_KEY_LEN] = self.public_key.as_slice().try_into().ok()?;
        VerifyingKey::from_bytes(&bytes).ok()
    }
}

/// The secret half of a [`SignerKey`]. Both algorithms are made from a
/// 32-byte seed: Ed25519's RFC 8032 seed, ML-DSA-44's FIPS 204 `ξ`.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // 232 bytes, held once per key: boxing Ed25519 would buy nothing.
enum Secret {
    Ed25519(SigningKey),
    /// Boxed: an expanded ML-DSA-44 key is tens of kilobytes.
    MlDsa44(Box<ml_dsa::SigningKey<ml_dsa::MlDsa44>>),
}

/// A private key with its note name and algorithm: Ed25519 (0x01 to sign
/// notes as a log, 0x04 to cosign as a witness) or ML-DSA-44 (0x06, to cosign
/// as a witness, tlog-cosignature v1.1.0-rc.1). Parsed from and printed as
/// Go's `PRIVATE+KEY+name+hexid+base64(algorithm || seed)`; for 0x06 the seed
/// is FIPS 204's 32-byte `ξ`, the form transparency-dev/formats writes.
#[derive(Clone)]
pub struct SignerKey {
    name: String,
    algorithm: u8,
    secret: Secret,
}

impl fmt::Debug for SignerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the seed.
        write!(f, "SignerKey({}+{:08x}, algorithm 0x{:02x})", self.name, self.key_id(), self.algorithm)
    }
}

/// The longest key name an ML-DSA-44 cosignature can carry: its signed
/// message holds the name with a one-byte length (tlog-cosignature).
pub const MAX_ML_DSA_NAME_LEN: usize = 255;

fn check_ml_dsa_name(name: &str) -> Result<(), KeyError> {
    if name.len() > MAX_ML_DSA_NAME_LEN {
        return Err(KeyError::BadName {
            name: name.to_owned(),
            reason: "it is longer than 255 bytes, the most an ML-DSA-44 cosignature message can carry",
        });
    }
    Ok(())
}

impl SignerKey {
    /// A key from a 32-byte seed: an Ed25519 seed for 0x01 and 0x04, the
    /// FIPS 204 key generation seed `ξ` for 0x06 (ML-DSA-44).
    pub fn from_seed(name: &str, algorithm: u8, seed: [u8; 32]) -> Result<Self, KeyError> {
        check_key_name(name)?;
        let secret = match algorithm {
            ALG_ED25519 | ALG_COSIGNATURE_V1 => Secret::Ed25519(SigningKey::from_bytes(&seed)),
            ALG_ML_DSA_44 => {
                check_ml_dsa_name(name)?;
                Secret::MlDsa44(Box::new(ml_dsa::SigningKey::<ml_dsa::MlDsa44>::from_seed(&seed.into())))
            }
            other => return Err(KeyError::UnknownAlgorithm(other)),
        };
        Ok(Self { name: name.to_owned(), algorithm, secret })
    }

    /// A fresh key from the operating system's randomness. Its name must
    /// also show as it is: a name holding a character that shows as nothing
    /// or reorders the text around it ([`crate::text::disguises`]) would be
    /// read by a person as another key's, so no new key is made with one
    /// (such a name in a key or note read from elsewhere is still read).
    pub fn generate(name: &str, algorithm: u8) -> Result<Self, KeyError> {
        if name.chars().any(crate::text::disguises) {
            return Err(KeyError::BadName {
                name: name.to_owned(),
                reason: "it holds a character that shows as nothing or reorders the text around it",
            });
        }
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|err| KeyError::Randomness(err.to_string()))?;
        Self::from_seed(name, algorithm, seed)
    }

    /// Parses an skey. The key id must be the public key's.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let rest =
            text.strip_prefix(SKEY_PREFIX).ok_or(KeyError::Malformed("a signer key starts with PRIVATE+KEY+"))?;
        let mut parts = rest.splitn(3, '+');
        let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(KeyError::Malformed("a signer key is PRIVATE+KEY+name+hexid+base64"));
        };
        let stated = parse_key_id(id)?;
        let encoded = decode_base64_canonical(key).ok_or(KeyError::Malformed("the key is not canonical base64"))?;
        let (&algorithm, seed) = encoded.split_first().ok_or(KeyError::Malformed("the key is empty"))?;
        // The type first: a seed length is only wrong for a type we know.
        if !matches!(algorithm, ALG_ED25519 | ALG_COSIGNATURE_V1 | ALG_ML_DSA_44) {
            return Err(KeyError::UnknownAlgorithm(algorithm));
        }
        let seed: [u8; 32] = seed.try_into().map_err(|_| KeyError::WrongKeyLength {
            algorithm,
            expected: ED25519_KEY_LEN,
            actual: seed.len(),
        })?;
        let key = Self::from_seed(name, algorithm, seed)?;
        let computed = key.key_id();
        if computed != stated {
            return Err(KeyError::KeyIdMismatch { stated, computed });
        }
        Ok(key)
    }

    fn seed(&self) -> [u8; 32] {
        match &self.secret {
            Secret::Ed25519(key) => key.to_bytes(),
            Secret::MlDsa44(key) => key.to_seed().into(),
        }
    }

    /// The skey text. Keep it secret.
    pub fn to_skey(&self) -> String {
        let mut encoded = Vec::with_capacity(33);
        encoded.push(self.algorithm);
        encoded.extend_from_slice(&self.seed());
        format!("{SKEY_PREFIX}{}+{:08x}+{}", self.name, self.key_id(), encode_base64(&encoded))
    }

    fn public_key_bytes(&self) -> Vec<u8> {
        match &self.secret {
            Secret::Ed25519(key) => key.verifying_key().to_bytes().to_vec(),
            Secret::MlDsa44(key) => {
                use ml_dsa::signature::Keypair as _;
                key.verifying_key().encode().to_vec()
            }
        }
    }

    /// The matching verifier key.
    pub fn verifier_key(&self) -> VerifierKey {
        let public = self.public_key_bytes();
        VerifierKey {
            name: self.name.clone(),
            key_id: key_id(&self.name, self.algorithm, &public),
            algorithm: self.algorithm,
            public_key: public,
        }
    }

    /// The key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The signature type byte.
    pub fn algorithm(&self) -> u8 {
        self.algorithm
    }

    /// The key id of the public key.
    pub fn key_id(&self) -> u32 {
        key_id(&self.name, self.algorithm, &self.public_key_bytes())
    }

    /// An Ed25519 signature, for keys of algorithm 0x01 or 0x04.
    pub(crate) fn sign_ed25519(&self, message: &[u8]) -> Option<[u8; 64]> {
        match &self.secret {
            Secret::Ed25519(key) => Some(key.sign(message).to_bytes()),
            Secret::MlDsa44(_) => None,
        }
    }

    /// An ML-DSA-44 signature (FIPS 204 ML-DSA.Sign, empty context, the
    /// deterministic variant), for keys of algorithm 0x06.
    pub(crate) fn sign_ml_dsa_44(&self, message: &[u8]) -> Option<Vec<u8>> {
        match &self.secret {
            Secret::Ed25519(_) => None,
            Secret::MlDsa44(key) => {
                let signature = key.expanded_key().sign_deterministic(message, &[]).ok()?;
                Some(signature.encode().to_vec())
            }
        }
    }
}

/// Whether `text`, given where a file's path goes, may rather be key
/// material: the base64 of a seed (a key file's line pasted in its path's
/// place). A command that cannot open such a "path" never prints it.
/// Absolute paths and texts with other characters are paths.
pub fn may_be_key_material(text: &str) -> bool {
    (40..=4096).contains(&text.len())
        && text.len().is_multiple_of(4)
        && !text.starts_with('/')
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}
