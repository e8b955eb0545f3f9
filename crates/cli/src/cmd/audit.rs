//! `agentplane audit` and `agentplane verify`: one audit, two sets of inputs.
//! The auditor brings public keys and anchors; the plane's own `verify` brings
//! its public keys and, as anchors, every checkpoint it signed before, its
//! high-water mark and what its configured witnesses hold.

use std::io::IsTerminal as _;

use audit::{
    Anchor, AnchorKind, AnchorReport, AnchorSource, AnchorStatus, AuditInputs, AuditReport, Finding, FindingClass,
    FindingCode, RecordKey,
};
use witness::{ALG_COSIGNATURE_V1, TrustedWitness, VerifierKey};

use crate::args::{AuditArgs, key_error, record_key};
use crate::backend::open_existing;
use crate::config::Settings;
use crate::context::cli_build;
use crate::failure::Failure;
use crate::keys::PlaneKeys;
use crate::output::print_json;

/// `agentplane audit`: public inputs only, the store read-only (R-AUD-6).
pub fn audit(cli: &Settings, args: &AuditArgs) -> Result<(), Failure> {
    let log_keys = args.log_keys.iter().map(|vkey| crate::args::log_key(vkey)).collect::<Result<Vec<_>, _>>()?;
    // The origin is the log key's name: taken from it when not given, and a
    // mismatch is a usage error naming both, never tamper findings.
    let origin = audit::origin_of_log_keys(cli.origin.as_deref(), &log_keys).map_err(usage)?;
    if args.require_signature && args.record_keys.is_empty() {
        return Err(Failure::Usage(
            "--require-signature needs the record key to check with: give --record-key KEY_ID=BASE64 \
             (`agentplane keys --print record-key` prints it on the plane)"
                .into(),
        ));
    }
    let mut inputs = AuditInputs::new(cli.tenant_id()?, origin);
    inputs.reader = cli_build().clone();
    inputs.require_signature = args.require_signature;
    inputs.log_keys = log_keys;
    inputs.allow_unavailable_anchor = args.allow_unavailable_anchor;
    inputs.max_run_bytes = usize::try_from(args.max_run_bytes).unwrap_or(usize::MAX);
    for spec in &args.record_keys {
        let (key_id, public_key) = record_key(spec)?;
        inputs.record_keys.push(RecordKey { key_id, public_key });
    }
    for file in &args.checkpoints {
        let note = crate::context::read_checkpoint_note(file)?;
        let label = file.display().to_string();
        inputs.anchors.push(Anchor::saved(&label, &note, &inputs.log_keys, &inputs.origin).map_err(unverified_anchor)?);
    }
    let witness_keys = args.witness_keys.iter().map(|spec| witness_key(spec)).collect::<Result<Vec<_>, _>>()?;
    if !args.witnesses.is_empty() && witness_keys.is_empty() {
        return Err(Failure::Usage("--witness needs at least one --witness-key to trust its cosignatures".into()));
    }
    // One public key under two names would count twice (R-AUD-10).
    witness::check_distinct_keys(&witness_keys).map_err(|err| Failure::Usage(format!("--witness-key: {err}")))?;
    let timeout = std::time::Duration::from_secs(args.witness_timeout);
    for url in &args.witnesses {
        inputs.anchors.push(Anchor::witness_with_timeout(url, witness_keys.clone(), timeout).map_err(usage)?);
    }
    let store = open_existing(&cli.store)?;
    run_and_report(cli, "audit", store.as_ref(), &inputs, Extra::default(), args.assert_complete, args.json)
}

