//! Client and witness server over real HTTP on 127.0.0.1 (R-WIT-1..6).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use support::*;
use witness::{
    CosignatureError, HttpWitness, QuorumOutcome, Witness, WitnessError, WitnessQuorum, WitnessReader, cosign_quorum,
    split_view,
};

/// Posts an add-checkpoint request by hand, with no proof, and returns the raw answer.
fn raw_add_checkpoint(url: &str, old_size: u64, checkpoint_note: String) -> reqwest::blocking::Response {
    let request =
        witness::protocol::AddCheckpointRequest { old_size, proof: tlog::ConsistencyProof::default(), checkpoint_note };
    reqwest::blocking::Client::new().post(format!("{url}/add-checkpoint")).body(request.to_body()).send().unwrap()
}

fn setup(plane: &Plane) -> (tempfile::TempDir, witness_server::WitnessServer, witness::Cosigner) {
    let dir = tempfile::tempdir().unwrap();
    let key = cosigner(7, "witness.test/w1");
    let server = start_witness(key.clone(), vec![plane.log_config()], &dir.path().join("witness.redb"));
    (dir, server, key)
}

#[test]
fn r_wit_6_growth_is_cosigned_and_verified() {
    let mut plane = Plane::new(1);
    let (_dir, server, key) = setup(&plane);
    let client = HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap();
    plane.grow_to(3, u64::MAX);
    let first = client.add_checkpoint(&plane.signed(), &plane.log).unwrap();
    assert_eq!(first.checkpoint.tree().size, 3);
    assert_eq!(first.cosignatures.len(), 1);
    assert_eq!(first.cosignatures[0].name, "witness.test/w1");
    plane.grow_to(70, u64::MAX);
    let second = client.add_checkpoint(&plane.signed(), &plane.log).unwrap();
    assert_eq!(second.checkpoint.tree(), plane.log.tree());
    // The same checkpoint again is cosigned again, with a fresh timestamp.
    let again = client.add_checkpoint(&plane.signed(), &plane.log).unwrap();
    assert!(again.cosignatures[0].timestamp > second.cosignatures[0].timestamp);
}

#[test]
fn r_wit_3_client_refuses_to_build_without_trusted_keys() {
    assert_eq!(HttpWitness::new("http://127.0.0.1:1", vec![]).unwrap_err(), WitnessError::NoTrustedKeys);
    assert_eq!(WitnessReader::new("http://127.0.0.1:1", vec![]).unwrap_err(), WitnessError::NoTrustedKeys);
    let key = cosigner(7, "witness.test/w1");
    assert!(matches!(HttpWitness::new("ftp://x", vec![trusted(&key)]), Err(WitnessError::BadUrl { .. })));
}

#[test]
fn r_wit_2_stale_old_size_gets_409_then_succeeds() {
    let mut plane = Plane::new(1);
    let (_dir, server, key) = setup(&plane);
    plane.grow_to(5, u64::MAX);
    HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap().add_checkpoint(&plane.signed(), &plane.log).unwrap();
    // A raw request from old 0 shows the witness's answer: 409 with its size.
    let raw = raw_add_checkpoint(&server.url(), 0, plane.signed().note().to_owned());
    assert_eq!(raw.status().as_u16(), 409);
    assert_eq!(raw.headers()["content-type"], "text/x.tlog.size");
    assert_eq!(raw.text().unwrap(), "5\n");
    // A fresh client (believing 0) learns 5 from the 409 and succeeds on the retry.
    plane.grow_to(9, u64::MAX);
    let fresh = HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap();
    assert_eq!(fresh.add_checkpoint(&plane.signed(), &plane.log).unwrap().checkpoint.tree().size, 9);
}

#[test]
fn r_wit_6_fork_at_equal_size_is_refused_and_classified() {
    let mut honest = Plane::new(1);
    let (_dir, server, key) = setup(&honest);
    honest.grow_to(7, u64::MAX);
    let client = HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap();
    client.add_checkpoint(&honest.signed(), &honest.log).unwrap();
    let mut fork = Plane::forked(1, "forked");
    fork.grow_to(7, 4);
    let err = client.add_checkpoint(&fork.signed(), &fork.log).unwrap_err();
    assert_eq!(err, WitnessError::Fork { witness: server.url(), size: 7 });
    assert!(err.is_integrity());
}

#[test]
fn r_wit_2_history_that_moved_is_inconsistent_on_growth() {
    let mut honest = Plane::new(1);
    let (_dir, server, key) = setup(&honest);
    honest.grow_to(7, u64::MAX);
    let client = HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap();
    client.add_checkpoint(&honest.signed(), &honest.log).unwrap();
    // Same key, a history that differs from leaf 4 on, grown past 7: its own
    // proof from 7 verifies against its own roots, and the witness refuses it.
    let mut moved = Plane::forked(1, "moved");
    moved.grow_to(12, 4);
    let err = client.add_checkpoint(&moved.signed(), &moved.log).unwrap_err();
    assert_eq!(err, WitnessError::Inconsistent { witness: server.url(), old_size: 7, new_size: 12 });
    assert!(err.is_integrity());
    assert!(err.to_string().contains("either this log built a wrong proof, or its history moved"));
}

#[test]
fn r_wit_6_shrink_is_refused() {
    let mut plane = Plane::new(1);
    let (_dir, server, key) = setup(&plane);
    plane.grow_to(7, u64::MAX);
    HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap().add_checkpoint(&plane.signed(), &plane.log).unwrap();
    let mut shorter = Plane::new(1);
    shorter.grow_to(5, u64::MAX);
    let fresh = HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap();
    let err = fresh.add_checkpoint(&shorter.signed(), &shorter.log).unwrap_err();
    assert_eq!(err, WitnessError::Rollback { witness: server.url(), witness_size: 7, size: 5 });
    assert!(err.is_integrity());
    // The raw protocol: old size 7 with a size-5 checkpoint is a 400.
    let raw = raw_add_checkpoint(&server.url(), 7, shorter.signed().note().to_owned());
    assert_eq!(raw.status().as_u16(), 400);
}

/// A witness ahead of a checkpoint that this log has also reached since (a
/// second instance submitted first) is a stale submission, never a rollback:
/// the one alarm that must stay believable is kept for logs that lost history.
#[test]
fn r_wit_6_a_witness_ahead_of_a_stale_checkpoint_is_stale_not_rollback() {
    let mut plane = Plane::new(1);
    let (_dir, server, key) = setup(&plane);
    plane.grow_to(5, u64::MAX);
    let stale = plane.signed();
    plane.grow_to(7, u64::MAX);
    HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap().add_checkpoint(&plane.signed(), &plane.log).unwrap();
    let other_instance = HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap();
    let err = other_instance.add_checkpoint(&stale, &plane.log).unwrap_err();
    assert_eq!(err, WitnessError::Stale { witness: server.url(), witness_size: 7, size: 5 });
    assert!(!err.is_integrity() && err.is_retryable());
    // Signed afresh, the same instance is cosigned.
    other_instance.add_checkpoint(&plane.signed(), &plane.log).unwrap();
}

