//! The witness server on its HTTP stack: slow clients cannot stop it, wrong
//! methods get 405 with Allow, its own key is refused as a log key, it shuts
//! down gracefully, and the binary reads a configuration file and stops on
//! SIGTERM. Bounded: every wait is on a socket or a process, with a timeout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use support::*;
use witness::{HttpWitness, Witness};
use witness_server::{LogConfig, ServerLimits, WitnessConfig, WitnessServer};

fn start(plane: &Plane, dir: &tempfile::TempDir, limits: ServerLimits) -> (WitnessServer, witness::Cosigner) {
    let key = cosigner(7, "witness.test/w1");
    let config = WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner: key.clone(),
        logs: vec![plane.log_config()],
        clock: Arc::new(FixedClock(AtomicU64::new(1_700_000_000))),
    };
    (WitnessServer::start_with(config, &dir.path().join("w.redb"), "127.0.0.1:0", limits).unwrap(), key)
}

fn connect(server: &WitnessServer) -> TcpStream {
    let stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream
}

/// Reads what the server sends until it closes the connection (or the read timeout).
fn answer_of(mut stream: TcpStream) -> String {
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn sixteen_connections_stalled_mid_body_do_not_stop_an_honest_client() {
    let mut plane = Plane::new(1);
    plane.grow_to(4, u64::MAX);
    let dir = tempfile::tempdir().unwrap();
    let limits = ServerLimits { body_timeout: Duration::from_millis(500), ..ServerLimits::default() };
    let (server, key) = start(&plane, &dir, limits);
    let mut stalled = Vec::new();
    for _ in 0..16 {
        let mut stream = connect(&server);
        stream
            .write_all(b"POST /add-checkpoint HTTP/1.1\r\nHost: witness\r\nContent-Length: 4000\r\n\r\nold 0\n")
            .unwrap();
        stalled.push(stream);
    }
    // While all sixteen hold their connections, an honest client whose every
    // exchange must finish within a second is cosigned.
    let honest = HttpWitness::with_timeout(&server.url(), vec![trusted(&key)], Duration::from_secs(1)).unwrap();
    let cosigned = honest.add_checkpoint(&plane.signed(), &plane.log).unwrap();
    assert_eq!(cosigned.checkpoint.tree().size, 4);
    // The stalled ones are cut when their body does not arrive in time.
    for stream in stalled {
        let answer = answer_of(stream);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    }
}

#[test]
fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let plane = Plane::new(1);
    let dir = tempfile::tempdir().unwrap();
    let limits = ServerLimits { header_timeout: Duration::from_millis(300), ..ServerLimits::default() };
    let (server, _) = start(&plane, &dir, limits);
    let mut stream = connect(&server);
    stream.write_all(b"POST /add-checkpoint HTTP/1.1\r\nHost: wit").unwrap();
    // The server closes it (end of stream), long before our own read timeout.
    let mut answer = Vec::new();
    let closed = stream.read_to_end(&mut answer);
    assert!(closed.is_ok(), "the server closed the connection: {closed:?}");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer:?}");
}

#[test]
fn a_wrong_method_is_405_with_allow() {
    let plane = Plane::new(1);
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = start(&plane, &dir, ServerLimits::default());
    let client = reqwest::blocking::Client::new();
    let put = client.put(format!("{}/add-checkpoint", server.url())).body("x").send().unwrap();
    assert_eq!(put.status().as_u16(), 405);
    assert_eq!(put.headers().get("allow").unwrap(), "POST");
    let post =
        client.post(format!("{}/{}/checkpoint", server.url(), witness::protocol::origin_hash(ORIGIN))).send().unwrap();
    assert_eq!(post.status().as_u16(), 405);
    assert_eq!(post.headers().get("allow").unwrap(), "GET");
    assert_eq!(client.get(format!("{}/nothing", server.url())).send().unwrap().status().as_u16(), 404);
}

#[test]
fn the_witness_refuses_its_own_key_as_a_log_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = cosigner(7, "witness.test/w1");
    let own = witness::VerifierKey::ed25519("witness.test/w1", witness::ALG_ED25519, {
        let mut public = [0; 32];
        public.copy_from_slice(key.verifier_key().public_key());
        public
    })
    .unwrap();
    let config = WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner: key,
        logs: vec![LogConfig { origin: ORIGIN.into(), keys: vec![own] }],
        clock: Arc::new(FixedClock(AtomicU64::new(1))),
    };
    let refused = WitnessServer::start(config, &dir.path().join("w.redb"), "127.0.0.1:0");
    assert!(matches!(refused, Err(witness_server::ServerError::Config(_))), "{refused:?}");
}