/// `agentplane verify`: the same audit, with the plane's public keys and the
/// checkpoints it signed before as anchors.
pub fn verify(
    cli: &Settings,
    require_signature: bool,
    (assert_complete, max_run_bytes): (bool, u64),
    json: bool,
) -> Result<(), Failure> {
    let keys = PlaneKeys::read(&cli.keys)?;
    let store = open_existing(&cli.store)?;
    let tenant = cli.tenant_id()?;
    let origin = cli.origin(Some(&keys))?;
    let mut inputs = AuditInputs::new(tenant.clone(), origin.clone());
    inputs.reader = cli_build().clone();
    inputs.require_signature = require_signature;
    inputs.max_run_bytes = usize::try_from(max_run_bytes).unwrap_or(usize::MAX);
    inputs.log_keys = vec![keys.log_for(&origin)?.verifier_key()];
    inputs.record_keys = vec![RecordKey {
        key_id: journal_core::Signer::key_id(&keys.record).to_owned(),
        public_key: keys.record.public_key(),
    }];
    // Each row's note is verified before anything in the row is trusted: a
    // row is written by whoever can write the store, its size and root
    // columns included (R-PLANE-2). A row that does not verify, or whose
    // columns are not its note's tree, is tamper evidence (exit 1).
    let mut extra = Extra::default();
    let mut signed_trees = Vec::new();
    for (i, row) in store.signed_checkpoints(&tenant)?.iter().enumerate() {
        let number = i + 1;
        let row_label = format!("the store's record #{number} of a checkpoint this plane signed");
        let tree = match Anchor::saved(&row_label, row.note.as_bytes(), &inputs.log_keys, &inputs.origin) {
            Ok(mut anchor) => {
                let AnchorSource::Saved { checkpoint, .. } = &anchor.source else { continue };
                let tree = checkpoint.tree();
                anchor.label = if tree == row.tree {
                    format!("the checkpoint this plane signed at size {}", tree.size)
                } else {
                    format!("{row_label} (its note of size {})", tree.size)
                };
                if tree != row.tree {
                    extra.failed(
                        &anchor.label,
                        format!(
                            "the row says size {} (root {}), but the note it keeps, signed by the plane, is of \
                             size {} (root {}): the row was changed behind the plane",
                            row.tree.size, row.tree.root, tree.size, tree.root
                        ),
                    );
                }
                inputs.anchors.push(anchor);
                tree
            }
            Err(err) => {
                let err = match err {
                    audit::AuditError::Anchor { reason, .. } => reason,
                    other => other.to_string(),
                };
                extra.unverifiable(
                    &row_label,
                    format!(
                        "the row (size {}, root {}) does not hold the plane's signed checkpoint of {}: {err}: it \
                         was written behind the plane",
                        row.tree.size, row.tree.root, inputs.origin
                    ),
                );
                continue;
            }
        };
        signed_trees.push(tree);
    }
    // The cosigned notes the store keeps, held by the one rule the sweep,
    // `checkpoint --cosigned`, `export` and the console read them by
    // (`verify_cosigned_rows`): each refuses on a row written behind the
    // plane and says to run `verify`, so `verify` must find that row too.
    let witness_keys = configured_witness_keys(cli)?;
    let quorum = cli.plane.as_ref().map_or(1, |plane| plane.quorum.max(1));
    let cosigned = store.cosigned_checkpoints(&tenant)?;
    if let Some(log_key) = inputs.log_keys.first()
        && let Err(err) =
            journal_core::runtime::verify_cosigned_rows(&cosigned, &inputs.origin, log_key, &witness_keys, quorum)
    {
        extra.findings.push(Finding {
            code: FindingCode::StoreDamaged,
            class: FindingCode::StoreDamaged.class(),
            run: None,
            seq: None,
            anchors: Vec::new(),
            detail: format!(
                "{err}: the row was written behind the plane (the sweep refuses to witness on it, `checkpoint \
                 --cosigned` and `export` refuse it)"
            ),
            remedy: None,
        });
    }
    // The plane's own record of its last signature, kept outside the store
    // (the store's rows of what it signed can be deleted or put back from a
    // backup with the runs after them): the log must extend it too. Signed
    // again here (Ed25519 is deterministic: the note the plane signed then).
    // A mark that is lost leaves that unchecked, and says so.
    let high_water = crate::high_water::FileHighWater::beside(&cli.keys, &keys);
    let location = journal_core::log::HighWater::location(&high_water);
    // A mark that does not parse is damage (a finding, as for the commands
    // that sign); one that cannot be read is I/O.
    let mark = journal_core::log::HighWater::last(&high_water, &origin).map_err(|err| match err {
        journal_core::log::HighWaterError::Damaged { .. } => Failure::Findings(err.to_string()),
        journal_core::log::HighWaterError::OtherKey { .. } => Failure::Findings(format!(
            "{err}: the store cannot be held to what this key signed. Put back the mark kept beside this key file \
             where it signed (or this folder's own key file), then run verify again"
        )),
        journal_core::log::HighWaterError::Io { .. } => Failure::Io(err.to_string()),
    })?;
    match mark {
        journal_core::log::HighWaterMark::Signed(tree) if !signed_trees.contains(&tree) => {
            let note = journal_core::log::sign_checkpoint(&origin, tree, keys.log_for(&origin)?)?;
            let label = format!("the plane's high-water mark ({location}, size {})", tree.size);
            inputs.anchors.push(
                Anchor::saved(&label, note.note().as_bytes(), &inputs.log_keys, &inputs.origin)
                    .map_err(unverified_anchor)?,
            );
        }
        journal_core::log::HighWaterMark::Signed(_) => {}
        journal_core::log::HighWaterMark::Lost { reason } => extra.not_checked.push(audit::NotChecked {
            what: "a store put back from before the plane's last signature".into(),
            why: format!(
                "the plane's high-water mark is lost ({reason}): only the checkpoints the store itself records \
                 were held to the log; restore {location} from a backup, or audit with the witnesses \
                 (`agentplane audit --witness`)"
            ),
        }),
        journal_core::log::HighWaterMark::Never if !signed_trees.is_empty() => {
            extra.not_checked.push(audit::NotChecked {
                what: "a store put back from before the plane's last signature".into(),
                why: format!(
                    "the plane's high-water mark ({location}) says it never signed for {origin}, yet the store \
                     records {} checkpoints it signed: the mark is older than the store; restore it from a \
                     backup, or audit with the witnesses (`agentplane audit --witness`)",
                    signed_trees.len()
                ),
            });
        }
        journal_core::log::HighWaterMark::Never => {}
    }
    // What the configured witnesses cosigned (review 85): a store put back
    // together with the mark agrees with both, and only a witness still
    // knows the plane signed more; the refusals that say so send the
    // operator here. A witness is read with every key it is listed under;
    // one that cosigned nothing for the origin holds the store to nothing,
    // and one that cannot be read is listed as not checked, never "complete".
    if let (Some(plane), Some(log_key)) = (cli.plane.as_ref(), inputs.log_keys.first().cloned()) {
        let mut urls: Vec<&str> = Vec::new();
        for entry in &plane.witnesses {
            if !urls.contains(&entry.url.as_str()) {
                urls.push(&entry.url);
            }
        }
        for url in urls {
            let keys = plane
                .witnesses
                .iter()
                .filter(|entry| entry.url == url)
                .map(|entry| {
                    agentplane_cli::plane_config::check_witness_key(&entry.key)
                        .map_err(|err| Failure::Usage(format!("witness {}: {err}", entry.url)))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let reader = witness::WitnessReader::new(url, keys.clone())
                .map_err(|err| Failure::Usage(format!("witness {}: {err}", witness::client::shown_url(url))))?;
            match reader.latest_signed_note(inputs.origin.as_str(), std::slice::from_ref(&log_key)) {
                Ok(_) => inputs.anchors.push(Anchor::witness(url, keys).map_err(usage)?),
                Err(witness::WitnessError::NothingCosigned { .. }) => {}
                Err(err) => extra.not_checked.push(audit::NotChecked {
                    what: format!("what witness {} cosigned", witness::client::shown_url(url)),
                    why: format!(
                        "it could not be read ({err}): a store put back together with the plane's mark is found \
                         by a witness alone; run verify again once it answers"
                    ),
                }),
            }
        }
        inputs.allow_unavailable_anchor = true;
    }
    run_and_report(cli, "verify", store.as_ref(), &inputs, extra, assert_complete, json)
}

/// What `verify` found in the plane's own inputs before the audit: rows of
/// what the plane signed that cannot be trusted, and a lost high-water mark.
#[derive(Default)]
struct Extra {
    findings: Vec<Finding>,
    anchors: Vec<AnchorReport>,
    not_checked: Vec<audit::NotChecked>,
}

impl Extra {
    /// A row whose note is the plane's, read as the anchor `label`, whose
    /// columns disagree with it.
    fn failed(&mut self, label: &str, detail: String) {
        self.findings.push(store_damaged(label, detail));
    }

    /// A row whose note does not verify: no anchor, and a finding naming it.
    fn unverifiable(&mut self, label: &str, detail: String) {
        self.anchors.push(AnchorReport {
            label: label.to_owned(),
            kind: AnchorKind::Saved,
            size: None,
            root: None,
            status: AnchorStatus::Failed,
            reason: Some(detail.clone()),
        });
        self.findings.push(store_damaged(label, detail));
    }

    /// Adds what it holds to `report`: the findings and their anchors failed.
    fn apply(self, report: &mut AuditReport) {
        for finding in &self.findings {
            for anchor in report.anchors.iter_mut().filter(|anchor| finding.anchors.contains(&anchor.label)) {
                anchor.status = AnchorStatus::Failed;
            }
        }
        report.findings.extend(self.findings);
        report.anchors.extend(self.anchors);
        report.not_checked.extend(self.not_checked);
    }
}

fn store_damaged(label: &str, detail: String) -> Finding {
    Finding {
        code: FindingCode::StoreDamaged,
        class: FindingCode::StoreDamaged.class(),
        run: None,
        seq: None,
        anchors: vec![label.to_owned()],
        detail,
        remedy: None,
    }
}

/// The witness keys of the plane's configuration, as the sweep and
/// `checkpoint --cosigned` trust them (none without a configuration).
fn configured_witness_keys(cli: &Settings) -> Result<Vec<TrustedWitness>, Failure> {
    let Some(plane) = cli.plane.as_ref() else { return Ok(Vec::new()) };
    plane
        .witnesses
        .iter()
        .map(|entry| {
            agentplane_cli::plane_config::check_witness_key(&entry.key)
                .map_err(|err| Failure::Usage(format!("witness {}: {err}", entry.url)))
        })
        .collect()
}

fn usage(err: audit::AuditError) -> Failure {
    Failure::Usage(err.to_string())
}

/// A saved checkpoint that does not verify with the trusted log key (altered,
/// forged, of another log): the audit fails on it as on any anchor it cannot
/// verify (R-AUD-9), with findings (exit 1), as `verify-proof` does with the
/// same file; never a usage error.
fn unverified_anchor(err: audit::AuditError) -> Failure {
    Failure::Findings(err.to_string())
}

/// A witness key: a vkey (`name+hexid+base64`, type 0x04 or 0x06), or
/// `NAME=BASE64` of its Ed25519 public key (a cosignature/v1 key).
fn witness_key(spec: &str) -> Result<TrustedWitness, Failure> {
    // Only the name is echoed, and only when it is no key material: the
    // BASE64 may be a private seed pasted by mistake (a key file's `record`
    // line), or the seed alone, its `=` read as the split, and no command
    // prints a secret (R-OPS-1).
    let name = spec.split_once('=').and_then(|(name, _)| crate::args::name_shown(name));
    let bad = |why: String| match &name {
        Some(name) => Failure::Usage(format!("--witness-key {name}=...: {why}")),
        None => Failure::Usage(format!("--witness-key: {why} (the value is not shown, in case it is a private key)")),
    };
    let key = match VerifierKey::parse(spec) {
        Ok(key) => key,
        Err(err) if !spec.contains('=') || spec.to_ascii_uppercase().contains("PRIVATE") => {
            return Err(key_error("--witness-key", spec, &err));
        }
        Err(_) => {
            let (name, encoded) = spec.split_once('=').ok_or_else(|| bad("expected a vkey or NAME=BASE64".into()))?;
            let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, encoded)
                .map_err(|_| bad("the key is not base64".into()))?;
            let public: [u8; 32] = bytes.try_into().map_err(|_| bad("the key is not 32 bytes".into()))?;
            VerifierKey::ed25519(name, ALG_COSIGNATURE_V1, public).map_err(|err| bad(err.to_string()))?
        }
    };
    TrustedWitness::new(key).map_err(|err| bad(err.to_string()))
}

fn run_and_report(
    cli: &Settings,
    command: &str,
    store: &dyn journal_core::Store,
    inputs: &AuditInputs,
    extra: Extra,
    assert_complete: bool,
    json: bool,
) -> Result<(), Failure> {
    let progress = progress_bar(&format!("auditing tenant {}", inputs.tenant));
    // Workers report from several threads: the bar only moves forward.
    let shown = std::sync::Mutex::new(0_u64);
    let mut report = audit::audit_with_progress(store, inputs, &|done, total| {
        if let Ok(mut shown) = shown.lock() {
            // Drawn from the first count on, never as an empty 0/0 bar.
            if *shown == 0 && std::io::stderr().is_terminal() {
                progress.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            }
            progress.set_length(total);
            if done > *shown {
                *shown = done;
                progress.set_position(done);
            }
        }
    })
    .map_err(|err| match err {
        audit::AuditError::Store(err) => Failure::from(err),
        other => Failure::Usage(other.to_string()),
    })?;
    progress.finish_and_clear();
    extra.apply(&mut report);
    let verdict = verdict(&report, assert_complete);
    // Kept before the report is printed: the console's verdict never waits
    // on stdout (a closed pipe, a full disk).
    keep_verdict(cli, command, inputs, &report);
    if json {
        // Through a `Value`, so the keys come sorted, as the report has always been printed.
        print_json(&serde_json::to_value(&report).map_err(|err| Failure::Io(err.to_string()))?)?;
    } else {
        print_human(&report);
    }
    verdict
}

/// Leaves the verdict in the plane's folder for the console's plane page
/// (`audits/<tenant>.json`), best effort: the store is never written (the
/// audit opens it read-only), and a folder that refuses the file costs a
/// note on stderr, never the audit's exit code.
fn keep_verdict(cli: &Settings, command: &str, inputs: &AuditInputs, report: &AuditReport) {
    let Some(folder) = cli.folder() else { return };
    let classes: std::collections::BTreeSet<FindingClass> = report.findings.iter().map(|f| f.class).collect();
    let verdict = console::last_audit::LastAudit {
        format: console::last_audit::LAST_AUDIT_FORMAT.to_owned(),
        at: journal_core::Clock::now(&journal_core::SystemClock).to_string(),
        command: command.to_owned(),
        tenant: inputs.tenant.to_string(),
        origin: inputs.origin.to_string(),
        verdict: console::last_audit::verdict_for(report.findings.len(), report.not_checked.len()).to_owned(),
        findings: report.findings.len(),
        classes: classes.into_iter().map(|class| class.name().to_owned()).collect(),
        not_checked: console::last_audit::bounded(
            report.not_checked.iter().map(|n| format!("{}: {}", n.what, n.why)).collect(),
        ),
        anchors: inputs.anchors.len(),
        log_size: report.log_size,
        log_root: report.log_root.clone(),
    };
    if let Err(err) = console::last_audit::record(&folder, &verdict) {
        errln!("note: the verdict was not kept for the console: {err}");
    }
}

/// A progress bar on stderr when it is a terminal (hidden otherwise): the
/// label, position/length, rate and time left.
fn progress_bar(label: &str) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::with_draw_target(Some(0), indicatif::ProgressDrawTarget::hidden());
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {human_pos}/{human_len} runs, {per_sec:0}, ETA {eta}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(label.to_owned());
    bar
}