/// The log of `size` leaves (the same leaves whatever the size).
fn log_of(size: u64) -> Plane {
    let mut plane = Plane::new(1);
    plane.grow_to(size, u64::MAX);
    plane
}

/// The whole log, whose proof for one sweep's second attempt (from size 4)
/// is asked while the other sweep submits `submitted`: two sweeps of one
/// plane racing at one witness.
struct RacingLog<'a> {
    full: &'a Plane,
    submitted: &'a Plane,
    other: &'a HttpWitness,
    raced: std::cell::Cell<bool>,
}

impl witness::LogHistory for RacingLog<'_> {
    fn root_at(&self, size: u64) -> Result<tlog::RootHash, witness::HistoryError> {
        self.full.log.root_at(size)
    }
    fn consistency_proof(&self, old_size: u64, new_size: u64) -> Result<tlog::ConsistencyProof, witness::HistoryError> {
        if old_size == 4 && !self.raced.replace(true) {
            self.other.add_checkpoint(&self.submitted.signed(), &self.full.log).unwrap();
        }
        self.full.log.consistency_proof(old_size, new_size)
    }
    fn reached(&self, size: u64) -> Result<bool, witness::HistoryError> {
        self.full.log.reached(size)
    }
}

/// A witness of the log `full`, and two sweeps' clients of it: `this` last
/// saw it at size 3, and `other` then moved it to 4.
fn two_sweeps(full: &Plane) -> (tempfile::TempDir, witness_server::WitnessServer, HttpWitness, HttpWitness) {
    let (dir, server, key) = setup(full);
    let this = HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap();
    let other = HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap();
    this.add_checkpoint(&log_of(3).signed(), &full.log).unwrap();
    other.add_checkpoint(&log_of(4).signed(), &full.log).unwrap();
    (dir, server, this, other)
}

/// R-WIT-6 (review 40's note): two sweeps of one plane at once. This one's
/// first attempt met the witness at a size the other had submitted, and
/// before its second attempt the other submitted a larger checkpoint still,
/// past this one. The log has reached that size (another instance submitted
/// first): the checkpoint is stale and the sweep signs afresh, where the
/// second 409 was a conflict "moved during the exchange" that made a healthy
/// plane's round need attention.
#[test]
fn r_wit_6_a_witness_moved_past_the_checkpoint_between_attempts_is_stale() {
    let full = log_of(9);
    let (_dir, server, this, other) = two_sweeps(&full);
    let racing = RacingLog { full: &full, submitted: &full, other: &other, raced: std::cell::Cell::new(false) };
    let err = this.add_checkpoint(&log_of(7).signed(), &racing).unwrap_err();
    assert!(racing.raced.get(), "the other sweep submitted between this one's two attempts");
    assert_eq!(err, WitnessError::Stale { witness: server.url(), witness_size: 9, size: 7 });
    assert!(!err.is_integrity() && err.is_retryable());
    this.add_checkpoint(&full.signed(), &full.log).unwrap();
}

/// R-WIT-6 (review 43): two sweeps of one plane at once, both signing the
/// same tree (the likeliest race: one store, one size). This one's first
/// attempt met the witness at an older size; before its second attempt the
/// other sweep submitted this very size. The second 409 names the
/// checkpoint's own size: the log has reached it, and the same checkpoint
/// submitted from there is cosigned, so it is stale (the sweep signs
/// afresh), where it was a conflict "moved during the exchange" that made a
/// healthy plane's round need attention.
#[test]
fn r_wit_6_a_witness_moved_to_the_checkpoint_s_own_size_between_attempts_is_stale() {
    let full = log_of(9);
    let (_dir, server, this, other) = two_sweeps(&full);
    let racing = RacingLog { full: &full, submitted: &full, other: &other, raced: std::cell::Cell::new(false) };
    let err = this.add_checkpoint(&full.signed(), &racing).unwrap_err();
    assert!(racing.raced.get(), "the other sweep submitted between this one's two attempts");
    assert_eq!(err, WitnessError::Stale { witness: server.url(), witness_size: 9, size: 9 });
    assert!(!err.is_integrity() && err.is_retryable());
    this.add_checkpoint(&full.signed(), &full.log).unwrap();
}

/// R-WIT-6 (review 43): two sweeps of one plane at once, the other a
/// smaller tree behind this one (it signed before the log grew). This
/// sweep's first attempt met the witness at an older size; before its
/// second attempt the other submitted a size between that one and this
/// checkpoint's. The witness moved forward during the exchange, never back:
/// the checkpoint is submitted once more from the witness's new size and
/// cosigned, where the second 409 was a conflict "moved during the
/// exchange" that made a healthy plane's round need attention.
#[test]
fn r_wit_6_a_witness_moved_forward_short_of_the_checkpoint_between_attempts_is_asked_again() {
    let full = log_of(9);
    let between = log_of(7);
    let (_dir, _server, this, other) = two_sweeps(&full);
    let racing = RacingLog { full: &full, submitted: &between, other: &other, raced: std::cell::Cell::new(false) };
    let cosigned = this.add_checkpoint(&full.signed(), &racing);
    assert!(racing.raced.get(), "the other sweep submitted between this one's two attempts");
    assert!(cosigned.is_ok(), "asked again from the witness's new size: {cosigned:?}");
}

/// A quorum counts distinct witness identities: one witness reached through
/// two clients is one cosigner.
#[test]
fn r_wit_1_a_quorum_counts_identities_not_endpoints() {
    let mut plane = Plane::new(1);
    let (_dir, server, key) = setup(&plane);
    plane.grow_to(3, u64::MAX);
    let one = HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap();
    let same = HttpWitness::new(&format!("{}/", server.url()), vec![trusted(&key)]).unwrap();
    let outcome = cosign_quorum(&[&one, &same], WitnessQuorum::of(2), &plane.signed(), &plane.log);
    assert!(matches!(outcome, QuorumOutcome::Shortfall { got: 1, needed: 2, .. }), "{outcome:?}");
}

#[test]
fn unknown_origin_and_untrusted_log_key() {
    let plane = Plane::new(1);
    let (_dir, server, key) = setup(&plane);
    let mut stranger = Plane::new(1);
    stranger.origin = "agentplane.test/unknown".into();
    stranger.grow_to(2, u64::MAX);
    let client = HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap();
    assert_eq!(
        client.add_checkpoint(&stranger.signed(), &stranger.log).unwrap_err(),
        WitnessError::UnknownOrigin { witness: server.url(), origin: "agentplane.test/unknown".into() }
    );
    let mut impostor = Plane::new(99);
    impostor.grow_to(2, u64::MAX);
    assert_eq!(
        client.add_checkpoint(&impostor.signed(), &impostor.log).unwrap_err(),
        WitnessError::Forbidden { witness: server.url() }
    );
}