/// R-WIT-6: a log is watched under its Ed25519 note key (0x01). A log listed
/// with a key of another type (another witness's cosignature key, 0x04, or an
/// ML-DSA-44 key, 0x06) could never have a checkpoint verify: the witness
/// would start and then answer every submission 403. It is refused at start.
#[test]
fn r_wit_6_a_log_key_that_is_not_an_ed25519_note_key_is_refused_at_start() {
    for other in [
        cosigner(9, "witness.test/other"),
        witness::Cosigner::new(
            witness::SignerKey::from_seed("witness.test/other-ml", witness::ALG_ML_DSA_44, [9; 32]).unwrap(),
        )
        .unwrap(),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let config = WitnessConfig {
            extra_cosigners: Vec::new(),
            cosigner: cosigner(7, "witness.test/w1"),
            logs: vec![LogConfig { origin: ORIGIN.into(), keys: vec![other.verifier_key()] }],
            clock: Arc::new(FixedClock(AtomicU64::new(1))),
        };
        let refused = WitnessServer::start(config, &dir.path().join("w.redb"), "127.0.0.1:0");
        assert!(
            matches!(&refused, Err(witness_server::ServerError::Config(why)) if why.contains("not an Ed25519 note key")),
            "{refused:?}"
        );
    }
}

#[test]
fn shutdown_stops_accepting_and_returns() {
    let plane = Plane::new(1);
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = start(&plane, &dir, ServerLimits::default());
    let addr = server.addr();
    server.shutdown();
    assert!(TcpStream::connect(addr).is_err(), "nothing listens after shutdown");
}

#[test]
fn the_binary_serves_from_a_configuration_file_and_stops_on_sigterm() {
    let mut plane = Plane::new(1);
    plane.grow_to(3, u64::MAX);
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("w.key");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["keygen", "--name", "witness.test/config", "--out"])
        .arg(&key_file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let vkey = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let config = dir.path().join("witness.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\nstate = {:?}\nkey_file = {:?}\n\n[[log]]\norigin = \"{ORIGIN}\"\nkeys = [\"{}\"]\n",
            dir.path().join("w.redb"),
            key_file,
            plane.key.verifier_key()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    let client = HttpWitness::new(&url, vec![witness::TrustedWitness::parse(&vkey).unwrap()]).unwrap();
    assert_eq!(client.add_checkpoint(&plane.signed(), &plane.log).unwrap().checkpoint.tree().size, 3);
    // A shrink: the witness's 409 (its size) is the protocol's normal
    // exchange, and the client refuses on its own to prove a shrink.
    let mut shorter = Plane::new(1);
    shorter.grow_to(2, u64::MAX);
    let fresh = HttpWitness::new(&url, vec![witness::TrustedWitness::parse(&vkey).unwrap()]).unwrap();
    assert!(fresh.add_checkpoint(&shorter.signed(), &shorter.log).is_err());
    // A refusal is logged: an unknown origin's monitor path.
    let unknown = reqwest::blocking::get(format!("{url}/no-such-origin/checkpoint")).unwrap();
    assert_eq!(unknown.status().as_u16(), 404);
    let status = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "a SIGTERM is a clean stop: {exit:?}");
    let mut log = String::new();
    child.stderr.take().unwrap().read_to_string(&mut log).unwrap();
    assert!(log.contains("refused") && log.contains("404"), "a refusal is logged: {log}");
    assert!(!log.contains("status=409"), "a 409 is the normal exchange, logged at debug only: {log}");
    assert!(!log.contains('\u{1b}'), "no colour codes in a log that is not a terminal: {log:?}");
    // A configuration that lists the witness's own key as a log key is refused.
    let own = config.with_file_name("own.toml");
    std::fs::write(
        &own,
        std::fs::read_to_string(&config).unwrap().replace(&plane.key.verifier_key().to_string(), &vkey),
    )
    .unwrap();
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness"))
        .args(["serve", "--config"])
        .arg(&own)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
}

