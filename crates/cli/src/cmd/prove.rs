//! `agentplane prove`: a sealed run's inclusion in the log, or the log's
//! consistency with an older size; hashes in lowercase hex, as in every
//! command's JSON (the audit report, `show`, `sweep` and exports).

use journal_core::LogSource;
use serde::Serialize;

use crate::args::run_id;
use crate::config::Settings;
use crate::context::Reader;
use crate::failure::Failure;
use crate::output::print_json;

/// `prove RUN --json`. Fields in alphabetical order, as the JSON has always been printed.
#[derive(Debug, Serialize)]
struct InclusionRow {
    from_walk_with_holes: bool,
    index: u64,
    /// The seal leaf's bytes (text): what binds the leaf hash to the run.
    leaf: String,
    leaf_hash: String,
    proof: Vec<String>,
    root: String,
    run: String,
    size: u64,
}

/// `prove --consistency OLD_SIZE --json`.
#[derive(Debug, Serialize)]
struct ConsistencyRow {
    from_walk_with_holes: bool,
    old_root: String,
    old_size: u64,
    proof: Vec<String>,
    root: String,
    size: u64,
}

fn warn_if_walked(source: LogSource) {
    if source.has_holes() {
        errln!("warning: the log's positions have holes (a sealed run was removed); this proof is from the walk");
    }
}

/// `prove RUN --json` for a run that is not sealed (issue 20): the heads
/// leaf that holds its head, proven in the log, and the entry proven in the
/// leaf. Fields in alphabetical order, like the sealed form.
#[derive(Debug, Serialize)]
struct HeadRow {
    entries: u64,
    entry_index: u64,
    entry_proof: Vec<String>,
    from_walk_with_holes: bool,
    head_hash: String,
    head_seq: u64,
    index: u64,
    kind: &'static str,
    /// The heads leaf's bytes (text): what binds the entry proof to the log
    /// leaf, so `verify-proof` holds `(run, head_seq, head_hash)` to it.
    leaf: String,
    leaf_hash: String,
    proof: Vec<String>,
    root: String,
    run: String,
    size: u64,
}

/// An open run: the newest heads leaf that holds it. This attests that the
/// run had this record at this seq when the checkpoint was signed, never
/// that its history is complete.
fn head_inclusion(proven: journal_core::HeadInclusion, run: &journal_core::RunId, json: bool) -> Result<(), Failure> {
    proven.verify().map_err(|err| Failure::Findings(format!("the head proof does not verify: {err}")))?;
    let row = HeadRow {
        entries: proven.entries,
        entry_index: proven.entry_index,
        entry_proof: proven.entry_proof.path().iter().map(ToString::to_string).collect(),
        from_walk_with_holes: proven.source.has_holes(),
        head_hash: proven.entry.hash.to_string(),
        head_seq: proven.entry.seq,
        index: proven.index,
        kind: "head",
        leaf: String::from_utf8_lossy(&proven.leaf_bytes).into_owned(),
        leaf_hash: proven.leaf.to_string(),
        proof: proven.proof.path().iter().map(ToString::to_string).collect(),
        root: proven.tree.root.to_string(),
        run: run.to_string(),
        size: proven.tree.size,
    };
    if json {
        return print_json(&row);
    }
    warn_if_walked(proven.source);
    // The leaf says where the run was when the leaf was written (the log
    // then had `index` leaves), not where it is at the tree's size now: the
    // run may have moved on since, in a leaf the log does not hold yet.
    outln!(
        "run {run} is not sealed: it had record {} (hash {}) when heads leaf {} was written (the log then had {} \
         leaves)",
        row.head_seq,
        row.head_hash,
        row.index,
        row.index
    );
    outln!("  (a head, not a complete history: only a seal says that)");
    outln!("heads leaf {} of {}", row.index, row.size);
    outln!("root       {}", row.root);
    outln!("leaf hash  {}", row.leaf_hash);
    for hash in &row.proof {
        outln!("proof      {hash}");
    }
    outln!("entry {} of {} in the heads leaf", row.entry_index, row.entries);
    for hash in &row.entry_proof {
        outln!("entry proof {hash}");
    }
    Ok(())
}

