//! One of the witnesses a plane is configured with is run by someone hostile
//! (or someone sits on the network to it): it holds its own witness key and
//! nothing else. End to end on the `agentplane` binary, a redb file, an
//! honest witness server and the hostile witness over real HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::io::{Read as _, Write as _};
use std::path::Path;

use serde_json::Value;

/// What the hostile witness answers: the status line, the content type and
/// the body, for a submission (POST) and for a read of its monitor
/// endpoint (GET).
#[derive(Clone)]
struct Answers {
    post: (&'static str, &'static str, Vec<u8>),
    get: (&'static str, &'static str, Vec<u8>),
}

/// A witness of the attacker's own over real TCP, answering `answers`; its URL.
fn hostile(answers: Answers) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Some(head) = read_request(&mut stream) else { continue };
            let (status, content_type, body) = if head.starts_with("POST") { &answers.post } else { &answers.get };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&[response.as_bytes(), body].concat());
        }
    });
    url
}

/// Reads a request's head and its body (by its content length); the head.
fn read_request(stream: &mut std::net::TcpStream) -> Option<String> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(buf.get(..n)?);
    };
    let head = String::from_utf8_lossy(bytes.get(..end)?).into_owned();
    let length = head
        .lines()
        .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length:").map(|n| n.trim().to_owned()))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    while bytes.len() < end + length {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(buf.get(..n)?);
    }
    Some(head)
}

/// A plane in `dir` with tenant `shop`, an honest witness server and the
/// hostile witness at `hostile_url` (with a key of its own) configured,
/// quorum 1 of the 2.
fn plane_with_a_hostile_witness(dir: &Path, hostile_url: &str) -> Witness {
    let honest = witnessed_plane(dir);
    let hostile_key = witness::SignerKey::from_seed("hostile.test/w1", witness::ALG_COSIGNATURE_V1, [66; 32]).unwrap();
    let mut config = std::fs::read_to_string(dir.join("agentplane.toml")).unwrap();
    config.push_str(&format!("\n[[witness]]\nurl = \"{hostile_url}\"\nkey = \"{}\"\n", hostile_key.verifier_key()));
    std::fs::write(dir.join("agentplane.toml"), config).unwrap();
    honest
}

fn sweep(dir: &Path) -> (Option<i32>, Value, String) {
    let out = agentplane(dir, &["sweep", "--json"]);
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), report, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The hostile witness answers every submission with a 409 naming a tree far
/// larger than the log (the client calls it a rollback, an integrity
/// refusal), or with a 422 (an inconsistency), none of it proven: no note the
/// plane signed backs it. The honest witness cosigned, and the quorum (1)
/// was met. The round is still reported as an integrity refusal (exit 1,
/// R-WIT-1: reported even when met), but the honest witness's cosignature is
/// kept: before, the round was thrown away whole, so one witness out of the
/// quorum kept the plane from ever recording a cosigned checkpoint
/// (`checkpoint --cosigned` said no quorum had cosigned, forever).
#[test]
fn r_wit_1_an_unproven_integrity_refusal_by_one_witness_never_discards_the_quorum_s_cosignatures() {
    let size_body = b"1000000\n".to_vec();
    let not_found = ("404 Not Found", "text/plain", b"404 page not found\n".to_vec());
    for post in [
        ("409 Conflict", witness::protocol::SIZE_CONTENT_TYPE, size_body),
        ("422 Unprocessable Entity", "text/plain", b"proof does not verify\n".to_vec()),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let plane = dir.path();
        let url = hostile(Answers { post: post.clone(), get: not_found.clone() });
        let _honest = plane_with_a_hostile_witness(plane, &url);
        ok(plane, &["demo"]);
        let (code, report, stderr) = sweep(plane);
        assert_eq!(code, Some(1), "{report} {stderr}");
        assert_eq!(report["outcome"], "integrity", "{} answers: reported, met or not: {report}", post.0);
        assert_eq!(report["cosigned"], 1, "{report}");
        let cosigned = json(plane, &["checkpoint", "--cosigned", "--json"]);
        assert_eq!(cosigned["size"], report["size"], "{} answers: the quorum's round was kept: {cosigned}", post.0);
        // The kept round is what the sweep, the audit and the export hold to.
        ok(plane, &["verify"]);
    }
}