/// The binary run with `args`, its exit code and standard error.
fn witness_binary(args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane-witness")).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `agentplane-witness serve --state STATE --key-file KEY_FILE --log LOG`:
/// its exit code and stderr.
fn served(state: &std::path::Path, key_file: &std::ffi::OsStr, log: &str) -> (Option<i32>, String) {
    witness_binary(&[
        "serve".as_ref(),
        "--state".as_ref(),
        state.as_os_str(),
        "--key-file".as_ref(),
        key_file,
        "--log".as_ref(),
        log.as_ref(),
    ])
}

/// A key made by the binary's `keygen` in `dir`: its file, its text
/// (`PRIVATE+KEY+...`) and the base64 of its seed, which no error may show.
fn made_key(dir: &std::path::Path) -> (std::path::PathBuf, String, String) {
    let key_file = dir.join("w.key");
    let (code, _) = witness_binary(&[
        "keygen".as_ref(),
        "--name".as_ref(),
        "w.test/x".as_ref(),
        "--out".as_ref(),
        key_file.as_os_str(),
    ]);
    assert_eq!(code, Some(0));
    let skey = std::fs::read_to_string(&key_file).unwrap().trim().to_owned();
    let seed = skey.splitn(5, '+').nth(4).unwrap().to_owned();
    (key_file, skey, seed)
}

/// A private key given by mistake where a log's public key is wanted
/// (`--log ORIGIN=VKEY`, or the whole `--log` argument) is refused without
/// being echoed: no secret ever reaches standard error or a log.
#[test]
fn a_private_key_given_as_a_log_key_is_refused_and_never_echoed() {
    let dir = tempfile::tempdir().unwrap();
    let (key_file, skey, seed) = made_key(dir.path());
    assert!(seed.len() > 40, "the base64 of the seed: {skey}");
    let state = dir.path().join("w.redb");
    // The last: base64 padding, split at its `=`, would make the key the "origin".
    for spec in [format!("{ORIGIN}={skey}"), skey.clone(), format!("{skey}=")] {
        let (code, stderr) = served(&state, key_file.as_os_str(), &spec);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("this is a private key"), "the refusal says what was given: {stderr}");
        assert!(!stderr.contains(&seed[..16]), "the private key is echoed: {stderr}");
    }
    // In the configuration file too.
    let config = dir.path().join("witness.toml");
    std::fs::write(&config, format!("[[log]]\norigin = \"{ORIGIN}\"\nkeys = [\"{skey}\"]\n")).unwrap();
    let (code, stderr) = witness_binary(&[
        "serve".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
        "--state".as_ref(),
        state.as_os_str(),
        "--key-file".as_ref(),
        key_file.as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!stderr.contains(&seed[..16]), "the private key is echoed: {stderr}");
}

/// R-OPS-1 (01c5c16's case, on the witness): a private key pasted without
/// its `PRIVATE+KEY+` prefix has a verifier key's shape (`name+id+base64`,
/// no `=` in a cosignature key's base64), so `--log` given it alone, with
/// no `ORIGIN=`, was refused as "expected ORIGIN=VKEY" quoting it whole,
/// seed and all. The argument is not shown.
#[test]
fn r_ops_1_a_log_argument_without_its_origin_is_never_echoed() {
    let dir = tempfile::tempdir().unwrap();
    let (key_file, skey, seed) = made_key(dir.path());
    let unprefixed = skey.strip_prefix("PRIVATE+KEY+").unwrap();
    assert!(!unprefixed.contains('='), "{unprefixed}");
    let state = dir.path().join("w.redb");
    let (code, stderr) = served(&state, key_file.as_os_str(), unprefixed);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("ORIGIN=VKEY"), "the refusal says what --log takes: {stderr}");
    assert!(!stderr.contains(&seed[..16]), "the private key is echoed: {stderr}");
}

