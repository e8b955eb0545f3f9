//! What a command works on: the [`Plane`] (the store open for writing and
//! the plane's private keys) for the commands that sign, the [`Reader`]
//! (the store read-only, the record key when at hand) for the ones that read.

use std::sync::{Arc, OnceLock};

use journal_core::{
    Build, ChainCheck, Ed25519Verifier, Journal, JournalError, LogView, Origin, RunId, RunRows, Runtime,
    RuntimeBuilder, Store, TenantId, TimeWindow, Unvouched, Upcasters, VerifiedRun, Verifier, VerifyOptions,
};

use crate::backend::{open_existing, open_for_signing, open_or_create};
use crate::config::{Settings, WitnessEntry};
use crate::failure::Failure;
use crate::high_water::FileHighWater;
use crate::keys::PlaneKeys;
use journal_core::log::{HighWater, HighWaterMark};
use journal_core::runtime::ask_witnesses;

/// This binary, named as the writer of every record it appends (R-VER-4).
pub fn cli_build() -> &'static Build {
    static BUILD: OnceLock<Build> = OnceLock::new();
    BUILD.get_or_init(|| Build::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")))
}

/// What this binary reads, naming itself in a build-skew remedy (R-VER-4).
pub fn reader_upcasters() -> Upcasters {
    Upcasters::builtin().read_by(cli_build().clone())
}

/// What the commands that sign work on: the store open for writing, and the
/// plane's private keys.
pub struct Plane {
    pub store: Arc<dyn Store>,
    pub tenant: TenantId,
    pub origin: Origin,
    pub log: witness::LogKey,
    pub keys: PlaneKeys,
    /// The plane's high-water mark, beside its key file.
    pub high_water: Arc<FileHighWater>,
    /// The configured witnesses (asked before every signature).
    pub witnesses: Vec<WitnessEntry>,
}

impl Plane {
    /// The plane for a command that signs: its key file is required. With
    /// `create`, a redb store that is not there yet is made.
    pub fn open(settings: &Settings, create: bool) -> Result<Self, Failure> {
        settings.require_named_tenant()?;
        let keys = PlaneKeys::read(&settings.keys)?;
        settings.require_the_tenant_s_log_key(&keys)?;
        let origin = settings.origin(Some(&keys))?;
        let log = keys.log_for(&origin)?.clone();
        let store = if create { open_or_create(&settings.store)? } else { open_for_signing(&settings.store)? };
        let high_water = Arc::new(FileHighWater::beside(&settings.keys, &keys));
        let witnesses = settings.plane.as_ref().map(|plane| plane.witnesses.clone()).unwrap_or_default();
        Ok(Self { store, tenant: settings.tenant_id()?, origin, log, keys, high_water, witnesses })
    }

