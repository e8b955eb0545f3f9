//! The witness: add-checkpoint requests per second on our server against
//! litewitness (started by `cargo xtask bench`), 1 and 8 clients, each
//! client its own log growing one leaf per request over real HTTP.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use tlog::{LeafHash, MemoryHashStore};
use witness::{
    ALG_COSIGNATURE_V1, ALG_ML_DSA_44, Checkpoint, CosignatureCheck, Cosigner, HttpWitness, LogKey, Origin, SignerKey,
    TrustedWitness, Witness as _,
};
use witness_server::{LogConfig, SystemClock, WitnessConfig, WitnessServer};

use crate::measure::{Figure, Unit, alternate, each_in_a_thread};

/// A log a client submits for: its key, its tree, its client (which
/// remembers what the witness last cosigned).
struct Submitter {
    origin: Origin,
    key: LogKey,
    tree: MemoryHashStore,
    client: HttpWitness,
}

impl Submitter {
    fn submit(&mut self) -> Result<()> {
        let size = self.tree.size();
        self.tree.append(LeafHash::of(format!("{} leaf {size}", self.origin).as_bytes()));
        let signed = self.key.sign(&Checkpoint::new(&self.origin, self.tree.tree()))?;
        self.client.add_checkpoint(&signed, &self.tree)?;
        Ok(())
    }
}

/// Litewitness as `cargo xtask bench` started it: its URL, its verifier
/// key, and the log keys it trusts (one log per client).
pub struct Litewitness {
    pub url: String,
    pub vkey: String,
    pub log_keys: Vec<SignerKey>,
}

fn submitters(url: &str, trusted: &TrustedWitness, keys: &[SignerKey]) -> Result<Vec<Submitter>> {
    keys.iter()
        .map(|key| {
            Ok(Submitter {
                origin: Origin::new(key.name()).map_err(|err| anyhow!("{err}"))?,
                key: LogKey::new(key.clone())?,
                tree: MemoryHashStore::new(),
                client: HttpWitness::new(url, vec![trusted.clone()])?,
            })
        })
        .collect()
}

/// `requests` add-checkpoint requests from each of `clients` at once.
fn round(clients: &mut [Submitter], requests: usize) -> Result<f64> {
    let start = Instant::now();
    let count = clients.len();
    each_in_a_thread(clients.iter_mut(), |client| (0..requests).try_for_each(|_| client.submit()))?;
    Ok((count * requests) as f64 / start.elapsed().as_secs_f64())
}

pub fn figures(rounds: usize, quick: bool, lite: &Litewitness) -> Result<Vec<Figure>> {
    let cosigner = Cosigner::new(SignerKey::generate("bench.agentplane.test/witness", ALG_COSIGNATURE_V1)?)?;
    let state = tempfile::tempdir()?;
    let config = WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner: cosigner.clone(),
        logs: lite
            .log_keys
            .iter()
            .map(|key| LogConfig { origin: key.name().to_owned(), keys: vec![key.verifier_key()] })
            .collect(),
        clock: Arc::new(SystemClock),
    };
    let server = WitnessServer::start(config, &state.path().join("witness.redb"), "127.0.0.1:0")?;
    let ours_trusted = TrustedWitness::new(cosigner.verifier_key())?;
    let lite_trusted = TrustedWitness::parse(&lite.vkey).context("litewitness's vkey")?;
    let requests = if quick { 5 } else { 300 };
    let mut out = Vec::new();
    // Disjoint logs for each client count: a witness remembers every log's size.
    for (clients, first) in [(1usize, 0usize), (8, 1)] {
        let keys = lite.log_keys.get(first..first + clients).context("litewitness needs 9 logs")?;
        let mut ours = submitters(&server.url(), &ours_trusted, keys)?;
        let mut theirs = submitters(&lite.url, &lite_trusted, keys)?;
        // The first request of each log carries no proof; time the rest.
        round(&mut ours, 1)?;
        round(&mut theirs, 1)?;
        let (a, b) = alternate(rounds, || round(&mut ours, requests), || round(&mut theirs, requests))?;
        out.push(Figure {
            name: format!("witness add-checkpoint, {clients} clients (a log each)"),
            ours: a,
            baseline_name: "litewitness (filippo.io/torchwood v0.6.1), same requests".into(),
            baseline: b,
            unit: Unit::PerSecond("requests"),
            bar: Some(2.0),
            rounds,
        });
    }
    drop(server);
    Ok(out)
}

