//! A witness URL may carry a password (a witness behind a proxy with basic
//! authentication): the requests carry it, and no error, log line, report or
//! `Debug` output ever shows it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;

use base64::Engine as _;
use witness::{
    ALG_COSIGNATURE_V1, Cosigner, HttpWitness, SignerKey, TrustedWitness, Witness, WitnessReader, client::shown_url,
};

const SECRET: &str = "s3cret-pass";

fn trusted() -> Vec<TrustedWitness> {
    let cosigner = Cosigner::new(SignerKey::from_seed("w.test/witness", ALG_COSIGNATURE_V1, [3; 32]).unwrap()).unwrap();
    vec![TrustedWitness::new(cosigner.verifier_key()).unwrap()]
}

/// A server that answers one request with a 503 and hands back the request's header lines.
fn one_answer_server() -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let served = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            headers.push(line.trim().to_owned());
        }
        let mut stream = stream;
        stream
            .write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .unwrap();
        headers
    });
    (format!("http://agent:{SECRET}@{address}"), served)
}

#[test]
fn a_witness_password_is_sent_and_never_shown() {
    let (url, served) = one_answer_server();
    let reader = WitnessReader::with_timeout(&url, trusted(), Duration::from_secs(10)).unwrap();
    let err = reader.latest("shown.test/log").expect_err("the server answers 503");
    let headers = served.join().unwrap();
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("agent:{SECRET}"));
    assert!(
        headers.iter().any(|line| line.eq_ignore_ascii_case(&format!("authorization: Basic {basic}"))),
        "the request carries the credentials: {headers:?}"
    );
    for shown in [err.to_string(), format!("{err:?}"), reader.endpoint().to_owned(), format!("{reader:?}")] {
        assert!(!shown.contains(SECRET), "{shown}");
    }
    assert!(reader.endpoint().contains("agent:***@127.0.0.1"), "the witness is still named: {}", reader.endpoint());

    // Unreachable: reqwest's own error names the URL it asked for.
    let unreachable = format!("http://agent:{SECRET}@127.0.0.1:9");
    let client = HttpWitness::with_timeout(&unreachable, trusted(), Duration::from_secs(5)).unwrap();
    assert!(!client.endpoint().contains(SECRET) && !format!("{client:?}").contains(SECRET));
    let reader = WitnessReader::with_timeout(&unreachable, trusted(), Duration::from_secs(5)).unwrap();
    let err = reader.latest("shown.test/log").expect_err("nothing listens on port 9");
    assert!(!err.to_string().contains(SECRET) && !format!("{err:?}").contains(SECRET), "{err}");

    // A URL refused as malformed is quoted without its password either.
    let refused = WitnessReader::new(&format!("ftp://agent:{SECRET}@host/x"), trusted()).expect_err("not http");
    assert!(!refused.to_string().contains(SECRET), "{refused}");
}

#[test]
fn shown_url_hides_only_a_password() {
    assert_eq!(shown_url("https://w.example/prefix/"), "https://w.example/prefix");
    assert_eq!(shown_url("https://agent@w.example/p"), "https://agent@w.example/p", "a user alone is no secret");
    assert_eq!(shown_url(&format!("https://agent:{SECRET}@w.example/p")), "https://agent:***@w.example/p");
    // Not a URL (a space in the host): everything before the `@` goes.
    assert_eq!(shown_url(&format!("https://agent:{SECRET}@w example/p")), "https://***@w example/p");
}