    /// What a signing asks the configured witnesses again on each fresh
    /// view it starts over on (`journal_core::log::sign_current_head_asking`):
    /// nothing when none is configured.
    pub fn ask_again<'p>(
        &'p self,
        mark: &'p dyn HighWater,
    ) -> Result<impl Fn(&LogView<'_>) -> Result<(), journal_core::JournalError> + 'p, Failure> {
        let probes = if self.witnesses.is_empty() {
            Vec::new()
        } else {
            crate::high_water::probes(&self.witnesses, &[self.log.verifier_key()])?
        };
        Ok(move |view: &LogView<'_>| {
            if probes.is_empty() {
                Ok(())
            } else {
                ask_witnesses(view, (&self.origin, &self.log.verifier_key()), &probes, Some(mark)).map(drop)
            }
        })
    }

    /// The high-water mark every signature of this plane is held to, once
    /// the configured witnesses were asked what they hold (R-PLANE-2): a
    /// store put back from a backup together with the mark beside the key
    /// file agrees with that mark, and only a witness still knows the plane
    /// signed more, so they are asked before every signature, not only when
    /// the mark is lost. When the mark of the origin is lost, the plane says
    /// so (the mark starts again from the largest tree they hold); with no
    /// witness configured there is no one to ask, and it refuses: the store's
    /// own record rolls back with the store.
    pub fn signing_mark(&self) -> Result<&dyn HighWater, Failure> {
        let mark = self.high_water.last(&self.origin).map_err(|err| match err {
            // A mark that does not parse was written by no plane: an integrity alarm, not a disk's failure.
            journal_core::log::HighWaterError::Damaged { .. } => Failure::Findings(err.to_string()),
            // A mark kept for another key: the refusal, with what to do.
            err @ journal_core::log::HighWaterError::OtherKey { .. } => {
                Failure::from(journal_core::log::high_water_error(&self.tenant, err))
            }
            journal_core::log::HighWaterError::Io { .. } => Failure::Io(err.to_string()),
        })?;
        if let HighWaterMark::Lost { reason } = &mark {
            errln!(
                "agentplane: the plane's record of its last signature is lost ({reason}): it cannot tell by itself \
                 whether this store is older than what it signed"
            );
            if self.witnesses.is_empty() {
                // The store's own record is what a restored backup rolls
                // back with it: seeding the mark from it signed a second
                // root at a size already signed (review 3). The operator
                // says what the plane signed; the plane never guesses.
                return Err(Failure::Findings(format!(
                    "refusing to sign the log of tenant {}: no witness is configured to ask what the plane signed, \
                     and the store's own record of it rolls back with a store put back from a backup. Nothing was \
                     signed. Put {} back from the copy kept with the key file, or write the line `{} SIZE ROOT` of \
                     the newest checkpoint of this origin you hold (`{} never` if it never signed one), then sign \
                     again; configure witnesses (`agentplane init --witness URL=VKEY`) so they can be asked",
                    self.tenant,
                    self.high_water.location(),
                    self.origin,
                    self.origin
                )));
            }
            errln!(
                "agentplane: asking the {} configured witnesses what they hold before signing",
                self.witnesses.len()
            );
        }
        if self.witnesses.is_empty() {
            return Ok(self.high_water.as_ref());
        }
        let probes = crate::high_water::probes(&self.witnesses, &[self.log.verifier_key()])?;
        let view = LogView::open(self.store.as_ref(), &self.tenant)?;
        ask_witnesses(&view, (&self.origin, &self.log.verifier_key()), &probes, Some(self.high_water.as_ref()))?;
        Ok(self.high_water.as_ref())
    }

    /// The tenant's journal, written by this binary.
    pub fn journal(&self) -> Journal<'_> {
        Journal::new(self.store.as_ref(), &self.tenant, &self.origin).written_by(cli_build())
    }

    /// A runtime over the plane's store, signing with its record key.
    pub fn runtime(&self) -> Result<Runtime, Failure> {
        // The runtime admits and resumes nothing on a lost mark (R-RUN-5):
        // rebuild it from every configured witness first, as a signature
        // would, or refuse here with what to do. With witnesses configured
        // they are asked whatever the mark says: a store put back together
        // with the mark agrees with it, and only a witness still knows the
        // plane signed more (review 85: `demo` sealed its runs into such a
        // store before the signature at its end was refused).
        if !self.witnesses.is_empty() || matches!(self.high_water.last(&self.origin), Ok(HighWaterMark::Lost { .. })) {
            self.signing_mark()?;
        }
        RuntimeBuilder::new(Arc::clone(&self.store))
            .signer(Arc::new(self.keys.record.clone()))
            .verifier(Arc::new(self.keys.record_verifier()?))
            .tenant(self.tenant.clone(), self.origin.clone(), Some(self.log.clone()))
            .written_by(cli_build().clone())
            .high_water(Arc::clone(&self.high_water) as Arc<dyn HighWater>)
            .build()
            .map_err(|err| Failure::Usage(err.to_string()))
    }

    /// How a run's chain and signatures are checked: with the plane's own record key.
    pub fn check<'a>(&self, upcasters: &'a Upcasters, verifier: &'a Ed25519Verifier) -> ChainCheck<'a> {
        ChainCheck { upcasters, verifier: Some(verifier), options: VerifyOptions::default() }
    }

    /// A run, its chain and signatures verified.
    pub fn read(&self, run: &RunId) -> Result<VerifiedRun, Failure> {
        let verifier = self.keys.record_verifier()?;
        let upcasters = reader_upcasters();
        let verified = self.journal().read(run, self.check(&upcasters, &verifier))?;
        verified.bound_to(&self.tenant, run)?;
        Ok(verified)
    }
}

/// What the read commands work on: the store opened read-only, the origin,
/// and the plane's record key when its key file is at hand. No private key
/// is needed to read.
pub struct Reader {
    pub store: Arc<dyn Store>,
    pub tenant: TenantId,
    pub origin: Origin,
    pub verifier: Option<Ed25519Verifier>,
    /// Strict or lenient (R-SIG-3): whether a record no trusted key signed
    /// fails its run.
    pub options: VerifyOptions,
}

/// How a read command treats the records' signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureRead {
    /// The chain alone (`--skip-signatures`).
    Skip,
    /// Every signature verified with the plane's record key when its key
    /// file is at hand; a record that is unsigned, or signed by a key id this
    /// plane does not trust, is read (R-SIG-3's lenient default), and said.
    Verify,
    /// As [`SignatureRead::Verify`], and such a record fails its run
    /// (`--require-signature`, R-SIG-3 strict).
    Require,
}

impl Reader {
    /// The store for reading, with the origin from `--origin`, the
    /// configuration or the key file.
    pub fn open(settings: &Settings) -> Result<Self, Failure> {
        let keys = PlaneKeys::read_if_present(&settings.keys)?;
        let origin = settings.origin(keys.as_ref())?;
        let verifier = keys.as_ref().map(PlaneKeys::record_verifier).transpose()?;
        let store = open_existing(&settings.store)?;
        Ok(Self { store, tenant: settings.tenant_id()?, origin, verifier, options: VerifyOptions::default() })
    }

    /// How reads treat signatures: verified when the record key is at hand
    /// (the default of every read command, so `runs`, `cost` and `show`
    /// agree about a record), required, or skipped (the chain alone).
    pub fn signatures(self, read: SignatureRead) -> Self {
        match read {
            SignatureRead::Skip => Self { verifier: None, ..self },
            SignatureRead::Verify => self,
            SignatureRead::Require => Self { options: VerifyOptions { require_signature: true }, ..self },
        }
    }