/// `agentplane prove RUN [--json]`.
pub fn inclusion(settings: &Settings, run: &str, json: bool) -> Result<(), Failure> {
    let reader = Reader::open(settings)?;
    let run = run_id(run)?;
    let proof = match reader.log()?.prove_run(&run) {
        // The store's seal lookup says the run is not sealed: the chain
        // decides (R-RUN-2), so a sealed run the lookup lost is damage,
        // never a run with "no place in the log yet".
        // An open run no heads leaf holds yet: the next checkpoint enters
        // its head (it need not be concluded to have a place in the log).
        Err(journal_core::JournalError::NotSealed { .. }) => {
            reader.read(&run)?.seal_found(&reader.tenant, &run)?;
            return Err(Failure::Usage(format!(
                "run {run} of tenant {} is open, and no leaf of the log holds its head yet: a checkpoint enters                  it (`{}`, or the sweep, or an export of it), then `prove` gives its head's proof; a seal, once                  it concludes, proves its whole journal",
                reader.tenant,
                settings.command("checkpoint")
            )));
        }
        proof => proof?,
    };
    let inclusion = match proof {
        journal_core::RunProof::Seal(inclusion) => inclusion,
        journal_core::RunProof::Head(head) => return head_inclusion(head, &run, json),
    };
    // The leaf was found through the store's seal index: a proof is only
    // printed for the run asked if the leaf names it.
    if !journal_core::SealLeaf::names_run(&inclusion.leaf_bytes, run.as_str()) {
        return Err(Failure::Findings(format!(
            "the log's leaf at position {} does not seal run {run}: the store's seal index is damaged; run `agentplane \
             audit` to see what else is",
            inclusion.index
        )));
    }
    // A leaf of another origin's log (a seal copied in, the log rewritten
    // around it) proves nothing about this plane's run, whatever root it
    // reaches: refused as `verify-proof` and `verify-export` refuse it.
    let named = journal_core::SealLeaf::origin_named(&inclusion.leaf_bytes);
    if named != Some(reader.origin.as_str()) {
        return Err(Failure::Findings(format!(
            "the log's leaf at position {} seals run {run} in the log of origin {}, not in this plane's log \
             ({}): a seal from another log is in the store; run `agentplane audit` to see what else is",
            inclusion.index,
            named.map_or_else(|| "(none named)".to_owned(), crate::output::shown),
            reader.origin
        )));
    }
    // The leaf and the path were read from separate rows: a proof is only
    // printed when the leaf's bytes lead to the tree's root.
    inclusion.verify().map_err(|err| {
        Failure::Findings(format!(
            "the log's leaf at position {} does not lead to the root of the tree of size {} ({err}): the store's \
             seals or node hashes were changed behind the plane; run `agentplane audit` to see what else is",
            inclusion.index, inclusion.tree.size
        ))
    })?;
    let row = InclusionRow {
        from_walk_with_holes: inclusion.source.has_holes(),
        index: inclusion.index,
        leaf: String::from_utf8_lossy(&inclusion.leaf_bytes).into_owned(),
        leaf_hash: inclusion.leaf.to_string(),
        proof: inclusion.proof.path().iter().map(ToString::to_string).collect(),
        root: inclusion.tree.root.to_string(),
        run: run.to_string(),
        size: inclusion.tree.size,
    };
    if json {
        return print_json(&row);
    }
    warn_if_walked(inclusion.source);
    outln!("run {run} is leaf {} of {}", row.index, row.size);
    outln!("root      {}", row.root);
    outln!("leaf hash {}", row.leaf_hash);
    for hash in &row.proof {
        outln!("proof     {hash}");
    }
    Ok(())
}

