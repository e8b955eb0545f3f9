//! The witness: add-checkpoint requests per second on our server against
//! litewitness (started by `cargo xtask bench`), 1 and 8 clients, each
//! client its own log growing one leaf per request over real HTTP.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use tlog::{LeafHash, MemoryHashStore};
use witness::{
    ALG_COSIGNATURE_V1, Checkpoint, Cosigner, HttpWitness, LogKey, Origin, SignerKey, TrustedWitness, Witness as _,
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