#[test]
fn r_wit_2_client_refuses_what_it_can_know_is_wrong_before_sending() {
    // Nothing listens on this URL: a refusal here proves nothing was sent.
    let key = cosigner(7, "witness.test/w1");
    let client = HttpWitness::new("http://127.0.0.1:9", vec![trusted(&key)]).unwrap();
    let plane = Plane::new(1);
    let bad_empty = plane
        .key
        .sign(&witness::Checkpoint::new(
            &witness::Origin::new(ORIGIN).unwrap(),
            tlog::Tree::new(0, tlog::RootHash::from_hash_bytes([1; 32])),
        ))
        .unwrap();
    assert_eq!(client.add_checkpoint(&bad_empty, &plane.log).unwrap_err(), WitnessError::EmptyTreeRootMismatch);

    // A log whose stored nodes disagree with the checkpoint it signs: once the
    // witness names size 5, the proof from 5 is checked against the log's own
    // roots, fails, and the second request is never sent.
    let mut other = Plane::new(1);
    other.grow_to(9, 2);
    let mut lying = Plane::forked(1, "lies");
    lying.grow_to(9, 2);
    let outcome = remembering_add_from(&key, &other.signed(), &lying.log, 5);
    assert!(matches!(outcome, Err(WitnessError::OwnProofInvalid { old_size: 5, new_size: 9, .. })), "{outcome:?}");
}

/// Submits to a server that answers every request with 409 `witness_size`.
fn remembering_add_from(
    key: &witness::Cosigner,
    signed: &witness::SignedCheckpoint,
    history: &tlog::MemoryHashStore,
    witness_size: u64,
) -> Result<witness::CosignedCheckpoint, WitnessError> {
    let url = misbehaving_server(Misbehaviour::Raw(http_response(
        "409 Conflict",
        "text/x.tlog.size",
        format!("{witness_size}\n").as_bytes(),
    )));
    HttpWitness::new(&url, vec![trusted(key)]).unwrap().add_checkpoint(signed, history)
}

#[test]
fn r_wit_3_untrusted_lines_ignored_bad_trusted_lines_refused() {
    let mut plane = Plane::new(1);
    plane.grow_to(4, u64::MAX);
    let signed = plane.signed();
    let body = signed.checkpoint().to_text();
    let ours = cosigner(7, "witness.test/w1");
    let stranger = cosigner(8, "witness.test/stranger");
    let good = ours.cosign(&body, 1_700_000_000).unwrap().to_line();
    let foreign = stranger.cosign(&body, 1_700_000_000).unwrap().to_line();
    let answer =
        |lines: String| misbehaving_server(Misbehaviour::Raw(http_response("200 OK", "text/plain", lines.as_bytes())));

    let url = answer(format!("{foreign}{good}"));
    let cosigned = HttpWitness::new(&url, vec![trusted(&ours)]).unwrap().add_checkpoint(&signed, &plane.log).unwrap();
    assert_eq!(cosigned.cosignatures.len(), 1);

    let url = answer(foreign.clone());
    assert!(matches!(
        HttpWitness::new(&url, vec![trusted(&ours)]).unwrap().add_checkpoint(&signed, &plane.log),
        Err(WitnessError::NoTrustedCosignature { .. })
    ));

    let mut bad = ours.cosign(&body, 1_700_000_000).unwrap();
    bad.signature[30] ^= 0x40;
    let url = answer(format!("{foreign}{}", bad.to_line()));
    assert!(matches!(
        HttpWitness::new(&url, vec![trusted(&ours)]).unwrap().add_checkpoint(&signed, &plane.log),
        Err(WitnessError::Cosignature { source: CosignatureError::BadSignature { .. }, .. })
    ));

    let mut zero = ours.cosign(&body, 1_700_000_000).unwrap();
    zero.signature[..8].copy_from_slice(&[0; 8]);
    let url = answer(zero.to_line());
    assert!(matches!(
        HttpWitness::new(&url, vec![trusted(&ours)]).unwrap().add_checkpoint(&signed, &plane.log),
        Err(WitnessError::Cosignature { source: CosignatureError::ZeroTimestamp { .. }, .. })
    ));
}

#[test]
fn r_ux_3_hostile_answers_give_typed_errors_within_the_timeout() {
    let mut plane = Plane::new(1);
    plane.grow_to(4, u64::MAX);
    let signed = plane.signed();
    let key = cosigner(7, "witness.test/w1");
    let client = |url: &str| HttpWitness::with_timeout(url, vec![trusted(&key)], Duration::from_millis(700)).unwrap();

    let garbage =
        misbehaving_server(Misbehaviour::Raw(http_response("200 OK", "text/plain", b"\xff\xfe not a line\n")));
    assert!(matches!(
        client(&garbage).add_checkpoint(&signed, &plane.log),
        Err(WitnessError::BadAnswer { status: 200, .. })
    ));

    let huge = misbehaving_server(Misbehaviour::Raw(http_response("200 OK", "text/plain", &vec![b'a'; 4 << 20])));
    let err = client(&huge).add_checkpoint(&signed, &plane.log).unwrap_err();
    assert!(matches!(&err, WitnessError::BadAnswer { reason, .. } if reason.contains("larger than")), "{err:?}");

    let wrong_409 = misbehaving_server(Misbehaviour::Raw(http_response("409 Conflict", "text/plain", b"10")));
    assert!(matches!(
        client(&wrong_409).add_checkpoint(&signed, &plane.log),
        Err(WitnessError::BadAnswer { status: 409, .. })
    ));

    let not_http = misbehaving_server(Misbehaviour::Raw(b"hello, this is not HTTP\r\n\r\n".to_vec()));
    assert!(matches!(client(&not_http).add_checkpoint(&signed, &plane.log), Err(WitnessError::Transport { .. })));

    let busy = misbehaving_server(Misbehaviour::Raw(http_response("429 Too Many Requests", "text/plain", b"")));
    let err = client(&busy).add_checkpoint(&signed, &plane.log).unwrap_err();
    assert!(err.is_retryable() && !err.is_integrity(), "{err:?}");

    let silent = misbehaving_server(Misbehaviour::Silent);
    let started = std::time::Instant::now();
    let err = client(&silent).add_checkpoint(&signed, &plane.log).unwrap_err();
    assert!(matches!(&err, WitnessError::Transport { reason, .. } if reason.contains("timed out")), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "the timeout bounds the exchange");
}