/// The configuration file is read to a bound: a file past it (or `/dev/zero`)
/// is refused as not a configuration, never read whole into memory.
#[test]
fn a_configuration_file_past_its_bound_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("witness.toml");
    // Valid TOML (comment lines), so without a bound it reads as empty.
    std::fs::write(&config, "#\n".repeat(1 << 20)).unwrap();
    let (code, stderr) = witness_binary(&["serve".as_ref(), "--config".as_ref(), config.as_os_str()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("larger than"), "the refusal names the bound: {stderr}");
    assert!(stderr.len() < 1_000, "the file is not echoed back: {} bytes", stderr.len());
    let (code, stderr) = witness_binary(&["serve".as_ref(), "--config".as_ref(), "/dev/zero".as_ref()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("larger than"), "{stderr}");
    std::fs::write(&config, b"listen = \"\xff\"\n").unwrap();
    let (code, stderr) = witness_binary(&["serve".as_ref(), "--config".as_ref(), config.as_os_str()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("not UTF-8"), "{stderr}");
}

/// R-OPS-1, attack on the operator's secrecy: the witness's private key
/// pasted where a key file's path belongs (`--key-file`, `key_file` in the
/// configuration, quoted or not) or as a stray argument. The file error
/// ("reading PRIVATE+KEY+...: No such file"), the TOML parser's error (which
/// quotes the offending line) and the argument parser's error each printed
/// the key to standard error, and so to the service's log. Every one is
/// refused with exit 2 and the key is not shown.
#[test]
fn r_ops_1_a_private_key_given_for_a_key_file_or_in_a_configuration_is_never_echoed() {
    let dir = tempfile::tempdir().unwrap();
    let (_, skey, seed) = made_key(dir.path());
    let state = dir.path().join("w.redb");
    let plane = Plane::new(1);
    let log = format!("{ORIGIN}={}", plane.key.verifier_key());
    let stray = ["serve".as_ref(), skey.as_ref()];
    let config = dir.path().join("witness.toml");
    let unquoted = format!("state = {state:?}\nkey_file = {skey}\n");
    let quoted = format!("state = {state:?}\nkey_file = \"{skey}\"\n");
    let mut runs: Vec<(String, (Option<i32>, String))> = vec![
        ("--key-file".into(), served(&state, std::ffi::OsStr::new(&skey), &log)),
        ("a stray argument".into(), witness_binary(&stray)),
    ];
    for (what, text) in [("unquoted key_file", unquoted), ("quoted key_file", quoted)] {
        std::fs::write(&config, text).unwrap();
        let args = ["serve".as_ref(), "--config".as_ref(), config.as_os_str(), "--log".as_ref(), log.as_ref()];
        runs.push((what.into(), witness_binary(&args)));
    }
    for (what, (code, stderr)) in runs {
        assert_eq!(code, Some(2), "{what}: {stderr}");
        assert!(!stderr.contains(&seed[..16]), "{what}: the private key is echoed: {stderr}");
        assert!(stderr.contains("private key"), "{what}: the refusal says what was given: {stderr}");
    }
}

/// R-OPS-1, attack on the operator's secrecy (review 53): a configuration
/// holding a secret without the `PRIVATE+KEY+` prefix, such as the base64
/// of the witness's seed pasted for `key_file` unquoted, or a password
/// under a key the witness does not know. The TOML parser's error quotes
/// the line it stops at, and serde's quotes the value it refuses, so each
/// printed the secret to standard error (the service's log). The refusal
/// names the line, its column and the field, never the text.
#[test]
fn r_ops_1_a_configuration_error_names_the_line_and_never_quotes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, seed) = made_key(dir.path());
    let config = dir.path().join("witness.toml");
    let secret = "correct-horse-battery-staple";
    for (text, line, field) in [
        (format!("state = \"w.redb\"\nkey_file = {seed}\n"), 2, "key_file"),
        (format!("state = \"w.redb\"\n\nadmin_password = \"{secret}\"\n"), 3, "admin_password"),
        (format!("listen = [\"{secret}\"]\n"), 1, "listen"),
        (format!("[limits]\nmax_per_peer = \"{secret}\"\n"), 2, "max_per_peer"),
    ] {
        std::fs::write(&config, &text).unwrap();
        let (code, stderr) = witness_binary(&["serve".as_ref(), "--config".as_ref(), config.as_os_str()]);
        assert_eq!(code, Some(2), "{text}: {stderr}");
        assert!(!stderr.contains(&seed[..16]) && !stderr.contains(secret), "{text}: a secret is echoed: {stderr}");
        assert!(stderr.contains(&format!("line {line}")), "{text}: the line is named: {stderr}");
        assert!(stderr.contains(field), "{text}: the field is named: {stderr}");
    }
}