/// `agentplane prove --consistency OLD_SIZE [--json]`.
pub fn consistency(settings: &Settings, old: u64, json: bool) -> Result<(), Failure> {
    let reader = Reader::open(settings)?;
    let log = reader.log()?;
    let consistency = log.consistency(old, log.size())?;
    let row = ConsistencyRow {
        from_walk_with_holes: consistency.source.has_holes(),
        old_root: consistency.old.root.to_string(),
        old_size: old,
        proof: consistency.proof.path().iter().map(ToString::to_string).collect(),
        root: consistency.new.root.to_string(),
        size: consistency.new.size,
    };
    if json {
        return print_json(&row);
    }
    warn_if_walked(consistency.source);
    outln!("size {old} -> {}", row.size);
    outln!("old root {}", row.old_root);
    outln!("root     {}", row.root);
    for hash in &row.proof {
        outln!("proof {hash}");
    }
    Ok(())
}

/// What `verify-proof` trusts: checkpoint notes opened with the log key, or
/// a root and size held from elsewhere.
pub struct Trusted<'a> {
    /// `--checkpoint FILE`, each.
    pub checkpoints: &'a [std::path::PathBuf],
    /// `--log-key VKEY`.
    pub log_key: Option<&'a str>,
    /// `--root HEX`.
    pub root: Option<&'a str>,
    /// `--size N`.
    pub size: Option<u64>,
}

/// A tree the caller trusts, and what vouched for it.
struct TrustedTree {
    tree: tlog::Tree,
    /// The checkpoint's origin; `None` for `--root`, which names none.
    origin: Option<String>,
    /// What vouched for it, as `trusted_by` says.
    by: &'static str,
}

const BY_CHECKPOINT: &str = "a checkpoint signed by the log key";
const BY_ROOT: &str = "--root";

/// The trees the caller trusts: each checkpoint's, verified with the log
/// key, then `--root`/`--size`.
fn trusted_trees(trusted: &Trusted<'_>) -> Result<Vec<TrustedTree>, Failure> {
    let mut trees = Vec::new();
    if !trusted.checkpoints.is_empty() {
        let text = trusted.log_key.ok_or_else(|| Failure::Usage("--checkpoint needs --log-key to open it".into()))?;
        let key = crate::args::log_key(text)?;
        for file in trusted.checkpoints {
            let note = crate::context::read_checkpoint_note(file)?;
            let (signed, _) = witness::SignedCheckpoint::open(&note, &[&key]).map_err(|err| {
                Failure::Findings(format!("{}: not a checkpoint signed by the log key: {err}", file.display()))
            })?;
            let checkpoint = signed.checkpoint();
            trees.push(TrustedTree {
                tree: checkpoint.tree(),
                origin: Some(checkpoint.origin().to_owned()),
                by: BY_CHECKPOINT,
            });
        }
    }
    if let (Some(root), Some(size)) = (trusted.root, trusted.size) {
        let root = tlog::RootHash::from_hex(root)
            .map_err(|err| Failure::Usage(format!("--root {}: {err}", crate::output::shown(root))))?;
        trees.push(TrustedTree { tree: tlog::Tree::new(size, root), origin: None, by: BY_ROOT });
    }
    if trees.is_empty() {
        return Err(Failure::Usage(
            "a proof never vouches for its own root: give --checkpoint FILE --log-key VKEY, or --root HEX --size N"
                .into(),
        ));
    }
    Ok(trees)
}

/// The proof as `prove --json` printed it.
#[derive(Debug, serde::Deserialize)]
struct ProofFile {
    kind: Option<String>,
    index: Option<u64>,
    leaf: Option<String>,
    leaf_hash: Option<String>,
    run: Option<String>,
    old_size: Option<u64>,
    old_root: Option<String>,
    size: u64,
    root: String,
    proof: Vec<String>,
    /// A head proof's entry: the run's head seq and chain hash, its index
    /// in the heads leaf's entries tree, how many entries, and its path.
    head_seq: Option<u64>,
    head_hash: Option<String>,
    entry_index: Option<u64>,
    entries: Option<u64>,
    entry_proof: Option<Vec<String>>,
}