/// R-UX-3: a hostile witness writes what it likes in the body of a 400 or
/// of an answer no protocol step expects, and the client quoted up to 200
/// characters of it in its error as they came: an escape sequence reached
/// the operator's terminal (`agentplane sweep` prints each witness's error
/// as a line), and a newline let the witness forge lines of the sweep's
/// output and of any log kept of it ("tenant default: met ..."). The error
/// still quotes the body, with every control character escaped; so does a
/// 5xx's, which the error quotes too, and so are the line separators and
/// the marks that turn text right to left.
#[test]
fn r_ux_3_a_hostile_witness_answer_puts_no_control_character_in_an_error() {
    let mut plane = Plane::new(1);
    plane.grow_to(4, u64::MAX);
    let signed = plane.signed();
    let key = cosigner(7, "witness.test/w1");
    let body = "bad\n2026-01-01T00:00:00Z tenant default: met at size 9\u{1b}]0;owned\u{7}\u{1b}[2K\r\u{202e}teem\u{2069}\
         \u{2028}forged line\u{2029}\u{200f}\u{200e}\u{61c}";
    let body = body.as_bytes();
    // Control characters, bidirectional overrides and marks that reorder
    // what follows, and the line and paragraph separators.
    let hostile = |c: char| {
        c.is_control()
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
            || matches!(c, '\u{2028}' | '\u{2029}')
    };
    for status in ["400 Bad Request", "418 I'm a teapot", "500 Internal Server Error", "503 Service Unavailable"] {
        let url = misbehaving_server(Misbehaviour::Raw(http_response(status, "text/plain", body)));
        let client = HttpWitness::with_timeout(&url, vec![trusted(&key)], Duration::from_secs(5)).unwrap();
        let shown = client.add_checkpoint(&signed, &plane.log).unwrap_err().to_string();
        assert!(!shown.chars().any(hostile), "{status}: a control character in {shown:?}");
        assert!(shown.contains("tenant default: met"), "{status}: the body is still quoted: {shown:?}");
        let reader = WitnessReader::with_timeout(&url, vec![trusted(&key)], Duration::from_secs(5)).unwrap();
        if let Err(err) = reader.latest(signed.checkpoint().origin()) {
            let shown = err.to_string();
            assert!(!shown.chars().any(hostile), "{status}: a control character in {shown:?}");
        }
    }
}

#[test]
fn r_wit_4_reader_returns_the_verified_latest_and_r_wit_5_split_view() {
    let mut honest = Plane::new(1);
    let (_d1, w1, k1) = setup(&honest);
    let dir2 = tempfile::tempdir().unwrap();
    let k2 = cosigner(8, "witness.test/w2");
    let w2 = start_witness(k2.clone(), vec![honest.log_config()], &dir2.path().join("w2.redb"));
    honest.grow_to(6, u64::MAX);

    let reader1 = WitnessReader::new(&w1.url(), vec![trusted(&k1)]).unwrap();
    assert_eq!(
        reader1.latest(ORIGIN).unwrap_err(),
        WitnessError::NothingCosigned { witness: w1.url(), origin: ORIGIN.into() }
    );

    HttpWitness::new(&w1.url(), vec![trusted(&k1)]).unwrap().add_checkpoint(&honest.signed(), &honest.log).unwrap();
    let latest = reader1.latest(ORIGIN).unwrap();
    assert_eq!(latest.checkpoint.tree(), honest.log.tree());
    assert_eq!(latest.cosignatures[0].name, "witness.test/w1");
    // A reader trusting another key gets no trusted cosignature from it.
    let wrong = WitnessReader::new(&w1.url(), vec![trusted(&k2)]).unwrap();
    assert!(matches!(wrong.latest(ORIGIN), Err(WitnessError::NoTrustedCosignature { .. })));

    // The operator shows w2 a different history of the same size.
    let mut fork = Plane::forked(1, "fork");
    fork.grow_to(6, 3);
    HttpWitness::new(&w2.url(), vec![trusted(&k2)]).unwrap().add_checkpoint(&fork.signed(), &fork.log).unwrap();
    let reader2 = WitnessReader::new(&w2.url(), vec![trusted(&k2)]).unwrap();
    let report = split_view(&[&reader1, &reader2], ORIGIN);
    assert_eq!(report.split_views.len(), 1, "{report:?}");
    assert_eq!(report.split_views[0].size, 6);
    assert_eq!(report.split_views[0].views.len(), 2);
}

#[test]
fn r_wit_6_state_survives_a_restart() {
    let mut plane = Plane::new(1);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("witness.redb");
    let key = cosigner(7, "witness.test/w1");
    plane.grow_to(5, u64::MAX);
    {
        let server = start_witness(key.clone(), vec![plane.log_config()], &state);
        HttpWitness::new(&server.url(), vec![trusted(&key)])
            .unwrap()
            .add_checkpoint(&plane.signed(), &plane.log)
            .unwrap();
    }
    let server = start_witness(key.clone(), vec![plane.log_config()], &state);
    let reader = WitnessReader::new(&server.url(), vec![trusted(&key)]).unwrap();
    assert_eq!(reader.latest(ORIGIN).unwrap().checkpoint.tree().size, 5);
    let mut fork = Plane::forked(1, "after-restart");
    fork.grow_to(5, 2);
    let client = HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap();
    assert!(client.add_checkpoint(&fork.signed(), &fork.log).unwrap_err().is_integrity());
    plane.grow_to(8, u64::MAX);
    assert_eq!(client.add_checkpoint(&plane.signed(), &plane.log).unwrap().checkpoint.tree().size, 8);
}

