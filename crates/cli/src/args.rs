//! The command line: the global flags and the commands, as clap reads them.

use std::path::PathBuf;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use clap::{Parser, Subcommand};
use journal_core::{At, RunId};

use crate::failure::Failure;
use crate::keys;

/// agentplane: the append-only, hash-chained, signed journal of agent runs.
///
/// The store is a redb file or a PostgreSQL database (a postgres:// URL). The plane flags below say
/// which plane a command works on; each command takes only the ones it uses, before or after its
/// name (`agentplane --tenant shop demo` = `agentplane demo --tenant shop`). Exit codes: 0 clean,
/// 1 findings, 2 usage or I/O, 3 build skew.
#[derive(Parser, Clone)]
#[command(name = "agentplane", version, about, long_about)]
pub struct Cli {
    /// The plane's configuration (default: ./agentplane.toml when it exists); the flags below override it.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The store: a redb file, or a PostgreSQL URL (postgres://user@host/db) (default: the configuration's,
    /// else ./agentplane.redb).
    #[arg(long, value_name = "PATH_OR_URL")]
    pub store: Option<PathBuf>,
    /// The plane's key file (default: the configuration's, else ./agentplane.key). Only commands that sign need it.
    #[arg(long, value_name = "PATH")]
    pub keys: Option<PathBuf>,
    /// The tenant (default: the configuration's first, else `default`).
    #[arg(long, value_name = "NAME")]
    pub tenant: Option<String>,
    /// The tenant log's origin, for reading without the key file (default: the configuration's or the key file's).
    #[arg(long, value_name = "ORIGIN")]
    pub origin: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Clone)]