fn print_human(report: &AuditReport) {
    // A finding quotes what it could not read (a record's bytes, a witness's
    // answer, a key id as long as its writer liked): one line each, cut, no
    // control character of it on the terminal.
    let one_line = |text: &str| crate::output::one_line_cut(text, "`--json` has it whole");
    for finding in &report.findings {
        outln!("FINDING {}", one_line(&finding.to_string()));
    }
    let c = report.checked;
    outln!(
        "checked: {} runs, {} records, {} signatures, {} derived claims, {} seals, {} inclusions, {} heads entries, {} \
         log nodes, {} anchors",
        c.runs,
        c.records,
        c.signatures,
        c.derived,
        c.seals,
        c.inclusions,
        c.heads,
        c.nodes,
        c.anchors
    );
    outln!("log: {} leaves (sealed runs and heads leaves), root {}", report.log_size, report.log_root);
    for anchor in &report.anchors {
        let held = match (anchor.size, &anchor.root) {
            (Some(size), Some(root)) => format!(" at size {size}, root {root}"),
            _ => String::new(),
        };
        let why = anchor.reason.as_ref().map_or_else(String::new, |why| format!(" ({why})"));
        let line = format!("{} [{}]{held}: {}{why}", anchor.label, anchor.kind.name(), anchor.status.name());
        outln!("anchor {}", one_line(&line));
    }
    for missing in &report.not_checked {
        outln!("NOT CHECKED {}", one_line(&format!("{}: {}", missing.what, missing.why)));
    }
    match (report.findings.len(), report.not_checked.is_empty()) {
        (0, true) => outln!("clean and complete"),
        (0, false) => outln!("0 findings; clean as far as it could check"),
        (n, _) => outln!("{}", plural(n, "finding", "findings")),
    }
}