#[test]
fn r_wit_1_quorum_met_short_and_integrity_with_three_witness_processes() {
    let mut plane = Plane::new(1);
    let dir = tempfile::tempdir().unwrap();
    let log_vkey = plane.key.verifier_key().to_string();
    let mut processes = Vec::new();
    let mut clients = Vec::new();
    let mut vkeys = Vec::new();
    for i in 0..3 {
        let key_file = dir.path().join(format!("w{i}.key"));
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
            .args(["keygen", "--name", &format!("witness.test/p{i}"), "--out"])
            .arg(&key_file)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let vkey = String::from_utf8(out.stdout).unwrap();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
            .args(["serve", "--listen", "127.0.0.1:0", "--state"])
            .arg(dir.path().join(format!("w{i}.redb")))
            .arg("--key-file")
            .arg(&key_file)
            .args(["--log", &format!("{ORIGIN}={log_vkey}")])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        let url = line.trim().rsplit(' ').next().unwrap().to_owned();
        processes.push(KillOnDrop(child));
        clients.push(HttpWitness::new(&url, vec![witness::TrustedWitness::parse(vkey.trim()).unwrap()]).unwrap());
        vkeys.push(vkey.trim().to_owned());
    }
    let all: Vec<&(dyn Witness + Sync)> = clients.iter().map(|c| c as &(dyn Witness + Sync)).collect();

    plane.grow_to(7, u64::MAX);
    match cosign_quorum(&all, WitnessQuorum::of(3), &plane.signed(), &plane.log) {
        QuorumOutcome::Met { cosigned, failures } => {
            assert_eq!(cosigned.len(), 3);
            assert!(failures.is_empty());
        }
        other => panic!("expected Met, got {other:?}"),
    }

    // One witness unreachable: with a quorum of 3 the round falls short.
    let unreachable =
        HttpWitness::new("http://127.0.0.1:9", vec![witness::TrustedWitness::parse(&vkeys[0]).unwrap()]).unwrap();
    let two_and_dead: Vec<&(dyn Witness + Sync)> = vec![all[0], all[1], &unreachable];
    plane.grow_to(9, u64::MAX);
    match cosign_quorum(&two_and_dead, WitnessQuorum::of(3), &plane.signed(), &plane.log) {
        QuorumOutcome::Shortfall { got, needed, failures } => {
            assert_eq!((got, needed, failures.len()), (2, 3, 1));
            assert!(failures[0].error.is_retryable());
        }
        other => panic!("expected Shortfall, got {other:?}"),
    }

    // The third witness is shown a fork at 9; then the honest 12 is met by two
    // witnesses and refused on integrity by the third: reported though met.
    let mut fork = Plane::forked(1, "fork");
    fork.grow_to(10, 8);
    clients[2].add_checkpoint(&fork.signed(), &fork.log).unwrap();
    plane.grow_to(12, u64::MAX);
    match cosign_quorum(&all, WitnessQuorum::of(2), &plane.signed(), &plane.log) {
        QuorumOutcome::IntegrityRefusal { refusals, got, needed, quorum_met, failures, .. } => {
            assert_eq!((got, needed, quorum_met), (2, 2, true));
            assert_eq!(refusals.len(), 1);
            assert!(refusals[0].error.is_integrity(), "{:?}", refusals[0]);
            assert!(failures.is_empty());
        }
        other => panic!("expected IntegrityRefusal, got {other:?}"),
    }
    drop(processes);
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn redirects_to_another_host_are_not_followed() {
    let mut plane = Plane::new(1);
    plane.grow_to(2, u64::MAX);
    let key = cosigner(7, "witness.test/w1");
    let redirect = b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://localhost:9/add-checkpoint\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec();
    let url = misbehaving_server(Misbehaviour::Raw(redirect));
    let err =
        HttpWitness::new(&url, vec![trusted(&key)]).unwrap().add_checkpoint(&plane.signed(), &plane.log).unwrap_err();
    assert!(matches!(err, WitnessError::BadAnswer { status: 307, .. }), "{err:?}");
}

#[test]
fn the_witness_binary_has_help() {
    for args in [vec!["--help"], vec!["serve", "--help"], vec!["keygen", "--help"]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness")).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("Usage"), "{args:?}");
    }
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["serve", "--state", "/nonexistent/dir/x.redb", "--key-file", "/nonexistent/key", "--log", "a=b"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("agentplane-witness:"));
}

/// R-UX-3: `keygen` on a disk that fills up while the key is written fails
/// and leaves no key file behind (whole or not at all, as the plane's
/// `keygen` writes its key): the same `keygen` succeeds once there is room,
/// and its key reads. Before, an empty key file was left at `--out` (an
/// exclusive create, then the write that failed), which the next `keygen`
/// refused as existing and `serve` could not read.
#[cfg(unix)]
#[test]
fn r_ux_3_keygen_on_a_full_disk_leaves_no_half_written_key_file() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("w.key");
    // Every file the witness writes is limited to 0 bytes (SIGXFSZ ignored):
    // a write fails as on a full disk.
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"trap "" XFSZ; ulimit -f 0; exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["keygen", "--name", "witness.test/full", "--out"])
        .arg(&key_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|entry| entry.unwrap().file_name()).collect();
    assert!(left.is_empty(), "a failed keygen left {left:?}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["keygen", "--name", "witness.test/full", "--out"])
        .arg(&key_file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let skey = std::fs::read_to_string(&key_file).unwrap();
    let key = witness::SignerKey::parse(skey.trim()).unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), key.verifier_key().to_string());
}

/// R-UX-2: `keygen --out` at a file that exists (a witness's key: its
/// identity, which every log and auditor trusts) keeps that file as it was
/// and says what to do. It said "creating w.key: File exists (os error
/// 17)", which names no remedy.
#[test]
fn r_ux_2_keygen_over_an_existing_key_keeps_it_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("w.key");
    std::fs::write(&key_file, "the old key\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["keygen", "--name", "witness.test/again", "--out"])
        .arg(&key_file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(out.stdout.is_empty(), "no verifier key of a key not written");
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), "the old key\n");
    assert!(said.contains("w.key exists") && said.contains("never overwrites") && said.contains("--out"), "{said}");
}

/// R-UX-3: the witness's own output failing (standard error on a full disk,
/// standard output closed) is no panic: a refusal still exits 2 and keygen
/// says where the key went. Before, `eprintln!` panicked: exit 101.
#[cfg(unix)]
#[test]
fn r_ux_3_a_witness_whose_output_fails_exits_with_its_code_not_a_panic() {
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["serve", "--key-file", "/nonexistent/w.key", "--state", "/nonexistent/w.redb"])
        .stdout(full())
        .stderr(full())
        .status()
        .unwrap();
    assert_eq!(refused.code(), Some(2), "a refusal whose message cannot be written");
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("w.key");
    let keygen = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["keygen", "--name", "witness.test/out", "--out"])
        .arg(&key_file)
        .stdout(full())
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&keygen.stderr);
    assert_eq!(keygen.status.code(), Some(2), "{said}");
    assert!(said.contains("could not print its verifier key") && said.contains("w.key"), "{said}");
    assert!(witness::SignerKey::parse(std::fs::read_to_string(&key_file).unwrap().trim()).is_ok(), "the key is kept");
}

#[test]
fn a_bodiless_409_at_equal_size_is_the_v1_fork_answer() {
    // transparency-dev/witness follows tlog-witness v1.0.0: same size, other
    // root is a 409 with no body. The client learns size 5, resends from 5,
    // and reads the bodiless 409 as a fork.
    let mut plane = Plane::new(1);
    plane.grow_to(5, u64::MAX);
    let key = cosigner(7, "witness.test/w1");
    let responses = vec![
        http_response("409 Conflict", "text/x.tlog.size", b"5\n"),
        b"HTTP/1.1 409 Conflict\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
    ];
    let url = misbehaving_server(Misbehaviour::Sequence(
        std::sync::Arc::new(responses),
        std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0)),
    ));
    let err =
        HttpWitness::new(&url, vec![trusted(&key)]).unwrap().add_checkpoint(&plane.signed(), &plane.log).unwrap_err();
    assert_eq!(err, WitnessError::Fork { witness: url, size: 5 });
    assert!(err.is_integrity());
}

/// R-UX-3, R-WIT-3: the timeout bounds the whole exchange, the answer's body
/// included. A witness that sends its headers at once and then a byte every
/// 50 ms never lets a single read time out; without a deadline over the body
/// it held the client (and the sweep round, and `audit --witness`) for an
/// hour per 64 KiB.
#[test]
fn r_wit_3_a_witness_trickling_its_answer_is_timed_out_within_twice_the_timeout() {
    let mut plane = Plane::new(1);
    plane.grow_to(4, u64::MAX);
    let key = cosigner(7, "witness.test/w1");
    let url = misbehaving_server(Misbehaviour::Trickle);
    let timeout = Duration::from_millis(700);

    let started = std::time::Instant::now();
    let err = HttpWitness::with_timeout(&url, vec![trusted(&key)], timeout)
        .unwrap()
        .add_checkpoint(&plane.signed(), &plane.log)
        .unwrap_err();
    assert!(matches!(&err, WitnessError::Transport { reason, .. } if reason.contains("timed out")), "{err:?}");
    assert!(started.elapsed() < 2 * timeout + Duration::from_millis(500), "submitting took {:?}", started.elapsed());

    let started = std::time::Instant::now();
    let err = WitnessReader::with_timeout(&url, vec![trusted(&key)], timeout).unwrap().latest(ORIGIN).unwrap_err();
    assert!(matches!(&err, WitnessError::Transport { reason, .. } if reason.contains("timed out")), "{err:?}");
    assert!(started.elapsed() < 2 * timeout + Duration::from_millis(500), "reading took {:?}", started.elapsed());
}

