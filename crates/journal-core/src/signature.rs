//! Record signatures (R-SIG-1..5): a key id and a signature over the record's
//! chain hash, beside the hash and never inside the body. No algorithm field:
//! the verifier decides what it accepts.

use crate::chain_hash::ChainHash;

/// A signature over one record's chain hash.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySignature {
    /// The key's id, chosen by the deployment (a key name, or a workload such as a SPIFFE ID).
    pub key_id: String,
    /// The signature bytes.
    #[serde(with = "base64_bytes")]
    pub signature: Vec<u8>,
}

mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// Signs chain hashes. A plane with no signer writes unsigned records; it
/// never mints a key for itself (R-SIG-4).
pub trait Signer: Send + Sync {
    /// The key id written beside each signature.
    fn key_id(&self) -> &str;
    /// Signs one chain hash.
    fn sign(&self, hash: &ChainHash) -> KeySignature;
}

/// What a verifier says of one signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureCheck {
    /// A trusted key made it.
    Valid,
    /// The key is trusted and the signature does not verify.
    Invalid,
    /// No trusted key has this id.
    UnknownKey,
}

/// One signature to check: by which key, over which hash.
#[derive(Debug, Clone, Copy)]
pub struct SignedHash<'a> {
    /// The key id written beside the signature.
    pub key_id: &'a str,
    /// The record's chain hash.
    pub hash: &'a ChainHash,
    /// The signature bytes.
    pub signature: &'a [u8],
}

/// Verifies signatures by the keys a caller trusts.
pub trait Verifier: Send + Sync {
    /// Checks `signature` over `hash` by the key `key_id`.
    fn verify(&self, key_id: &str, hash: &ChainHash, signature: &[u8]) -> SignatureCheck;

    /// Whether a key is trusted under `key_id`: `false` when every signature
    /// under it is [`SignatureCheck::UnknownKey`], which a lenient read
    /// accepts (R-SIG-3). A reader says what no trusted key vouches for
    /// without checking a signature again.
    fn trusts(&self, key_id: &str) -> bool;

    /// Checks many signatures, one answer each, in order. The default checks
    /// them one by one; a verifier may batch, but must answer each exactly as
    /// [`Verifier::verify`] would for every signature its key's holder did
    /// not craft to tell the two apart.
    fn verify_many(&self, items: &[SignedHash<'_>]) -> Vec<SignatureCheck> {
        items.iter().map(|item| self.verify(item.key_id, item.hash, item.signature)).collect()
    }
}

/// Signatures checked ahead of a read, in batches ([`Verifier::verify_many`])
/// spread over every core, then answered by lookup as the read asks for each
/// one; a signature not among them is asked of the verifier it wraps. A
/// reading of many runs (a tenant's cost, its listing) costs what the
/// audit's batched check costs, not one Ed25519 verification per record on
/// one core.
pub struct Prechecked<'a> {
    verifier: &'a dyn Verifier,
    answers: std::collections::HashMap<&'a ChainHash, Vec<(SignedHash<'a>, SignatureCheck)>>,
}

/// Fewer signatures than this a thread are checked on the caller's thread
/// alone: a batch of 1024 is the verifier's best (`cargo xtask bench --only
/// audit`), and a thread costs more than it saves below it.
const PER_THREAD: usize = 1024;

impl<'a> Prechecked<'a> {
    /// Checks `items` with `verifier`.
    pub fn new(verifier: &'a dyn Verifier, items: &[SignedHash<'a>]) -> Self {
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .min(items.len() / PER_THREAD)
            .max(1);
        // A verifier that answers a part with another count of answers
        // breaks its contract: its answers are not matched to signatures by
        // position, and that part is checked one by one.
        let answer_part = |part: &[SignedHash<'a>]| {
            let answers = verifier.verify_many(part);
            if answers.len() == part.len() { answers } else { part.iter().map(|item| single(verifier, item)).collect() }
        };
        let checks: Vec<SignatureCheck> = if threads == 1 {
            answer_part(items)
        } else {
            let chunk = items.len().div_ceil(threads);
            std::thread::scope(|scope| {
                let workers: Vec<_> = items.chunks(chunk).map(|part| scope.spawn(move || answer_part(part))).collect();
                // A worker that panicked answers nothing: its signatures are
                // then asked one by one, as they would be without this.
                workers
                    .into_iter()
                    .zip(items.chunks(chunk))
                    .flat_map(|(worker, part)| {
                        worker.join().unwrap_or_else(|_| part.iter().map(|item| single(verifier, item)).collect())
                    })
                    .collect()
            })
        };
        let mut answers: std::collections::HashMap<&'a ChainHash, Vec<(SignedHash<'a>, SignatureCheck)>> =
            std::collections::HashMap::with_capacity(items.len());
        for (item, check) in items.iter().zip(checks) {
            answers.entry(item.hash).or_default().push((*item, check));
        }
        Self { verifier, answers }
    }
}