    /// A run, its chain verified from the stored bytes (and its signatures,
    /// when the plane's record key is at hand).
    pub fn read(&self, run: &RunId) -> Result<VerifiedRun, Failure> {
        let stored = self.store.read_run(&self.tenant, run)?;
        Ok(self.verify(run, stored)?)
    }

    /// A run as the store holds it (`stored`: [`Store::read_run`]'s answer,
    /// or a snapshot's rows of it), verified as [`Reader::read`] verifies.
    pub fn verify(&self, run: &RunId, stored: RunRows) -> Result<VerifiedRun, JournalError> {
        let upcasters = reader_upcasters();
        let verifier = self.verifier.as_ref().map(|v| v as &dyn Verifier);
        let check = ChainCheck { upcasters: &upcasters, verifier, options: self.options };
        let verified = Journal::new(self.store.as_ref(), &self.tenant, &self.origin).verify(run, stored, check)?;
        verified.bound_to(&self.tenant, run)?;
        Ok(verified)
    }

    /// Every run the store holds for the tenant, read in one snapshot and
    /// handed to `each` verified as [`Reader::verify`] verifies, or with why
    /// not ([`Journal::each_run`]: a run the runs table no longer lists is
    /// handed over too, never left out). An error `each` returns stops the read.
    pub fn each_run(
        &self,
        each: &mut dyn FnMut(RunId, Result<VerifiedRun, JournalError>) -> Result<(), JournalError>,
    ) -> Result<(), JournalError> {
        let upcasters = reader_upcasters();
        let verifier = self.verifier.as_ref().map(|v| v as &dyn Verifier);
        let check = ChainCheck { upcasters: &upcasters, verifier, options: self.options };
        let journal = Journal::new(self.store.as_ref(), &self.tenant, &self.origin);
        journal.each_run(check, &mut |run, verified| {
            let verified = verified.and_then(|verified| verified.bound_to(&self.tenant, &run).map(|()| verified));
            each(run, verified)
        })
    }

    /// The tenant's log, as one view (R-LOG-7).
    pub fn log(&self) -> Result<LogView<'_>, Failure> {
        Ok(LogView::open(self.store.as_ref(), &self.tenant)?)
    }
}

/// What no trusted key vouches for among the records of `verified` written
/// within `window`; `None` when `reader` checks no signature (without the
/// key file, or `--skip-signatures`): then nothing is known of them.
pub fn unvouched(reader: &Reader, verified: &VerifiedRun, window: TimeWindow) -> Option<Unvouched> {
    let verifier = reader.verifier.as_ref()?;
    Some(Unvouched::count(verified.records.iter().filter(|record| window.contains(record.record.at)), verifier))
}

/// The line that says what no trusted key vouches for (`None` when a
/// trusted key vouches for every record): `which` names the records,
/// `remedy` what refuses or names them.
pub fn unvouched_said(counted: Unvouched, which: &str, remedy: &str) -> Option<String> {
    (!counted.is_none()).then(|| {
        format!(
            "NOT all vouched for: {which}, {} unsigned and {} signed by a key id not trusted here; no trusted key \
             vouches for them ({remedy})",
            counted.unsigned, counted.untrusted
        )
    })
}

/// The remedy [`unvouched_said`] names for a command reading the plane.
pub fn strictly(command: &str) -> String {
    format!("`{command} --require-signature` refuses them, `agentplane audit --require-signature` names them")
}

/// The largest checkpoint file read: a note's text and its signature block,
/// each at most [`witness::note::MAX_NOTE_BYTES`].
const MAX_NOTE_FILE_BYTES: u64 = 2 * witness::note::MAX_NOTE_BYTES as u64 + 1;

/// Reads a checkpoint note the caller named as an anchor (`--checkpoint`).
/// A file past any note's size is no checkpoint: the same failure (exit 1)
/// as a note that does not verify, whatever its size; a file that cannot be
/// read at all is an I/O failure (exit 2).
pub fn read_checkpoint_note(file: &std::path::Path) -> Result<Vec<u8>, Failure> {
    read_at_most(file, MAX_NOTE_FILE_BYTES).map_err(|err| {
        if err.kind() == std::io::ErrorKind::FileTooLarge {
            Failure::Findings(format!(
                "{}: not a checkpoint signed by the log key: larger than any note ({MAX_NOTE_FILE_BYTES} bytes at most)",
                file.display(),
            ))
        } else {
            Failure::Io(format!("reading {}: {err}", file.display()))
        }
    })
}

/// Reads a file given on the command line, refusing past `limit` bytes
/// without reading on (`ErrorKind::FileTooLarge`): a 2 GiB file, a FIFO or
/// `/dev/zero` costs at most `limit`, never all memory.
pub fn read_at_most(path: &std::path::Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(std::fs::File::open(path)?, limit + 1), &mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("larger than {limit} bytes, more than such a file ever holds"),
        ));
    }
    Ok(bytes)
}