/// R-WIT-4, R-PLANE-2: a cosignature/v1 statement does not cover the log's
/// signature, so a lying witness can cosign a tree the log never signed and
/// serve it from its monitor endpoint. `latest` (no log key) takes it;
/// `latest_signed`, for whoever holds the log's key (the plane asking what a
/// witness holds before it signs, an auditor), refuses it as a bad answer of
/// that witness, and takes an honest witness's note, which carries the log's
/// signature.
#[test]
fn r_wit_4_a_cosigned_tree_the_log_never_signed_is_refused_when_read_with_the_log_key() {
    let mut plane = Plane::new(1);
    let (_dir, server, key) = setup(&plane);
    plane.grow_to(5, u64::MAX);
    HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap().add_checkpoint(&plane.signed(), &plane.log).unwrap();
    let log_keys = [plane.key.verifier_key()];
    let honest = WitnessReader::new(&server.url(), vec![trusted(&key)]).unwrap();
    assert_eq!(honest.latest_signed(ORIGIN, &log_keys).unwrap().checkpoint.tree(), plane.log.tree());

    // The same witness key, cosigning a far larger tree no log signed.
    let origin = witness::Origin::new(ORIGIN).unwrap();
    let invented = witness::Checkpoint::new(&origin, tlog::Tree::new(1_000_000, tlog::RootHash::empty())).to_text();
    let line = key.cosign(&invented, 1_700_000_000).unwrap();
    let note = witness::assemble(&invented, [&line]);
    let lying = misbehaving_server(Misbehaviour::Raw(http_response("200 OK", "text/plain", note.as_bytes())));
    let reader = WitnessReader::new(&lying, vec![trusted(&key)]).unwrap();
    assert_eq!(reader.latest(ORIGIN).unwrap().checkpoint.tree().size, 1_000_000, "only the cosignature is checked");
    let err = reader.latest_signed(ORIGIN, &log_keys).unwrap_err();
    assert!(
        matches!(&err, WitnessError::BadAnswer { reason, .. } if reason.contains("not signed by the log")),
        "{err:?}"
    );
    assert!(!err.is_integrity(), "a lying witness, not a log that lost history: {err:?}");
}

/// A witness binary serving `plane`'s log with a key made by its `keygen`
/// under `name`, its stderr (at `RUST_LOG=info`) going to
/// `dir/stderr.log`: the child, the URL it printed, and the verifier key.
fn spawn_logged_witness(dir: &std::path::Path, name: &str, plane: &Plane) -> (std::process::Child, String, String) {
    use std::io::BufRead as _;
    let key_file = dir.join("w.key");
    let keygen = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["keygen", "--name", name, "--out"])
        .arg(&key_file)
        .output()
        .unwrap();
    assert!(keygen.status.success(), "{}", String::from_utf8_lossy(&keygen.stderr));
    let vkey = String::from_utf8(keygen.stdout).unwrap().trim().to_owned();
    let log = std::fs::File::create(dir.join("stderr.log")).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["serve", "--listen", "127.0.0.1:0", "--state"])
        .arg(dir.join("w.redb"))
        .arg("--key-file")
        .arg(&key_file)
        .arg("--log")
        .arg(format!("{}={}", plane.origin, plane.key.verifier_key()))
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    (child, url, vkey)
}

/// R-OPS-1, R-WIT-3 (noticed by review 20): every refused request was logged
/// at warn, one line each, so any client could flood the operator's log
/// (and disk) with garbage requests. The binary logs at most
/// `REFUSALS_LOGGED_PER_WINDOW` refusals one by one per window and counts
/// the rest, saying how many with the first refusal after the window.
#[test]
fn r_ops_1_a_flood_of_garbage_requests_does_not_flood_the_witness_log() {
    let dir = tempfile::tempdir().unwrap();
    let plane = Plane::new(1);
    let (mut child, url, _) = spawn_logged_witness(dir.path(), "witness.test/flooded", &plane);
    let client = reqwest::blocking::Client::new();
    let started = std::time::Instant::now();
    let sent = 3 * witness_server::REFUSALS_LOGGED_PER_WINDOW;
    for i in 0..sent {
        let answer = client.get(format!("{url}/garbage-{i}")).send().unwrap();
        assert_eq!(answer.status().as_u16(), 404);
    }
    let stopped = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(stopped.success());
    assert!(child.wait().unwrap().success());
    let logged = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap();
    let refusals = logged.lines().filter(|line| line.contains("refused:")).count();
    assert!(refusals > 0, "refusals are still logged: {logged}");
    // The requests take a fraction of one window; on a machine slow enough
    // to spread them over several, each window may log its own share.
    let windows = 1 + started.elapsed().as_secs() / witness_server::REFUSAL_LOG_WINDOW.as_secs();
    let bound = witness_server::REFUSALS_LOGGED_PER_WINDOW as u64 * windows;
    assert!(refusals as u64 <= bound, "{refusals} refusal lines for {sent} requests over {windows} windows");
}

/// R-OPS-1, attack on the operator's disk: the refusal log was bounded in
/// lines (`REFUSALS_LOGGED_PER_WINDOW` a window) but not in bytes, and each
/// line quoted the request's method and path whole. A client with no key
/// sends a 10 KB method or a 10 KB path (within `MAX_HEADER_BYTES`; hyper
/// accepted 300 KB of method before that bound) and every
/// refusal line carries it: 50 such lines each 10 s is over 1 MB/s, a
/// hundred GB a day, filling the disk the state file may share (where a
/// full disk leaves the witness answering 500 until it is restarted). A
/// logged method or path is cut to `LOGGED_REQUEST_FIELD_BYTES`, with its
/// length.
#[test]
fn r_ops_1_a_refused_request_with_a_huge_method_or_path_logs_a_bounded_line() {
    use std::io::{Read as _, Write as _};
    let dir = tempfile::tempdir().unwrap();
    let plane = Plane::new(1);
    let (mut child, url, _) = spawn_logged_witness(dir.path(), "witness.test/long", &plane);
    let addr = url.trim_start_matches("http://").to_owned();
    let long_method = "M".repeat(10_000);
    let long_path = format!("/{}", "p".repeat(10_000));
    for request_line in [format!("{long_method} /x HTTP/1.1"), format!("GET {long_path} HTTP/1.1")] {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream.write_all(format!("{request_line}\r\nHost: w\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 404"), "{}", &answer[..answer.len().min(80)]);
    }
    let stopped = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(stopped.success());
    assert!(child.wait().unwrap().success());
    let logged = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap();
    let refusals: Vec<&str> = logged.lines().filter(|line| line.contains("refused:")).collect();
    assert_eq!(refusals.len(), 2, "both refusals are logged: {}", &logged[..logged.len().min(2_000)]);
    for refusal in refusals {
        assert!(refusal.len() < 1_000, "a refusal line of {} bytes: {}...", refusal.len(), &refusal[..200]);
        assert!(refusal.contains("bytes)"), "the line says how long the field was: {refusal}");
    }
}