fn single(verifier: &dyn Verifier, item: &SignedHash<'_>) -> SignatureCheck {
    verifier.verify(item.key_id, item.hash, item.signature)
}

impl Verifier for Prechecked<'_> {
    fn verify(&self, key_id: &str, hash: &ChainHash, signature: &[u8]) -> SignatureCheck {
        self.answers
            .get(hash)
            .and_then(|checked| {
                checked.iter().find(|(item, _)| item.key_id == key_id && item.signature == signature).map(|(_, c)| *c)
            })
            .unwrap_or_else(|| self.verifier.verify(key_id, hash, signature))
    }

    fn trusts(&self, key_id: &str) -> bool {
        self.verifier.trusts(key_id)
    }
}

/// The signatures of `rows`, in order, as [`Prechecked::new`] takes them.
pub fn signed_hashes(rows: &[crate::chain::StoredRecord]) -> Vec<SignedHash<'_>> {
    rows.iter()
        .filter_map(|row| {
            row.signature.as_ref().map(|signature| SignedHash {
                key_id: &signature.key_id,
                hash: &row.hash,
                signature: &signature.signature,
            })
        })
        .collect()
}

/// Lenient (resume my own history) or strict (prove this to me).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Every record must carry a signature by a trusted key (R-SIG-3).
    pub require_signature: bool,
}

#[cfg(feature = "signing")]
mod ed25519 {
    use std::collections::BTreeMap;

    use ed25519_dalek::{Signer as _, SigningKey, Verifier as _, VerifyingKey};

    use super::{KeySignature, SignatureCheck, SignedHash, Signer, Verifier};
    use crate::chain_hash::ChainHash;

    /// An Ed25519 record signer.
    #[derive(Clone)]
    pub struct Ed25519Signer {
        key_id: String,
        key: SigningKey,
    }