/// Exit 0 clean; 1 findings (or incomplete with --assert-complete); 3 when
/// every finding is build skew (the history may be intact, this binary
/// cannot read it: the remedy says which one can).
fn verdict(report: &AuditReport, assert_complete: bool) -> Result<(), Failure> {
    if report.only_build_skew() {
        let remedy = report.findings.iter().find_map(|f| f.remedy.clone()).unwrap_or_default();
        return Err(Failure::BuildSkew(format!("{} records this binary cannot read. {remedy}", report.findings.len())));
    }
    if !report.findings.is_empty() {
        let classes: std::collections::BTreeSet<FindingClass> = report.findings.iter().map(|f| f.class).collect();
        let classes: Vec<&str> = classes.into_iter().map(FindingClass::name).collect();
        return Err(Failure::Findings(format!(
            "{} ({})",
            plural(report.findings.len(), "finding", "findings"),
            classes.join(", ")
        )));
    }
    if assert_complete && !report.not_checked.is_empty() {
        return Err(Failure::Findings(format!(
            "incomplete: {} not made (--assert-complete)",
            plural(report.not_checked.len(), "check", "checks")
        )));
    }
    Ok(())
}

/// `1 finding`, `2 findings`.
fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use base64::Engine as _;

    use super::witness_key;

    /// R-OPS-1: `--witness-key` named the NAME of a NAME=BASE64 it refused,
    /// so a record key's seed given alone (its base64 ends in `=`, split
    /// there as NAME= and an empty key) was printed as that name. Key
    /// material is never shown; a witness's name still is.
    #[test]
    fn r_ops_1_a_seed_given_as_a_witness_key_is_never_echoed() {
        let seed = base64::engine::general_purpose::STANDARD.encode([0x5a_u8; 32]);
        let stem = seed.trim_end_matches('=');
        for spec in [seed.clone(), format!("{stem}=AAAA")] {
            let said = witness_key(&spec).err().unwrap().message();
            assert!(!said.contains(stem.get(..12).unwrap()), "{said}");
        }
        let said = witness_key("w1.example=AAAA").err().unwrap().message();
        assert!(said.contains("w1.example"), "names the witness: {said}");
    }
}