/// R-WIT-6, R-OPS-1, attack on the witness's alarm: a log's checkpoints are
/// public, so anyone can send the witness a newer one than it holds with a
/// forged consistency proof. Every such request was logged on
/// `agentplane.witness.integrity` as "refused a checkpoint that does not
/// extend the one cosigned", one line each, past the refusal log's limit
/// (the README said only a log's key holder could make one): a false alarm
/// about an honest log, at whatever rate the sender likes. A proof that does
/// not verify proves nothing about the log; two roots the log signed for one
/// size do, and only those are integrity lines. The forged-proof requests
/// are refused 422 and logged with the other refusals, within their limit.
#[test]
fn r_wit_6_a_replayed_checkpoint_with_a_forged_proof_raises_no_integrity_alarm() {
    let dir = tempfile::tempdir().unwrap();
    let mut honest = Plane::new(1);
    let (mut child, url, vkey) = spawn_logged_witness(dir.path(), "witness.test/alarm", &honest);
    let client = HttpWitness::new(&url, vec![witness::TrustedWitness::parse(&vkey).unwrap()]).unwrap();
    honest.grow_to(5, u64::MAX);
    client.add_checkpoint(&honest.signed(), &honest.log).unwrap();
    // The log publishes its size-8 checkpoint; a third party replays it
    // with a forged proof from the witness's size.
    honest.grow_to(8, u64::MAX);
    let published = honest.signed().note().to_owned();
    let forged = tlog::ConsistencyProof::new(vec![tlog::NodeHash::from_hash_bytes([9; 32]); 4]);
    let raw = reqwest::blocking::Client::new();
    let replays = 60;
    for _ in 0..replays {
        let request = witness::protocol::AddCheckpointRequest {
            old_size: 5,
            proof: forged.clone(),
            checkpoint_note: published.clone(),
        };
        let answer = raw.post(format!("{url}/add-checkpoint")).body(request.to_body()).send().unwrap();
        assert_eq!(answer.status().as_u16(), 422);
    }
    // The honest log goes on, and then signs a fork at its size: evidence.
    assert_eq!(client.add_checkpoint(&honest.signed(), &honest.log).unwrap().checkpoint.tree().size, 8);
    let mut fork = Plane::forked(1, "forked");
    fork.grow_to(8, 6);
    assert!(client.add_checkpoint(&fork.signed(), &fork.log).unwrap_err().is_integrity());
    let stopped = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(stopped.success());
    assert!(child.wait().unwrap().success());
    let logged = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap();
    let alarms: Vec<&str> = logged.lines().filter(|line| line.contains("agentplane.witness.integrity")).collect();
    assert_eq!(alarms.len(), 1, "one alarm, for the fork the log signed, not {replays} for replays: {alarms:#?}");
    assert!(alarms[0].contains("size=8"), "{}", alarms[0]);
}

/// R-WIT-3, R-WIT-8: a hostile witness answers each exchange just inside
/// the timeout, and answers so that the client keeps going: a 500 twice
/// (tried again), then a 409 naming a size short of the checkpoint (sent
/// again from there), three times over. Each exchange was bounded (twice the
/// timeout), the submission was not: nine exchanges, about nine timeouts,
/// for which the whole sweep round waits (the quorum waits for every
/// witness, and the tenants are swept one after another): with the default
/// 10 s, a round of a minute and a half per tenant from one witness. The
/// whole submission is held to one deadline now: it ends (a transport
/// failure saying it timed out, which is retryable, never an integrity
/// alarm) within three timeouts.
#[test]
fn r_wit_3_a_witness_answering_just_inside_the_timeout_is_bounded_over_the_whole_submission() {
    use std::io::Write as _;
    let mut plane = Plane::new(1);
    plane.grow_to(9, u64::MAX);
    let key = cosigner(7, "witness.test/w1");
    let timeout = Duration::from_millis(400);
    let delay = Duration::from_millis(360);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let served = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let count = std::sync::Arc::clone(&served);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            if read_request(&stream).is_none() {
                continue;
            }
            let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            // Every third answer a 409 one leaf further (1, 2, 3...), else a 500.
            let answer = if n % 3 == 2 {
                http_response("409 Conflict", "text/x.tlog.size", format!("{}\n", n / 3 + 1).as_bytes())
            } else {
                http_response("500 Internal Server Error", "text/plain", b"")
            };
            std::thread::sleep(delay);
            let _ = stream.write_all(&answer);
        }
    });
    let client = HttpWitness::with_timeout(&url, vec![trusted(&key)], timeout).unwrap();
    let started = std::time::Instant::now();
    let err = client.add_checkpoint(&plane.signed(), &plane.log).unwrap_err();
    let took = started.elapsed();
    assert!(!err.is_integrity(), "{err:?}");
    assert!(
        took < 3 * timeout + Duration::from_millis(300),
        "one submission took {took:?} ({} exchanges) with a timeout of {timeout:?}: {err:?}",
        served.load(std::sync::atomic::Ordering::SeqCst)
    );
    assert!(matches!(&err, WitnessError::Transport { reason, .. } if reason.contains("timed out")), "{err:?}");
}

/// R-WIT-6, attack: a witness serving two logs takes a checkpoint of one
/// only under that log's own keys. The holder of log A's key signs a
/// checkpoint with log B's origin: it is refused 403 and never cosigned,
/// or one log's key could put a tree into another log's history.
#[test]
fn r_wit_6_a_checkpoint_signed_by_another_watched_log_s_key_is_forbidden() {
    let log_a = Plane::new(1);
    let b_key = witness::LogKey::new(
        witness::SignerKey::from_seed("agentplane.test/other", witness::ALG_ED25519, [2; 32]).unwrap(),
    )
    .unwrap();
    let log_b = witness_server::LogConfig { origin: "agentplane.test/other".into(), keys: vec![b_key.verifier_key()] };
    let dir = tempfile::tempdir().unwrap();
    let key = cosigner(7, "witness.test/w1");
    let server = start_witness(key.clone(), vec![log_a.log_config(), log_b], &dir.path().join("witness.redb"));
    let mut b_by_a = Plane::new(1);
    b_by_a.origin = "agentplane.test/other".into();
    b_by_a.grow_to(3, u64::MAX);
    let client = HttpWitness::new(&server.url(), vec![trusted(&key)]).unwrap();
    assert_eq!(
        client.add_checkpoint(&b_by_a.signed(), &b_by_a.log).unwrap_err(),
        WitnessError::Forbidden { witness: server.url() }
    );
    let reader = WitnessReader::new(&server.url(), vec![trusted(&key)]).unwrap();
    assert!(matches!(reader.latest("agentplane.test/other"), Err(WitnessError::NothingCosigned { .. })));
}