pub enum Command {
    /// Make a plane: agentplane.toml and a key file with fresh keys; prints the public keys.
    ///
    /// Refuses to overwrite either file, and to make keys for a store that holds runs.
    Init {
        /// A tenant, with its own log (repeatable; default `default`).
        #[arg(long = "tenant-name", value_name = "NAME")]
        tenants: Vec<String>,
        /// Each tenant's origin is BASE/NAME.
        #[arg(long, default_value = keys::DEFAULT_ORIGIN)]
        origin_base: String,
        /// A witness the sweep submits to: URL=VKEY (repeatable).
        #[arg(long = "witness", value_name = "URL=VKEY")]
        witnesses: Vec<String>,
        /// How many witnesses must cosign (default: all of them; at least 1).
        #[arg(long, value_parser = quorum)]
        quorum: Option<usize>,
        /// How often `sweep --every` runs by default.
        #[arg(long, default_value = "5m")]
        sweep_every: String,
    },
    /// Run sample agent runs that reach every outcome, then print the runs and the signed checkpoint.
    ///
    /// Without --config or --store it makes (or reuses) a plane of its own in ./agentplane-demo;
    /// it refuses a store that holds runs it did not make.
    Demo,
    /// Make the plane's keys alone (one log, tenant `default`); prints the log's verifier key (a C2SP vkey line).
    ///
    /// `agentplane init` makes a whole plane; `keygen` refuses a store that holds runs.
    Keygen,
    /// Print the plane's public keys, in the forms `agentplane audit` takes, for an auditor.
    Keys {
        /// Print the `[[log]]` entries a witness's configuration needs for every tenant log.
        #[arg(long, conflicts_with_all = ["print", "json"])]
        witness_config: bool,
        /// Print one key alone, for scripts: the log key, the record key or the origin.
        #[arg(long, value_enum, conflicts_with = "json")]
        print: Option<KeyPart>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Submit every tenant's checkpoint (or --tenant's alone), signed now, to the configured witnesses,
    /// holding each round to the quorum.
    ///
    /// Exit 0 met or skipped, 1 shortfall or integrity, 2 usage or I/O. With --every, a round that
    /// only repeats a skip prints nothing, and each printed line starts with its time.
    Sweep {
        /// Sweep again every DURATION (90s, 5m, 1h) until SIGINT or SIGTERM; without DURATION, every
        /// `sweep_every` of agentplane.toml.
        #[arg(long, value_name = "DURATION", num_args = 0..=1, default_missing_value = "")]
        every: Option<String>,
        /// Ask the witnesses what they hold at least every DURATION, even when the log has not grown,
        /// so a store put back from a backup is found without waiting for growth.
        #[arg(long, value_name = "DURATION", default_value = "5m")]
        probe_every: String,
        /// JSON Lines output: one object per tenant and round, a line each.
        #[arg(long)]
        json: bool,
    },
    /// List runs, with figures read through chain and signature verification (unverifiable runs are marked).
    Runs {
        /// Only runs whose answer is this outcome.
        #[arg(long, value_enum)]
        outcome: Option<OutcomeArg>,
        /// Print the run ids alone, one a line, for scripts: alone, the runs
        /// table as it stands, unverified (the fast path; `verify` holds that
        /// table to the chains); with --outcome, only the runs whose verified
        /// chain concluded so, with --require-signature only those a trusted
        /// key vouches for (the others on stderr, exit 1).
        #[arg(long, conflicts_with = "json")]
        ids: bool,
        /// Only a page: the newest N runs by admission, newest first (read in
        /// O(log n + N) on any plane size). When more follow, the command for
        /// the next page is printed to stderr.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: Option<u32>,
        /// The page after the one whose last run this cursor names
        /// (MILLIS:RUN, as printed for the next page).
        #[arg(long, value_name = "CURSOR", requires = "limit")]
        before: Option<String>,
        /// Read through chain verification alone: skip the records'
        /// signatures, which are otherwise verified with the plane's record
        /// key whenever its key file is at hand, as `show` verifies them
        /// (in batches, on every core).
        #[arg(long)]
        skip_signatures: bool,
        /// Signatures are verified by default; accepted for older scripts.
        #[arg(long, hide = true, conflicts_with = "skip_signatures")]
        verify_signatures: bool,
        /// Refuse what no trusted key vouches for: a record that is unsigned,
        /// or signed by a key id this plane does not trust, fails its run
        /// (exit 1) instead of being read and counted. Needs the key file.
        #[arg(long, conflicts_with = "skip_signatures")]
        require_signature: bool,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Show a run's journal as a timeline: each record's time, step or effect, how long it took, its result, hash and signer.
    Show {
        /// The run.
        run: String,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// The audit with the plane's own public keys and, as anchors, every checkpoint it signed before, its
    /// high-water mark and what its configured witnesses hold (one that cannot be read is not checked).
    ///
    /// Its verdict is kept in the plane's folder (audits/TENANT.json) for `agentplane console`.
    Verify {
        /// Every record must carry a signature by the plane's record key.
        #[arg(long)]
        require_signature: bool,
        /// Exit 1 when anything could not be checked, not only on findings.
        #[arg(long)]
        assert_complete: bool,
        /// The most memory one run's records may take (bytes, from 1 MiB); see `audit`.
        #[arg(long, value_name = "BYTES", default_value_t = audit::DEFAULT_MAX_RUN_BYTES as u64,
              value_parser = clap::value_parser!(u64).range(1 << 20..))]
        max_run_bytes: u64,
        /// JSON output (the audit report).
        #[arg(long)]
        json: bool,
    },
    /// Audit a store with only public inputs: no key file, the store opened read-only.
    ///
    /// Exit 0 clean, 1 findings (or incomplete with --assert-complete), 2 usage or I/O,
    /// 3 build skew only (this binary cannot read what another build wrote).
    ///
    /// Run in a plane's folder, it leaves its verdict in audits/TENANT.json there (never in
    /// the store) for `agentplane console` to show.
    Audit(AuditArgs),
    /// Print the log's checkpoint as a signed note, exactly as a witness receives it.
    ///
    /// Refuses (exit 1) to sign a log with holes, or one that does not extend
    /// the last checkpoint this plane signed.
    Checkpoint {
        /// Print the latest checkpoint a witness quorum cosigned (kept by the sweep) instead of signing one.
        #[arg(long)]
        cosigned: bool,
        /// JSON output: origin, size, root (hex) and the note.
        #[arg(long)]
        json: bool,
    },
    /// Prove a sealed run's inclusion (an open run: its head's, in the heads leaf that holds it), or
    /// the log's consistency with an older size.
    Prove {
        /// The run (for an inclusion proof).
        run: Option<String>,
        /// The older size (for a consistency proof).
        #[arg(long, value_name = "OLD_SIZE", conflicts_with = "run")]
        consistency: Option<u64>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// What a run, or the whole tenant, has consumed (by the time on each record).
    Cost {
        /// The run (the tenant when absent).
        run: Option<String>,
        /// Count only records written at or after this instant (2026-11-01 or 2026-11-01T09:00:00Z, UTC).
        #[arg(long)]
        since: Option<String>,
        /// Count only records written before this instant (same forms as --since).
        #[arg(long)]
        until: Option<String>,
        /// Read through chain verification alone: skip the records'
        /// signatures, which are otherwise verified with the plane's record
        /// key whenever its key file is at hand, as `show` verifies them
        /// (in batches, on every core).
        #[arg(long)]
        skip_signatures: bool,
        /// Signatures are verified by default; accepted for older scripts.
        #[arg(long, hide = true, conflicts_with = "skip_signatures")]
        verify_signatures: bool,
        /// Refuse what no trusted key vouches for: a record that is unsigned,
        /// or signed by a key id this plane does not trust, fails its run
        /// (exit 1) instead of being read and counted. Needs the key file.
        #[arg(long, conflicts_with = "skip_signatures")]
        require_signature: bool,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Two runs' journals side by side (plan, steps, effects with keys and results, costs, times,
    /// conclusion), every differing row marked `!`, the first named. A run is an id in the store or
    /// an export file; what only names a run (its idempotency key) is shown, not compared.
    ///
    /// Exit 0 when they do the same, 1 when they differ.
    Diff {
        /// The first run: a run id, or the path of an export.
        a: String,
        /// The second run: a run id, or the path of an export.
        b: String,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Fork a run after its record SEQ: a new run whose journal records where it came from;
    /// agent code resuming it is served the source's effects up to there from the record.
    Fork {
        /// The run to fork.
        run: String,
        /// The seq of the source's record the fork starts after.
        #[arg(long)]
        at: u64,
        /// The new run's idempotency key (default: fork-of-RUN-at-SEQ).
        #[arg(long)]
        key: Option<String>,
    },
    /// Continue a run that stopped: record the answer it waits for (a raised ceiling, a lifted
    /// withholding, a person's answer to a doubt), then run its agent code on from the journal.
    ///
    /// The command line holds one agent's code, the demo's: a demo run, or a fork of one, is run on
    /// here (its finished effects read back, never performed again). A run of other agent code
    /// continues when that code resumes it; `resume` records the answer and says so.
    Resume {
        /// The run.
        run: String,
        /// Raise a ceiling: DIMENSION=N, DIMENSION one of tokens, cost_micros, steps, effects,
        /// wall_millis (repeatable; N `none` lifts it).
        #[arg(long, value_name = "DIMENSION=N")]
        raise: Vec<String>,
        /// Lift the run's withholding.
        #[arg(long)]
        lift: bool,
        /// A person's answer to an effect in doubt: EFFECT_KEY=happened or EFFECT_KEY=not-happened
        /// (repeatable).
        #[arg(long, value_name = "EFFECT_KEY=ANSWER")]
        answer: Vec<String>,
    },
    /// Export a run to a self-contained file: a sealed run with its seal, an open run with its head
    /// proven (a prefix).
    ///
    /// An existing file is never overwritten without --force.
    Export {
        /// The run.
        run: String,
        /// The file to write (`-`: standard output).
        #[arg(short, long)]
        output: PathBuf,
        /// Overwrite the file if it exists (an earlier export, never one of the plane's own files).
        #[arg(long)]
        force: bool,
    },
    /// Verify an export offline with only the trusted keys (exit 1 on findings).
    VerifyExport {
        /// The export file (`-`: standard input). At most 1 GiB, no line over 64 MiB.
        file: PathBuf,
        /// The log's verifier key (C2SP vkey).
        #[arg(long)]
        log_key: String,
        /// A trusted record key: KEY_ID=BASE64_PUBLIC_KEY (repeatable).
        #[arg(long)]
        record_key: Vec<String>,
        /// Every record must carry a signature by a trusted record key.
        #[arg(long)]
        require_signature: bool,
        /// A witness key to trust for the export's cosigned checkpoint: a vkey (repeatable).
        #[arg(long = "witness-key", value_name = "VKEY")]
        witness_keys: Vec<String>,
        /// How many distinct trusted witnesses must have cosigned, at least 1 (needs --witness-key).
        /// A witness is a name with its keys: the keys of one name count once, and so does one
        /// public key listed under two names.
        #[arg(long, value_parser = quorum)]
        quorum: Option<usize>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Verify a proof `agentplane prove --json` printed, offline, against a trusted tree: a
    /// checkpoint note signed by the log key, or a root and size held from elsewhere.
    ///
    /// A proof never authenticates its own root (R-LOG-4): one trusted tree is required, and must be
    /// the proof's (an inclusion proof's tree, or the newer end of a consistency proof: from a
    /// trusted older tree anyone can make one to a root of their choosing). Exit 0 when it
    /// verifies, 1 when it does not, 2 on usage.
    VerifyProof {
        /// The proof: the JSON of `prove --json` (`-`: standard input).
        file: PathBuf,
        /// A signed checkpoint note holding a trusted tree (repeatable; needs --log-key).
        #[arg(long = "checkpoint", value_name = "FILE")]
        checkpoints: Vec<PathBuf>,
        /// The log's verifier key, to open the --checkpoint notes with (a vkey).
        #[arg(long, value_name = "VKEY")]
        log_key: Option<String>,
        /// A trusted root (hex), with --size: a tree held from elsewhere.
        #[arg(long, value_name = "HEX", requires = "size")]
        root: Option<String>,
        /// The size of the tree of --root.
        #[arg(long, value_name = "N", requires = "root")]
        size: Option<u64>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Repair a store left by a crash, in place (read commands read a repaired private copy instead).
    Repair,
    /// Give the free pages of a redb store back to the file system (no plane may have it open).
    /// Every record stays as it was.
    Compact,
    /// Serve a read-only web console for the plane: runs, timelines, proofs and who made them.
    ///
    /// Binds to localhost unless told otherwise; binding elsewhere needs a token, checked on every
    /// request. Example: `agentplane console` then open http://127.0.0.1:7390
    Console {
        /// Where to listen.
        #[arg(long, default_value = console::DEFAULT_LISTEN)]
        listen: std::net::SocketAddr,
        /// A file holding the token every request must carry (at least 16 characters; required off
        /// localhost). Given as a file so the token stays out of the process list and shell history.
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
        /// The most a page holds of one run's records; a larger run's page says it is too large
        /// to show here (use `show` or `export` for it). Each runs-page row reads 1/50 of it.
        #[arg(long, value_name = "BYTES", default_value_t = console::MAX_RUN_BYTES as u64)]
        max_run_bytes: u64,
    },
    /// Make or migrate the schema of a PostgreSQL store (commands that read never do; commands that
    /// write do it on their own), or move a redb file to this build's storage layout (it copies the
    /// file first, as the way back; a file of the older layout is read and written as it is until then).
    Migrate,
}

/// A run's outcome, as `runs --outcome` takes it.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum OutcomeArg {
    /// Finished its plan (sealed).
    Succeeded,
    /// Cancelled by its owner (sealed).
    Cancelled,
    /// Given up for good (sealed).
    Abandoned,
    /// An effect failed; a resume may continue it.
    Failed,
    /// A budget ceiling was crossed.
    Exhausted,
    /// Held by an operator.
    Withheld,
    /// An effect's fate is unknown; a person's answer continues it.
    Quarantined,
}

impl OutcomeArg {
    /// The journal's outcome.
    pub fn outcome(self) -> journal_core::Outcome {
        use journal_core::Outcome;
        match self {
            Self::Succeeded => Outcome::Succeeded,
            Self::Cancelled => Outcome::Cancelled,
            Self::Abandoned => Outcome::Abandoned,
            Self::Failed => Outcome::Failed,
            Self::Exhausted => Outcome::Exhausted,
            Self::Withheld => Outcome::Withheld,
            Self::Quarantined => Outcome::Quarantined,
        }
    }
}

/// One of the plane's public keys, printed alone.
#[derive(clap::ValueEnum, Clone, Copy)]
pub enum KeyPart {
    /// The tenant log's verifier key (a C2SP vkey).
    LogKey,
    /// The record key, as `--record-key` takes it.
    RecordKey,
    /// The tenant log's origin.
    Origin,
}

/// `agentplane audit`: what the auditor holds (R-AUD-6).
#[derive(clap::Args, Clone)]
pub struct AuditArgs {
    /// The log's verifier key, a C2SP vkey (repeatable; `agentplane keys` prints it on the plane).
    #[arg(long = "log-key", value_name = "VKEY", required = true)]
    pub log_keys: Vec<String>,
    /// A trusted record key: KEY_ID=BASE64_PUBLIC_KEY (repeatable).
    #[arg(long = "record-key", value_name = "KEY_ID=BASE64")]
    pub record_keys: Vec<String>,
    /// Every record must carry a signature by a trusted record key.
    #[arg(long)]
    pub require_signature: bool,
    /// A signed checkpoint note saved earlier: the log must extend it (repeatable).
    #[arg(long = "checkpoint", value_name = "FILE")]
    pub checkpoints: Vec<PathBuf>,
    /// A witness to read the latest cosigned checkpoint from: its URL prefix (repeatable).
    #[arg(long = "witness", value_name = "URL")]
    pub witnesses: Vec<String>,
    /// A witness key to trust: a vkey, or NAME=BASE64 of its Ed25519 public key (repeatable;
    /// one public key may be listed once). Only for --witness: a saved --checkpoint is trusted by
    /// the log key's signature, and its cosignature lines are not checked.
    #[arg(long = "witness-key", value_name = "NAME=BASE64_OR_VKEY", requires = "witnesses")]
    pub witness_keys: Vec<String>,
    /// A --witness that cannot be read or verified (unreachable, timed out, refused, a cosignature
    /// that does not verify) is listed as not checked instead of failing the audit.
    #[arg(long)]
    pub allow_unavailable_anchor: bool,
    /// How long each --witness may take to answer, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub witness_timeout: u64,
    /// Exit 1 when anything could not be checked, not only on findings.
    #[arg(long)]
    pub assert_complete: bool,
    /// The most memory one run's records may take (bytes, from 1 MiB): a larger run is listed
    /// as not checked (its stored hashes still held to the log and anchors), never read whole.
    #[arg(long, value_name = "BYTES", default_value_t = audit::DEFAULT_MAX_RUN_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(1 << 20..))]
    pub max_run_bytes: u64,
    /// JSON output (the audit report).
    #[arg(long)]
    pub json: bool,
}

impl Cli {
    /// The global flags, with the command left as it is.
    pub fn clone_flags(&self) -> Self {
        self.clone()
    }
}

/// `--quorum N`: a positive count (a quorum of 0 means nothing).
fn quorum(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("a quorum of 0 would accept a checkpoint no witness cosigned; give at least 1".into()),
        Ok(n) => Ok(n),
        Err(err) => Err(err.to_string()),
    }
}

/// A run id from the command line.
pub fn run_id(text: &str) -> Result<RunId, Failure> {
    RunId::new(text).map_err(|err| Failure::Usage(err.to_string()))
}

/// An instant from `--since` or `--until`.
pub fn instant(flag: &str, text: &str) -> Result<At, Failure> {
    At::parse_lenient(text)
        .map_err(|err| Failure::Usage(format!("{flag}: {err} (give 2026-11-01 or 2026-11-01T09:00:00Z)")))
}

/// Parses `KEY_ID=BASE64_PUBLIC_KEY` (`--record-key`).
pub fn record_key(spec: &str) -> Result<(String, [u8; 32]), Failure> {
    if spec.to_ascii_uppercase().contains("PRIVATE") {
        return Err(key_error("--record-key", spec, &"a private key"));
    }
    // Never the value: a record key's seed (its base64 alone, which ends in
    // `=`, or the key file's `record KEY_ID SEED` line) given here would be
    // printed (R-OPS-1). The key id is named when it is no key material.
    let named =
        spec.split_once('=').and_then(|(id, _)| name_shown(id)).map_or_else(String::new, |id| format!(" {id}=..."));
    let unshown = "(the value is not shown, in case it is a private key)";
    let (key_id, public) = spec
        .split_once('=')
        .ok_or_else(|| Failure::Usage(format!("--record-key: expected KEY_ID=BASE64 {unshown}")))?;
    let public = STANDARD.decode(public).ok().and_then(|b| <[u8; 32]>::try_from(b).ok());
    let public = public.ok_or_else(|| {
        Failure::Usage(format!(
            "--record-key{named}: not KEY_ID=BASE64 of a 32-byte public key (`agentplane keys --print record-key` \
             prints the plane's) {unshown}"
        ))
    })?;
    Ok((key_id.to_owned(), public))
}

/// The NAME of a NAME=BASE64 key (a record key's id, a witness's name),
/// quoted for a refusal, unless it may be key material: 20 characters or
/// more, none beyond base64's (a seed's base64, 43 of them and `=`, given
/// alone splits at its `=` as its own NAME), or holding a space (a key
/// file's line; R-OPS-1). A short name (`w1`) is shown.
pub fn name_shown(name: &str) -> Option<String> {
    let material = name.len() >= 20 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/".contains(&b));
    (!material && !name.contains(char::is_whitespace)).then(|| crate::output::shown(name))
}

/// Why a key given for `flag` is not the public key it takes, said by the
/// kind of key it is: a private key (never echoed), a bare base64 key, a
/// record key, or anything else (echoed cut short).
pub fn key_error(flag: &str, text: &str, err: &dyn std::fmt::Display) -> Failure {
    let text = text.trim();
    if text.to_ascii_uppercase().contains("PRIVATE") {
        return Failure::Usage(format!(
            "{flag}: this is a private key: it is never given to a command (and is not shown here); give the \
             public verifier key NAME+KEYID+BASE64 (`agentplane keys` prints the plane's), and keep the private \
             key secret"
        ));
    }
    let bare = STANDARD.decode(text).is_ok_and(|bytes| bytes.len() == 32 || bytes.len() == 33);
    if bare {
        return Failure::Usage(format!(
            "{flag}: a bare base64 public key; give it as a verifier key, NAME+KEYID+BASE64 (`agentplane keys` \
             prints the plane's)"
        ));
    }
    if text.contains('=') && !text.contains('+') {
        return Failure::Usage(format!(
            "{flag}: KEY_ID=BASE64 is a record key (--record-key); {flag} takes a verifier key NAME+KEYID+BASE64"
        ));
    }
    // Never the key's bytes: a private key pasted without its
    // `PRIVATE+KEY+` prefix has a verifier key's shape (R-OPS-1).
    let named = match text.split('+').collect::<Vec<_>>().as_slice() {
        [name, id, _] if id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()) => {
            format!(" {}", crate::output::shown(&format!("{name}+{id}+...")))
        }
        _ => String::new(),
    };
    Failure::Usage(format!(
        "{flag}{named}: {err} (a verifier key is NAME+KEYID+BASE64; its key bytes are not shown here, in case this \
         is a private key)"
    ))
}

/// A `--log-key` value: a log's note verifier key (type 0x01). A witness's
/// cosignature key (0x04, 0x06) given there is refused as a usage error
/// naming it, before any checkpoint is read: under it no checkpoint's
/// signature could verify, and the command would call every one forged.
pub fn log_key(text: &str) -> Result<witness::VerifierKey, Failure> {
    let key = witness::VerifierKey::parse(text).map_err(|err| key_error("--log-key", text, &err))?;
    if key.algorithm() != witness::ALG_ED25519 {
        let err = witness::KeyError::NotANoteKey { name: key.name().to_owned(), algorithm: key.algorithm() };
        return Err(Failure::Usage(format!("--log-key: {err}")));
    }
    Ok(key)
}

#[cfg(test)]
mod key_error_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// R-OPS-1 (review 60's note): a key that did not parse was printed
    /// whole unless it said PRIVATE, so a private key pasted without its
    /// `PRIVATE+KEY+` prefix (an ML-DSA-44 seed is `name+id+base64(0x06 ||
    /// 32 bytes)`, a vkey's shape) was echoed, seed and all. Only the name
    /// and key id are shown.
    #[test]
    fn r_ops_1_a_key_that_does_not_parse_is_named_never_echoed() {
        let seed = STANDARD.encode([[0x06u8].as_slice(), &[0xa7; 32]].concat());
        for text in [format!("w1+0badf00d+{seed}"), seed.clone(), format!("a+b+c+{seed}")] {
            let err = witness::VerifierKey::parse(&text).unwrap_err();
            let said = key_error("--log-key", &text, &err).message();
            assert!(!said.contains(&seed), "{said}");
            assert!(!said.contains(seed.get(..12).unwrap()), "{said}");
        }
        let said = key_error("--log-key", &format!("w1+0badf00d+{seed}"), &"x").message();
        assert!(said.contains("w1+0badf00d+..."), "names the key: {said}");
    }

    /// R-OPS-1: a record key's seed (the key file's `record KEY_ID SEED`
    /// line) given as `--record-key` was echoed whole in the refusal: the
    /// seed's base64 ends in `=`, so it split there as KEY_ID=BASE64 with an
    /// empty key, and the line pasted whole the same. Neither is shown; a
    /// key id that is no key material still is.
    #[test]
    fn r_ops_1_a_record_seed_given_as_the_record_key_is_never_echoed() {
        let seed = STANDARD.encode([0x5a_u8; 32]);
        let stem = seed.trim_end_matches('=');
        for spec in [seed.clone(), format!("record spiffe://o/runtime {seed}"), stem.to_owned()] {
            let said = record_key(&spec).unwrap_err().message();
            assert!(!said.contains(stem.get(..12).unwrap()), "{said}");
        }
        let said = record_key("spiffe://o/runtime=AAAA").unwrap_err().message();
        assert!(said.contains("spiffe://o/runtime"), "names the key id: {said}");
    }

    /// Review 60's note: a witness's cosignature key given as `--log-key`
    /// is a usage error naming its type, not a finding that every
    /// checkpoint is forged.
    #[test]
    fn a_cosignature_key_given_as_the_log_key_is_a_usage_error() {
        let witness = witness::SignerKey::generate("w1.example", witness::ALG_COSIGNATURE_V1).unwrap();
        let refused = log_key(&witness.verifier_key().to_string()).unwrap_err();
        assert!(matches!(refused, Failure::Usage(_)), "{refused:?}");
        assert!(refused.message().contains("type 0x04"), "{}", refused.message());
        let log = witness::SignerKey::generate("log.example", witness::ALG_ED25519).unwrap();
        assert!(log_key(&log.verifier_key().to_string()).is_ok());
    }
}