/// `verify-proof --json`. Fields in alphabetical order.
#[derive(Debug, Serialize)]
struct ProofVerified {
    /// A head proof's head (the entry held to its heads leaf); `None` for
    /// other proofs and for a head proof without leaf bytes.
    head_hash: Option<String>,
    head_seq: Option<u64>,
    kind: &'static str,
    old_size: Option<u64>,
    root: String,
    /// The run the proof's leaf bytes seal; `None` when it carries none (a
    /// head proof, a consistency proof, a proof printed before they were).
    run: Option<String>,
    size: u64,
    trusted_by: &'static str,
    valid: bool,
}

fn hex_of<T>(field: &str, text: &str, parse: fn(&str) -> Result<T, tlog::HashParseError>) -> Result<T, Failure> {
    parse(text).map_err(|err| Failure::Findings(format!("the proof's {field} {}: {err}", crate::output::shown(text))))
}

/// The largest printed proof `verify-proof` reads (from a file or standard
/// input): far above any proof's size.
const MAX_PROOF_BYTES: u64 = 1 << 20;

/// Reads a printed proof (`-`: standard input), at most [`MAX_PROOF_BYTES`]:
/// one answer for a file and for standard input. Past the limit, or not
/// UTF-8, it is not a proof (findings); only a failed read is I/O.
fn read_proof(file: &std::path::Path) -> Result<String, Failure> {
    let stdin = file == std::path::Path::new("-");
    let name = if stdin { "standard input".to_owned() } else { file.display().to_string() };
    let reader: Box<dyn std::io::Read> = if stdin {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(file).map_err(|err| Failure::Io(format!("reading {name}: {err}")))?)
    };
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(reader, MAX_PROOF_BYTES + 1), &mut bytes)
        .map_err(|err| Failure::Io(format!("reading {name}: {err}")))?;
    if bytes.len() as u64 > MAX_PROOF_BYTES {
        return Err(Failure::Findings(format!(
            "{name} is larger than 1 MiB: not a proof (verify-proof reads the JSON of `prove --json`, far smaller)"
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| Failure::Findings(format!("{name} is not UTF-8 text: not the JSON of `prove --json`")))
}

/// `agentplane verify-proof FILE (--checkpoint FILE --log-key VKEY | --root HEX --size N)`.
pub fn verify_proof(file: &std::path::Path, trusted: &Trusted<'_>, json: bool) -> Result<(), Failure> {
    let trees = trusted_trees(trusted)?;
    let text = read_proof(file)?;
    let proof: ProofFile = serde_json::from_str(&text)
        .map_err(|err| Failure::Findings(format!("{}: not the JSON of `prove --json`: {err}", file.display())))?;
    let tree = tlog::Tree::new(proof.size, hex_of("root", &proof.root, tlog::RootHash::from_hex)?);
    let path =
        proof.proof.iter().map(|h| hex_of("proof", h, tlog::NodeHash::from_hex)).collect::<Result<Vec<_>, _>>()?;
    let head = proof.kind.as_deref() == Some("head");
    // A head proof's run, once its entry is held to the heads leaf's bytes.
    let mut bound = None;
    let ((kind, trusted_by), old_size) = match (&proof.leaf_hash, proof.index, proof.old_size, &proof.old_root) {
        (Some(leaf), Some(index), None, None) => {
            let leaf = hex_of("leaf_hash", leaf, tlog::LeafHash::from_hex)?;
            if let Some(bytes) = &proof.leaf {
                if tlog::LeafHash::of(bytes.as_bytes()) != leaf {
                    return Err(Failure::Findings("the proof's leaf does not hash to its leaf_hash".into()));
                }
                if let Some(run) = &proof.run
                    && !head
                    && !journal_core::SealLeaf::names_run(bytes.as_bytes(), run)
                {
                    return Err(Failure::Findings(format!(
                        "the proof's leaf does not seal run {}, the run it names",
                        crate::output::shown(run)
                    )));
                }
            }
            tree.verify_inclusion(&leaf, index, &tlog::InclusionProof::new(path)).map_err(|err| {
                Failure::Findings(format!("the inclusion proof does not verify against its root: {err}"))
            })?;
            let Some(trusted) = trees.iter().find(|trusted| trusted.tree == tree) else {
                return Err(Failure::Findings(format!(
                    "the proof's tree (size {}, root {}) is not the trusted one ({})",
                    tree.size,
                    tree.root,
                    said(&trees)
                )));
            };
            // A seal leaf names the log it seals the run in: a leaf of
            // another origin's log proves nothing about this one's runs.
            let named = proof.leaf.as_deref().and_then(|bytes| journal_core::SealLeaf::origin_named(bytes.as_bytes()));
            if let (Some(named), Some(origin)) = (named, &trusted.origin)
                && named != origin
            {
                return Err(Failure::Findings(format!(
                    "the proof's leaf seals its run in the log of origin {}, and the trusted checkpoint is of origin \
                     {}: a proof from another log",
                    crate::output::shown(named),
                    crate::output::shown(origin)
                )));
            }
            if head && let Some(bytes) = &proof.leaf {
                bound = Some(head_entry_in(&proof, bytes, trusted.origin.as_deref())?);
            }
            ((if head { "head" } else { "inclusion" }, trusted.by), None)
        }
        (None, None, Some(old_size), Some(old_root)) => {
            let old = tlog::Tree::new(old_size, hex_of("old_root", old_root, tlog::RootHash::from_hex)?);
            tree.verify_extends(&old, &tlog::ConsistencyProof::new(path)).map_err(|err| {
                Failure::Findings(format!("the consistency proof does not verify between its roots: {err}"))
            })?;
            // The newer end must be trusted: from a trusted older tree
            // anyone can make a proof to a root of their choosing, which
            // the proof would then vouch for alone (R-LOG-4).
            let Some(trusted) = trees.iter().find(|trusted| trusted.tree == tree) else {
                return Err(Failure::Findings(format!(
                    "the proof's newer tree (size {}, root {}) is not a trusted one ({}): a consistency proof vouches \
                     for its older tree (size {old_size}) from a trusted newer one, never for the newer root, which \
                     anyone can make a proof to from a trusted older tree; give the newer tree's checkpoint too",
                    tree.size,
                    tree.root,
                    said(&trees)
                )));
            };
            (("consistency", trusted.by), Some(old_size))
        }
        _ => {
            return Err(Failure::Findings(format!(
                "{}: neither an inclusion proof (index, leaf_hash) nor a consistency proof (old_size, old_root)",
                file.display()
            )));
        }
    };
    // Checked above: leaf bytes present hash to the leaf and name the run
    // (a seal leaf), or hold its entry (a heads leaf).
    if kind == "inclusion" {
        bound = proof.leaf.as_ref().and(proof.run.clone());
    }
    if json {
        let head_bound = kind == "head" && bound.is_some();
        return print_json(&ProofVerified {
            head_hash: proof.head_hash.clone().filter(|_| head_bound),
            head_seq: proof.head_seq.filter(|_| head_bound),
            kind,
            old_size,
            root: tree.root.to_string(),
            run: bound.clone(),
            size: tree.size,
            trusted_by,
            valid: true,
        });
    }
    match old_size {
        Some(old) => outln!("valid: the tree of size {} (root {}) extends size {old}", tree.size, tree.root),
        None => outln!("valid: {kind} proof in the tree of size {} (root {})", tree.size, tree.root),
    }
    match (&bound, kind) {
        (Some(run), "head") => outln!(
            "run {run} had record {} (hash {}) in this tree: the heads leaf holds that entry (a head, not a complete \
             history)",
            proof.head_seq.unwrap_or_default(),
            proof.head_hash.as_deref().unwrap_or_default()
        ),
        (None, "head") => outln!(
            "the run, seq and hash it names are not bound to the leaf: this proof carries no heads leaf bytes (an older \
             build's)"
        ),
        (Some(run), _) => outln!("the leaf seals run {run}"),
        (None, "inclusion") if proof.leaf.is_none() => {
            outln!("the run it names is not bound to the leaf: this proof carries no leaf bytes (an older build's)")
        }
        (None, "inclusion") => outln!("the proof names no run"),
        _ => {}
    }
    outln!("trusted by {trusted_by}");
    Ok(())
}

/// A head proof's entry held to its heads leaf's bytes (already hashed to
/// the proven leaf): the leaf must be a heads leaf of the trusted origin,
/// and `(run, head_seq, head_hash)` must be the entry at `entry_index` of
/// its entries tree. Answers the run the entry is of.
fn head_entry_in(proof: &ProofFile, bytes: &str, trusted_origin: Option<&str>) -> Result<String, Failure> {
    let heads = journal_core::heads::HeadsLeaf::parse(bytes.as_bytes())
        .ok_or_else(|| Failure::Findings("the head proof's leaf is not a heads leaf".into()))?;
    if let Some(origin) = trusted_origin
        && heads.origin.as_str() != origin
    {
        return Err(Failure::Findings(format!(
            "the proof's heads leaf is of the log of origin {}, and the trusted checkpoint is of origin {}: a proof \
             from another log",
            crate::output::shown(heads.origin.as_str()),
            crate::output::shown(origin)
        )));
    }
    let missing = |field: &str| Failure::Findings(format!("the head proof has no {field}"));
    let run = proof.run.as_deref().ok_or_else(|| missing("run"))?;
    let run_id = journal_core::RunId::new(run)
        .map_err(|err| Failure::Findings(format!("the head proof's run {}: {err}", crate::output::shown(run))))?;
    let seq = proof.head_seq.ok_or_else(|| missing("head_seq"))?;
    let hash_text = proof.head_hash.as_deref().ok_or_else(|| missing("head_hash"))?;
    let hash = journal_core::ChainHash::from_hex(hash_text).ok_or_else(|| {
        Failure::Findings(format!("the proof's head_hash {}: not a hash", crate::output::shown(hash_text)))
    })?;
    let entry_index = proof.entry_index.ok_or_else(|| missing("entry_index"))?;
    if proof.entries.is_some_and(|entries| entries != heads.entries.size) {
        return Err(Failure::Findings(format!(
            "the proof says its heads leaf holds {} entries, and the leaf says {}",
            proof.entries.unwrap_or_default(),
            heads.entries.size
        )));
    }
    let path = proof
        .entry_proof
        .as_deref()
        .ok_or_else(|| missing("entry_proof"))?
        .iter()
        .map(|h| hex_of("entry_proof", h, tlog::NodeHash::from_hex))
        .collect::<Result<Vec<_>, _>>()?;
    let entry = journal_core::heads::HeadEntry { run: run_id, seq, hash };
    heads.entries.verify_inclusion(&entry.leaf_hash(), entry_index, &tlog::InclusionProof::new(path)).map_err(
        |err| {
            Failure::Findings(format!(
                "the heads leaf holds no entry for run {} at seq {seq} with hash {hash_text} at entry {entry_index}: \
                 {err}",
                crate::output::shown(run)
            ))
        },
    )?;
    Ok(run.to_owned())
}

fn said(trees: &[TrustedTree]) -> String {
    trees.iter().map(|t| format!("size {} root {}", t.tree.size, t.tree.root)).collect::<Vec<_>>().join("; ")
}