/// R-WIT-5: a split view is found whichever witnesses hold which root: three
/// witnesses where the first and the last agree and the middle one was
/// shown a fork of the same size is one split view naming all three.
#[test]
fn r_wit_5_a_split_view_between_the_first_and_a_middle_witness_is_found() {
    let mut honest = Plane::new(1);
    honest.grow_to(6, u64::MAX);
    let mut fork = Plane::forked(1, "fork");
    fork.grow_to(6, 3);
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let keys: Vec<_> = (0..3u8).map(|i| cosigner(20 + i, &format!("witness.test/split{i}"))).collect();
    let servers: Vec<_> = (0..3)
        .map(|i| start_witness(keys[i].clone(), vec![honest.log_config()], &dirs[i].path().join("w.redb")))
        .collect();
    for (i, shown) in [&honest, &fork, &honest].into_iter().enumerate() {
        HttpWitness::new(&servers[i].url(), vec![trusted(&keys[i])])
            .unwrap()
            .add_checkpoint(&shown.signed(), &shown.log)
            .unwrap();
    }
    let readers: Vec<_> =
        (0..3).map(|i| WitnessReader::new(&servers[i].url(), vec![trusted(&keys[i])]).unwrap()).collect();
    let report = split_view(&readers.iter().collect::<Vec<_>>(), ORIGIN);
    assert_eq!(report.split_views.len(), 1, "{report:?}");
    assert_eq!(report.split_views[0].size, 6);
    assert_eq!(report.split_views[0].views.len(), 3);
}

/// R-WIT-3: an answer past [`witness::protocol::MAX_RESPONSE_BYTES`] is
/// refused for its size, by the writer and by the reader alike, even when it
/// is below the note limit (1 MiB): the client never reads more than the
/// bound, whatever the body would have parsed to.
#[test]
fn r_wit_3_an_answer_past_the_response_bound_is_refused_for_its_size() {
    let mut plane = Plane::new(1);
    plane.grow_to(4, u64::MAX);
    let key = cosigner(7, "witness.test/w1");
    let bound = witness::protocol::MAX_RESPONSE_BYTES;
    let huge = misbehaving_server(Misbehaviour::Raw(http_response("200 OK", "text/plain", &vec![b'a'; 2 * bound])));
    let expected = format!("answer larger than {bound} bytes");
    let writer = HttpWitness::new(&huge, vec![trusted(&key)]).unwrap();
    let err = writer.add_checkpoint(&plane.signed(), &plane.log).unwrap_err();
    assert!(matches!(&err, WitnessError::BadAnswer { reason, .. } if *reason == expected), "{err:?}");
    let reader = WitnessReader::new(&huge, vec![trusted(&key)]).unwrap();
    let err = reader.latest(ORIGIN).unwrap_err();
    assert!(matches!(&err, WitnessError::BadAnswer { reason, .. } if *reason == expected), "{err:?}");
}

/// R-WIT-4, attack: a witness's monitor endpoint answers, at the path of
/// one log, a checkpoint of another log it really cosigned. The reader
/// refuses it as a bad answer rather than report another log's tree as
/// this one's.
#[test]
fn r_wit_4_a_monitor_note_of_another_origin_is_refused() {
    let key = cosigner(7, "witness.test/w1");
    let mut other = Plane::new(1);
    other.origin = "agentplane.test/other".into();
    other.grow_to(4, u64::MAX);
    let signed = other.signed();
    let line = key.cosign(&signed.checkpoint().to_text(), 1_700_000_000).unwrap();
    let note = signed.cosigned_note([&line]);
    let server = misbehaving_server(Misbehaviour::Raw(http_response("200 OK", "text/plain", note.as_bytes())));
    let reader = WitnessReader::new(&server, vec![trusted(&key)]).unwrap();
    let err = reader.latest(ORIGIN).unwrap_err();
    assert!(matches!(&err, WitnessError::BadAnswer { reason, .. } if reason.contains("another origin")), "{err:?}");
}

/// R-WIT-6: a witness whose 409 names a size below the one it named just
/// before (it went back between two answers) is a conflict reported as
/// such, never asked again from the smaller size and counted.
#[test]
fn r_wit_6_a_witness_whose_409_size_goes_back_between_answers_is_a_conflict() {
    let mut plane = Plane::new(1);
    plane.grow_to(4, u64::MAX);
    let key = cosigner(7, "witness.test/w1");
    let signed = plane.signed();
    let line = key.cosign(&signed.checkpoint().to_text(), 1_700_000_000).unwrap();
    let size = |n: &str| http_response("409 Conflict", witness::protocol::SIZE_CONTENT_TYPE, n.as_bytes());
    let answers = vec![size("3\n"), size("1\n"), http_response("200 OK", "text/plain", line.to_line().as_bytes())];
    let served = Arc::new(AtomicU64::new(0));
    let server = misbehaving_server(Misbehaviour::Sequence(Arc::new(answers), Arc::clone(&served)));
    let client = HttpWitness::new(&server, vec![trusted(&key)]).unwrap();
    assert_eq!(
        client.add_checkpoint(&signed, &plane.log).unwrap_err(),
        WitnessError::Conflict { witness: server.clone(), witness_size: 1 }
    );
    assert_eq!(served.load(Ordering::SeqCst), 2, "not asked a third time");
}

/// R-WIT-6, attack: a witness that answers the third attempt of a
/// submission with a size the log never reached (after two 409s that moved
/// forward short of the checkpoint) claims a history this log does not
/// have: an integrity refusal (a rollback of the log, as the witness tells
/// it), never an ordinary conflict that a round shrugs off.
#[test]
fn r_wit_6_a_third_409_past_anything_the_log_reached_is_a_rollback() {
    let mut plane = Plane::new(1);
    plane.grow_to(4, u64::MAX);
    let key = cosigner(7, "witness.test/w1");
    let size = |n: &str| http_response("409 Conflict", witness::protocol::SIZE_CONTENT_TYPE, n.as_bytes());
    let answers = vec![size("1\n"), size("2\n"), size("9\n")];
    let server = misbehaving_server(Misbehaviour::Sequence(Arc::new(answers), Arc::new(AtomicU64::new(0))));
    let client = HttpWitness::new(&server, vec![trusted(&key)]).unwrap();
    let err = client.add_checkpoint(&plane.signed(), &plane.log).unwrap_err();
    assert_eq!(err, WitnessError::Rollback { witness: server.clone(), witness_size: 9, size: 4 });
    assert!(err.is_integrity(), "{err:?}");
}
