//! Building a [`Runtime`]: its store, signer, tenants, witnesses, clock and
//! the build it names as the writer; the configuration is checked once here.

use std::sync::Arc;

use witness::Origin;

use super::{Runtime, TenantConfig, WitnessProbe};
use crate::clock::{Clock, SystemClock};
use crate::ids::TenantId;
use crate::log::HighWater;
use crate::record::Build;
use crate::signature::{Signer, Verifier};
use crate::store::Store;
use crate::version::Upcasters;

/// Why a runtime could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// No store was given.
    #[error("a runtime needs a store")]
    NoStore,
    /// No tenant was configured.
    #[error("a runtime needs at least one tenant (RuntimeBuilder::tenant)")]
    NoTenant,
    /// A tenant was configured twice.
    #[error("tenant {0} is configured twice")]
    DuplicateTenant(String),
    /// A quorum larger than the distinct witness keys trusted: no round
    /// could ever meet it (R-WIT-7).
    #[error(
        "a quorum of {quorum} cannot be met by {witnesses} distinct witnesses (the keys of one name are one witness); every round would report a shortfall"
    )]
    QuorumTooLarge {
        /// The quorum.
        quorum: usize,
        /// The number of distinct witnesses (keys of one name, or one key
        /// under two names, count once).
        witnesses: usize,
    },
    /// A zero quorum with witnesses configured: it would mean nothing (R-WIT-7).
    #[error("a quorum of 0 with {witnesses} witnesses configured means nothing; set at least 1")]
    ZeroQuorum {
        /// The number of witnesses.
        witnesses: usize,
    },
    /// One witness listed twice (the same endpoint, or a key another entry
    /// also trusts): a quorum counts witnesses, not entries (R-WIT-7).
    #[error("witness {0} is listed twice: a quorum counts distinct witnesses")]
    DuplicateWitness(String),
    /// Two tenants with one log origin: their checkpoints would be two
    /// histories of one log, under one name.
    #[error("tenants {first} and {second} have the same origin {origin}: every tenant's log needs its own")]
    DuplicateOrigin {
        /// The origin.
        origin: String,
        /// The tenant configured first.
        first: String,
        /// The other.
        second: String,
    },
    /// A tenant's log key is named for another origin (another tenant's
    /// key): its checkpoints would go out signed as another log's, which
    /// no verifier of its own log accepts (R-STORE-4, R-LOG-2).
    #[error(
        "tenant {tenant}'s log key is named {key}, not its origin {origin}: a log's checkpoints are signed by the \
         key named by its origin (give the tenant its own log key)"
    )]
    LogKeyOfAnotherOrigin {
        /// The tenant.
        tenant: String,
        /// Its origin.
        origin: String,
        /// The name of the key it was given.
        key: String,
    },
    /// A witness identity has no key among the witness keys.
    #[error("witness {0} has no key among the witness keys: its cosignatures could not be verified")]
    WitnessKeyMissing(String),
    /// Witnessing needs every tenant's checkpoints signed.
    #[error("witnesses are configured but tenant {0} has no log key to sign its checkpoints")]
    NoLogKey(String),
    /// The witness keys name one public key twice, or two keys share a name
    /// and key id (R-AUD-10): a cosignature would count twice or be checked
    /// against the wrong key.
    #[error("the witness keys are not distinct: {0}")]
    WitnessKeysNotDistinct(#[source] witness::KeyError),
    /// More witness keys than a cosigned note can carry beside the log's
    /// signature: a met round's note would hold more signature lines than
    /// any reader (this one, Go's) opens, and every later round would find
    /// it unverifiable.
    #[error(
        "{keys} witness keys are configured; a cosigned checkpoint carries at most {max} (with the log's own \
         signature, the {lines} lines a signed note may hold): configure fewer witnesses"
    )]
    TooManyWitnessKeys {
        /// The witness keys configured.
        keys: usize,
        /// The most a cosigned note can carry.
        max: usize,
        /// The signature lines a note may hold.
        lines: usize,
    },
}

/// The most witness keys a runtime takes: a cosigned note holds the log's
/// signature and one line per witness key, [`witness::note::MAX_SIGNATURES`] in all.
pub const MAX_WITNESS_KEYS: usize = witness::note::MAX_SIGNATURES - 1;