/// R-WIT-10: ML-DSA-44 beside Ed25519, both ours. Verifying one checkpoint
/// cosignature (`TrustedWitness::check`, which for ML-DSA-44 also parses the
/// checkpoint and builds the subtree/v1 message), and our witness's
/// add-checkpoint rate with an ML-DSA-44 key against the same server with an
/// Ed25519 key (1 client, one log, one leaf per request, real HTTP).
pub fn ml_dsa_figures(rounds: usize, quick: bool) -> Result<Vec<Figure>> {
    let origin = Origin::new("bench.agentplane.test/mldsa-log").map_err(|err| anyhow!("{err}"))?;
    let mut tree = MemoryHashStore::new();
    for i in 0..1000u32 {
        tree.append(LeafHash::of(&i.to_be_bytes()));
    }
    let text = Checkpoint::new(&origin, tree.tree()).to_text();
    let ed = Cosigner::new(SignerKey::generate("bench.agentplane.test/ed", ALG_COSIGNATURE_V1)?)?;
    let ml = Cosigner::new(SignerKey::generate("bench.agentplane.test/ml", ALG_ML_DSA_44)?)?;
    let (ed_line, ml_line) = (ed.cosign(&text, 1_700_000_000)?, ml.cosign(&text, 1_700_000_000)?);
    let (ed_trusted, ml_trusted) = (TrustedWitness::new(ed.verifier_key())?, TrustedWitness::new(ml.verifier_key())?);
    let checks = if quick { 20 } else { 5_000 };
    let verify = |trusted: &TrustedWitness, line: &witness::NoteSignature| -> Result<f64> {
        let start = Instant::now();
        for _ in 0..checks {
            match trusted.check(&text, line) {
                CosignatureCheck::Valid(_) => {}
                other => return Err(anyhow!("a bench cosignature did not verify: {other:?}")),
            }
        }
        Ok(checks as f64 / start.elapsed().as_secs_f64())
    };
    let (ml_rate, ed_rate) = alternate(rounds, || verify(&ml_trusted, &ml_line), || verify(&ed_trusted, &ed_line))?;
    let mut out = vec![Figure {
        name: "ML-DSA-44 cosignature verification (one line, TrustedWitness::check)".into(),
        ours: ml_rate,
        baseline_name: "Ed25519 cosignature/v1 verification, same checkpoint".into(),
        baseline: ed_rate,
        unit: Unit::PerSecond("verifications"),
        bar: None,
        rounds,
    }];

    let start_server = |cosigner: &Cosigner, log: &SignerKey, state: &std::path::Path| -> Result<WitnessServer> {
        let config = WitnessConfig {
            extra_cosigners: Vec::new(),
            cosigner: cosigner.clone(),
            logs: vec![LogConfig { origin: log.name().to_owned(), keys: vec![log.verifier_key()] }],
            clock: Arc::new(SystemClock),
        };
        Ok(WitnessServer::start(config, state, "127.0.0.1:0")?)
    };
    let state = tempfile::tempdir()?;
    let ml_log = SignerKey::generate("bench.agentplane.test/mldsa-mode-log", witness::ALG_ED25519)?;
    let ed_log = SignerKey::generate("bench.agentplane.test/ed25519-mode-log", witness::ALG_ED25519)?;
    let ml_server = start_server(&ml, &ml_log, &state.path().join("ml.redb"))?;
    let ed_server = start_server(&ed, &ed_log, &state.path().join("ed.redb"))?;
    let mut ours = submitters(&ml_server.url(), &ml_trusted, std::slice::from_ref(&ml_log))?;
    let mut theirs = submitters(&ed_server.url(), &ed_trusted, std::slice::from_ref(&ed_log))?;
    round(&mut ours, 1)?;
    round(&mut theirs, 1)?;
    let requests = if quick { 5 } else { 300 };
    let (a, b) = alternate(rounds, || round(&mut ours, requests), || round(&mut theirs, requests))?;
    out.push(Figure {
        name: "witness add-checkpoint in ML-DSA-44 mode, 1 client".into(),
        ours: a,
        baseline_name: "our witness with an Ed25519 key, same requests".into(),
        baseline: b,
        unit: Unit::PerSecond("requests"),
        bar: None,
        rounds,
    });
    Ok(out)
}