/// R-OPS-1 (review 53's refusal, its numbers): serde's message quotes a
/// number it refuses between backticks (`invalid type: integer `...``), which
/// the refusal's masking of quoted values let through: a numeric secret (a
/// PIN, a token of digits) pasted under a known field was printed.
#[test]
fn r_ops_1_a_configuration_error_never_quotes_a_number_it_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("witness.toml");
    for (text, line, field) in [
        ("listen = 8675309123\n", 1, "listen"),
        ("state = \"w.redb\"\n[limits]\nmax_per_peer = -8675309123\n", 3, "max_per_peer"),
        ("[limits]\nheader_timeout = 8675309123.5\n", 2, "header_timeout"),
        ("state = 8675309123\n", 1, "state"),
    ] {
        std::fs::write(&config, text).unwrap();
        let (code, stderr) = witness_binary(&["serve".as_ref(), "--config".as_ref(), config.as_os_str()]);
        assert_eq!(code, Some(2), "{text}: {stderr}");
        assert!(!stderr.contains("8675309"), "{text}: a value is echoed: {stderr}");
        assert!(stderr.contains(&format!("line {line}")) && stderr.contains(field), "{text}: {stderr}");
    }
}

/// Attack on memory (review 53): request headers of a few hundred
/// kilobytes. Only hyper's default read buffer bounded them (about 400 KiB),
/// so each of the `max_per_peer` connections of every address could hold
/// that much while it trickled its header within the header timeout. A
/// witness request's line and headers are a few hundred bytes: past
/// `MAX_HEADER_BYTES` (16 KiB) the answer is 431 and the connection closed.
#[test]
fn request_headers_past_their_bound_are_refused_431() {
    let plane = Plane::new(1);
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = start(&plane, &dir, ServerLimits::default());
    assert_eq!(witness_server::MAX_HEADER_BYTES, 16 * 1024);
    let mut stream = connect(&server);
    let padding = "a".repeat(witness_server::MAX_HEADER_BYTES + 1);
    let request =
        format!("GET /nothing HTTP/1.1\r\nHost: witness\r\nConnection: close\r\nX-Padding: {padding}\r\n\r\n");
    // The server may answer and close before it has read everything.
    let _ = stream.write_all(request.as_bytes());
    let answer = answer_of(stream);
    assert!(answer.starts_with("HTTP/1.1 431"), "{}", answer.lines().next().unwrap_or_default());
    // Within the bound, answered as before.
    let mut stream = connect(&server);
    let padding = "a".repeat(8 * 1024);
    let request =
        format!("GET /nothing HTTP/1.1\r\nHost: witness\r\nConnection: close\r\nX-Padding: {padding}\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let answer = answer_of(stream);
    assert!(answer.starts_with("HTTP/1.1 404"), "{}", answer.lines().next().unwrap_or_default());
}

/// A configuration error caught at start (review 53): a log's origin that
/// no checkpoint can carry (empty, two lines, a control character, past
/// `Origin::MAX_LEN`), or one origin listed twice. The witness started and
/// answered every checkpoint of that log 404 (or used the first entry's
/// keys and ignored the second's), as if all were well. Refused, naming
/// the origin.
#[test]
fn a_log_origin_no_checkpoint_can_carry_or_listed_twice_is_refused_at_start() {
    let plane = Plane::new(1);
    let config = |logs: Vec<LogConfig>| WitnessConfig {
        extra_cosigners: Vec::new(),
        cosigner: cosigner(7, "witness.test/w1"),
        logs,
        clock: Arc::new(FixedClock(AtomicU64::new(1_700_000_000))),
    };
    let with_origin = |origin: &str| LogConfig { origin: origin.to_owned(), ..plane.log_config() };
    for logs in [
        vec![with_origin("")],
        vec![with_origin("example.com/log\nsecond line")],
        vec![with_origin("example.com/\u{7f}log")],
        vec![with_origin(&"o".repeat(witness::Origin::MAX_LEN + 1))],
        vec![plane.log_config(), plane.log_config()],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let origin = logs[0].origin.clone();
        match WitnessServer::start(config(logs), &dir.path().join("w.redb"), "127.0.0.1:0") {
            Ok(_) => panic!("started watching {origin:?}"),
            Err(err) => {
                assert!(matches!(err, witness_server::ServerError::Config(_)), "{origin:?}: {err}");
                let shown = format!("{:?}", origin.chars().take(40).collect::<String>());
                assert!(err.to_string().contains(shown.trim_end_matches('"')), "{origin:?}: names it: {err}");
            }
        }
    }
}