/// Builds a [`Runtime`].
#[derive(Default)]
pub struct RuntimeBuilder {
    store: Option<Arc<dyn Store>>,
    signer: Option<Arc<dyn Signer>>,
    verifier: Option<Arc<dyn Verifier>>,
    tenants: Vec<TenantConfig>,
    witnesses: Vec<Arc<dyn witness::Witness + Send + Sync>>,
    quorum: Option<witness::WitnessQuorum>,
    upcasters: Option<Upcasters>,
    build: Option<Build>,
    clock: Option<Arc<dyn Clock>>,
    high_water: Option<Arc<dyn HighWater>>,
    witness_keys: Vec<witness::TrustedWitness>,
    probes: Vec<Arc<dyn WitnessProbe>>,
    probe_every: Option<std::time::Duration>,
}

/// How often the sweep asks the witnesses what they hold when the log has
/// not grown, unless [`RuntimeBuilder::probe_every`] says otherwise.
pub const DEFAULT_PROBE_EVERY: std::time::Duration = std::time::Duration::from_secs(300);

impl RuntimeBuilder {
    /// A builder over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store: Some(store), ..Self::default() }
    }

    /// Signs every record with `signer`. Without one, records are unsigned:
    /// the runtime never mints a key (R-SIG-4).
    pub fn signer(mut self, signer: Arc<dyn Signer>) -> Self {
        self.signer = Some(signer);
        self
    }

    /// Trusted record keys for the runtime's own reads (lenient: resume my history).
    pub fn verifier(mut self, verifier: Arc<dyn Verifier>) -> Self {
        self.verifier = Some(verifier);
        self
    }

    /// Serves a tenant with its log origin and checkpoint key.
    pub fn tenant(mut self, tenant: TenantId, origin: Origin, log_key: Option<witness::LogKey>) -> Self {
        self.tenants.push(TenantConfig { tenant, origin, log_key });
        self
    }

    /// Reads the time written on every record from `clock` (the system
    /// clock by default; a fixed one keeps tests byte-stable).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The witnesses a sweep submits to, and how many must cosign (R-WIT-7).
    pub fn witnesses(
        mut self,
        witnesses: Vec<Arc<dyn witness::Witness + Send + Sync>>,
        quorum: witness::WitnessQuorum,
    ) -> Self {
        self.witnesses = witnesses;
        self.quorum = Some(quorum);
        self
    }

    /// The keys the cosignatures of a stored cosigned note are held to
    /// before the sweep trusts its size or root: when given, every witness
    /// identity needs one (issue 21). Without them no stored cosigned note
    /// is trusted: the sweep never skips a round on the store's word.
    pub fn witness_keys(mut self, keys: Vec<witness::TrustedWitness>) -> Self {
        self.witness_keys = keys;
        self
    }

    /// The plane's high-water mark, kept outside the store: every signature
    /// the runtime makes is held to it ([`crate::log::sign_head`]).
    pub fn high_water(mut self, high_water: Arc<dyn HighWater>) -> Self {
        self.high_water = Some(high_water);
        self
    }

    /// How the sweep learns what each witness holds before it signs (the
    /// monitor endpoint, where served).
    pub fn witness_probes(mut self, probes: Vec<Arc<dyn WitnessProbe>>) -> Self {
        self.probes = probes;
        self
    }

    /// How often the sweep asks the witnesses what they hold even when the
    /// log has not grown, so a store put back is found without waiting for
    /// growth ([`DEFAULT_PROBE_EVERY`] by default).
    pub fn probe_every(mut self, every: std::time::Duration) -> Self {
        self.probe_every = Some(every);
        self
    }

    /// Names the binary that writes (its package name and version), so that a
    /// build-skew refusal can say which binary wrote a journal (R-VER-4).
    /// Defaults to this build of journal-core.
    pub fn written_by(mut self, build: Build) -> Self {
        self.build = Some(build);
        self
    }

    /// Replaces the upcaster registry (tests, extensions).
    pub fn upcasters(mut self, upcasters: Upcasters) -> Self {
        self.upcasters = Some(upcasters);
        self
    }

    /// Checks the configuration and builds.
    pub fn build(self) -> Result<Runtime, BuildError> {
        let store = self.store.ok_or(BuildError::NoStore)?;
        if self.tenants.is_empty() {
            return Err(BuildError::NoTenant);
        }
        for (i, tenant) in self.tenants.iter().enumerate() {
            if self.tenants.iter().skip(i + 1).any(|other| other.tenant == tenant.tenant) {
                return Err(BuildError::DuplicateTenant(tenant.tenant.to_string()));
            }
        }
        for (i, tenant) in self.tenants.iter().enumerate() {
            if let Some(other) = self.tenants.iter().skip(i + 1).find(|other| other.origin == tenant.origin) {
                return Err(BuildError::DuplicateOrigin {
                    origin: tenant.origin.to_string(),
                    first: tenant.tenant.to_string(),
                    second: other.tenant.to_string(),
                });
            }
        }
        if let Some((tenant, key)) = self
            .tenants
            .iter()
            .find_map(|t| t.log_key.as_ref().filter(|key| key.name() != t.origin.as_str()).map(|key| (t, key)))
        {
            return Err(BuildError::LogKeyOfAnotherOrigin {
                tenant: tenant.tenant.to_string(),
                origin: tenant.origin.to_string(),
                key: key.name().to_owned(),
            });
        }
        witness::check_distinct_keys(&self.witness_keys).map_err(BuildError::WitnessKeysNotDistinct)?;
        let mut identities = std::collections::BTreeSet::new();
        let mut endpoints = std::collections::BTreeSet::new();
        for witness in &self.witnesses {
            if !endpoints.insert(witness.endpoint().trim_end_matches('/').to_owned()) {
                return Err(BuildError::DuplicateWitness(witness.endpoint().to_owned()));
            }
            for identity in witness.identities() {
                if !identities.insert(identity.clone()) {
                    return Err(BuildError::DuplicateWitness(format!("{} ({:08x})", identity.name, identity.key_id)));
                }
                if !self.witness_keys.is_empty()
                    && !self
                        .witness_keys
                        .iter()
                        .any(|key| key.name() == identity.name && key.key_id() == identity.key_id)
                {
                    return Err(BuildError::WitnessKeyMissing(format!("{} ({:08x})", identity.name, identity.key_id)));
                }
            }
        }
        if identities.len() > MAX_WITNESS_KEYS {
            return Err(BuildError::TooManyWitnessKeys {
                keys: identities.len(),
                max: MAX_WITNESS_KEYS,
                lines: witness::note::MAX_SIGNATURES,
            });
        }
        let quorum = self.quorum.unwrap_or(witness::WitnessQuorum::of(0));
        let count = self.witnesses.len();
        // A quorum counts witnesses: one holding two keys (Ed25519 and
        // ML-DSA-44) gives one; a client that declares no key counts alone.
        let distinct = witness::count_witnesses(
            identities
                .iter()
                .map(|identity: &witness::WitnessIdentity| (identity.name.as_str(), identity.public_key.as_slice())),
        ) + self.witnesses.iter().filter(|witness| witness.identities().is_empty()).count();
        if quorum.needed() > distinct {
            return Err(BuildError::QuorumTooLarge { quorum: quorum.needed(), witnesses: distinct });
        }
        if count > 0 && quorum.needed() == 0 {
            return Err(BuildError::ZeroQuorum { witnesses: count });
        }
        if count > 0
            && let Some(tenant) = self.tenants.iter().find(|t| t.log_key.is_none())
        {
            return Err(BuildError::NoLogKey(tenant.tenant.to_string()));
        }
        let build = self.build.unwrap_or_else(Build::current);
        Ok(Runtime {
            store,
            signer: self.signer,
            verifier: self.verifier,
            tenants: self.tenants,
            witnesses: self.witnesses,
            quorum,
            upcasters: self.upcasters.unwrap_or_else(Upcasters::builtin).read_by(build.clone()),
            build,
            clock: self.clock.unwrap_or_else(|| Arc::new(SystemClock)),
            high_water: self.high_water,
            witness_keys: self.witness_keys,
            probes: self.probes,
            probe_every: self.probe_every.unwrap_or(DEFAULT_PROBE_EVERY),
            last_probe: std::sync::Mutex::new(std::collections::HashMap::new()),
            extends_mark: std::sync::Mutex::new(std::collections::HashSet::new()),
            covered: std::sync::Mutex::new(std::collections::HashMap::new()),
            cosigned_verified: super::RememberedStandings::default(),
        })
    }
}