    impl std::fmt::Debug for Ed25519Signer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Ed25519Signer").field("key_id", &self.key_id).finish()
        }
    }

    impl Ed25519Signer {
        /// A signer from a 32-byte seed.
        pub fn from_seed(key_id: &str, seed: [u8; 32]) -> Self {
            Self { key_id: key_id.to_owned(), key: SigningKey::from_bytes(&seed) }
        }

        /// A fresh key from the operating system's randomness.
        pub fn generate(key_id: &str) -> Result<Self, String> {
            let mut seed = [0u8; 32];
            getrandom::fill(&mut seed).map_err(|err| err.to_string())?;
            Ok(Self::from_seed(key_id, seed))
        }

        /// The seed, to store the key.
        pub fn seed(&self) -> [u8; 32] {
            self.key.to_bytes()
        }

        /// The public key.
        pub fn public_key(&self) -> [u8; 32] {
            self.key.verifying_key().to_bytes()
        }
    }

    impl Signer for Ed25519Signer {
        fn key_id(&self) -> &str {
            &self.key_id
        }

        fn sign(&self, hash: &ChainHash) -> KeySignature {
            KeySignature { key_id: self.key_id.clone(), signature: self.key.sign(hash.as_bytes()).to_bytes().to_vec() }
        }
    }

    /// Trusted Ed25519 record keys by key id.
    #[derive(Debug, Clone, Default)]
    pub struct Ed25519Verifier {
        keys: BTreeMap<String, VerifyingKey>,
    }

    impl Ed25519Verifier {
        /// No trusted keys yet.
        pub fn new() -> Self {
            Self::default()
        }

        /// Trusts `public_key` under `key_id`; refuses bytes that are not a
        /// key, and a point of small order, under which a signature anyone
        /// can make (R = identity, s = 0) verifies for every hash.
        pub fn trust(&mut self, key_id: &str, public_key: [u8; 32]) -> Result<(), String> {
            let key = VerifyingKey::from_bytes(&public_key).map_err(|err| format!("key {key_id}: {err}"))?;
            if key.is_weak() {
                return Err(format!(
                    "key {key_id}: an Ed25519 point of small order: a signature anyone can make verifies under it \
                     for every record, so it vouches for nothing; give the plane's record key \
                     (`agentplane keys --print record-key`)"
                ));
            }
            self.keys.insert(key_id.to_owned(), key);
            Ok(())
        }
    }

    impl Verifier for Ed25519Verifier {
        fn verify(&self, key_id: &str, hash: &ChainHash, signature: &[u8]) -> SignatureCheck {
            let Some(key) = self.keys.get(key_id) else {
                return SignatureCheck::UnknownKey;
            };
            match ed25519_dalek::Signature::from_slice(signature) {
                Ok(signature) if key.verify(hash.as_bytes(), &signature).is_ok() => SignatureCheck::Valid,
                _ => SignatureCheck::Invalid,
            }
        }

        fn trusts(&self, key_id: &str) -> bool {
            self.keys.contains_key(key_id)
        }

        /// Batch verification, folded by key: a batch that verifies answers
        /// `Valid` for each of its signatures; one that does not is checked
        /// one by one, so an invalid signature is named exactly.
        ///
        /// The batch equation is ed25519-zebra's (ZIP 215), which folds the
        /// terms of every signature by one key into one scalar
        /// multiplication: a plane's records are all signed by its one key,
        /// so a batch costs about half of ed25519-dalek's `verify_batch`,
        /// which multiplies the key once per signature (issue 25). Its
        /// coefficients are random (a ChaCha stream from one OS seed per
        /// call), so no signer can aim a forgery at them.
        ///
        /// Where it answers differently from single verification (which is
        /// ed25519-dalek's cofactorless check over canonical encodings): a
        /// nonce point with a small-order component, or a nonce point given
        /// in a non-canonical encoding. Both are fixed by whoever makes the
        /// signature, and the nonce's bytes are hashed into its challenge,
        /// so only the holder of the private key can make such a signature;
        /// nobody can turn another's signature into one.
        fn verify_many(&self, items: &[SignedHash<'_>]) -> Vec<SignatureCheck> {
            // Larger batches verify faster per signature (1024 against 256:
            // about 1.1x on this project's machines, `cargo xtask bench
            // --only audit` states the sizes it tried); small ones do not pay
            // for the batch's setup.
            const BATCH: usize = 1024;
            const WORTH_BATCHING: usize = 4;
            let mut answers = vec![SignatureCheck::Invalid; items.len()];
            let mut pending: Vec<(usize, &VerifyingKey, ed25519_dalek::Signature)> = Vec::new();
            for (index, item) in items.iter().enumerate() {
                let answer = match (self.keys.get(item.key_id), ed25519_dalek::Signature::from_slice(item.signature)) {
                    (None, _) => SignatureCheck::UnknownKey,
                    (Some(key), Ok(signature)) => {
                        pending.push((index, key, signature));
                        continue;
                    }
                    (Some(_), Err(_)) => SignatureCheck::Invalid,
                };
                if let Some(slot) = answers.get_mut(index) {
                    *slot = answer;
                }
            }
            // Without a seed there are no coefficients: every signature is
            // then checked one by one, which answers the same, slower.
            let mut coefficients = batch_coefficients();
            // Equal batches of at most BATCH: 1200 signatures verify as two
            // of 600, not one of 1024 and a slower one of 176.
            let batches = pending.len().div_ceil(BATCH).max(1);
            for chunk in pending.chunks(pending.len().div_ceil(batches).max(1)) {
                let batched = chunk.len() >= WORTH_BATCHING
                    && coefficients.as_mut().is_some_and(|rng| {
                        let mut batch = ed25519_zebra::batch::Verifier::new();
                        for (index, key, signature) in chunk {
                            let Some(item) = items.get(*index) else {
                                return false;
                            };
                            let key = ed25519_zebra::VerificationKeyBytes::from(key.to_bytes());
                            batch.queue((key, *signature, item.hash.as_bytes()));
                        }
                        batch.verify(rng).is_ok()
                    });
                for (index, key, signature) in chunk {
                    let answer = if batched {
                        SignatureCheck::Valid
                    } else {
                        match items.get(*index) {
                            Some(item) if key.verify(item.hash.as_bytes(), signature).is_ok() => SignatureCheck::Valid,
                            _ => SignatureCheck::Invalid,
                        }
                    };
                    if let Some(slot) = answers.get_mut(*index) {
                        *slot = answer;
                    }
                }
            }
            answers
        }
    }

    /// The random coefficients of one call's batches: a ChaCha stream seeded
    /// by the operating system, or none if it has no randomness to give.
    fn batch_coefficients() -> Option<rand_chacha::ChaCha12Rng> {
        use rand_chacha::rand_core::SeedableRng as _;
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).ok()?;
        Some(rand_chacha::ChaCha12Rng::from_seed(seed))
    }
}

#[cfg(feature = "signing")]
pub use ed25519::{Ed25519Signer, Ed25519Verifier};
