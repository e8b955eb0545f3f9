//! The command line as its users expect (issue 24, R-UX-2): every command's
//! JSON parses with the fields the CLI README documents, hashes are hex in
//! all of it, failures in `--json` mode are JSON objects with a code and a
//! class, the exit code follows the class, and each command's help lists the
//! flags it uses, with an example.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod support;
use support::*;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A plane the demo made in a folder of its own; `path()` is that folder.
struct Demo {
    _root: tempfile::TempDir,
    plane: PathBuf,
    log_key: String,
}

impl Demo {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        ok(root.path(), &["demo"]);
        let plane = root.path().join("agentplane-demo");
        let log_key = ok(&plane, &["keys", "--print", "log-key"]).trim().to_owned();
        Self { _root: root, plane, log_key }
    }

    fn path(&self) -> &Path {
        &self.plane
    }

    fn run(&self, outcome: &str) -> String {
        ok(self.path(), &["runs", "--outcome", outcome, "--ids"]).lines().next().unwrap().to_owned()
    }
}

/// A lowercase hex hash of 32 bytes.
fn assert_hex(value: &Value, what: &str) {
    let text = value.as_str().unwrap_or_else(|| panic!("{what}: not a string: {value}"));
    assert!(
        text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{what} is not lowercase hex: {text}"
    );
}

/// Every field the README lists is there, and no other.
fn assert_fields(value: &Value, fields: &[&str], what: &str) {
    let object = value.as_object().unwrap_or_else(|| panic!("{what}: not an object: {value}"));
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut expected = fields.to_vec();
    expected.sort_unstable();
    assert_eq!(keys, expected, "{what}: {value}");
}

/// R-UX-2: the JSON of every reading command parses as one document with
/// the documented fields, and every hash in it is lowercase hex (checkpoint
/// and prove included, which printed base64 before).
#[test]
fn r_ux_2_each_command_s_json_has_its_documented_schema_and_hex_hashes() {
    let demo = Demo::new();
    let dir = demo.path();
    let sealed = demo.run("succeeded");
    let open = demo.run("failed");

    let runs = json(dir, &["runs", "--json"]);
    for row in runs.as_array().unwrap() {
        assert_fields(
            row,
            &["outcome", "position", "records", "run", "sealed", "tokens", "unsigned", "untrusted", "verified"],
            "runs row",
        );
    }

    let shown = json(dir, &["show", &sealed, "--json"]);
    assert_fields(&shown, &["forked_from", "outcome", "records", "run", "signatures"], "show");
    for record in shown["records"].as_array().unwrap() {
        assert_fields(
            record,
            &["at", "effect_key", "hash", "kind", "prev_hash", "seq", "signature", "signed_by"],
            "show record",
        );
        assert_hex(&record["hash"], "show hash");
        assert_hex(&record["prev_hash"], "show prev_hash");
    }

    let keys = json(dir, &["keys", "--json"]);
    assert_fields(&keys, &["log_key", "origin", "record_key", "tenant"], "keys");

    let checkpoint = json(dir, &["checkpoint", "--json"]);
    assert_fields(&checkpoint, &["note", "origin", "root", "size"], "checkpoint");
    assert_hex(&checkpoint["root"], "checkpoint root");

    let inclusion = json(dir, &["prove", &sealed, "--json"]);
    assert_fields(
        &inclusion,
        &["from_walk_with_holes", "index", "leaf", "leaf_hash", "proof", "root", "run", "size"],
        "prove",
    );
    assert_hex(&inclusion["root"], "prove root");
    assert_hex(&inclusion["leaf_hash"], "prove leaf_hash");
    inclusion["proof"].as_array().unwrap().iter().for_each(|h| assert_hex(h, "prove proof"));
    assert_eq!(inclusion["root"], checkpoint["root"], "the proof is against the checkpoint just signed");

    let head = json(dir, &["prove", &open, "--json"]);
    assert_fields(
        &head,
        &[
            "entries",
            "entry_index",
            "entry_proof",
            "from_walk_with_holes",
            "head_hash",
            "head_seq",
            "index",
            "kind",
            "leaf",
            "leaf_hash",
            "proof",
            "root",
            "run",
            "size",
        ],
        "prove of an open run",
    );
    for field in ["root", "leaf_hash", "head_hash"] {
        assert_hex(&head[field], field);
    }
    head["entry_proof"].as_array().unwrap().iter().for_each(|h| assert_hex(h, "entry_proof"));

    let consistency = json(dir, &["prove", "--consistency", "3", "--json"]);
    assert_fields(
        &consistency,
        &["from_walk_with_holes", "old_root", "old_size", "proof", "root", "size"],
        "prove --consistency",
    );
    assert_hex(&consistency["old_root"], "old_root");
    assert_hex(&consistency["root"], "root");
    // The text form names the roots it proves between.
    let text = ok(dir, &["prove", "--consistency", "3"]);
    assert!(
        text.contains(consistency["old_root"].as_str().unwrap())
            && text.contains(consistency["root"].as_str().unwrap()),
        "{text}"
    );

    let cost = json(dir, &["cost", "--json"]);
    assert_fields(
        &cost,
        &[
            "cost_micros",
            "effects",
            "runs",
            "scope",
            "signatures",
            "since",
            "steps",
            "tokens",
            "unsigned",
            "until",
            "untrusted",
            "wall_millis",
        ],
        "cost",
    );

    let verify = json(dir, &["verify", "--json"]);
    assert_eq!(verify["schema"], "agentplane.audit/v1");
    assert_hex(&verify["log"]["root"], "verify log root");

    let diff = json(dir, &["diff", &sealed, &sealed, "--json"]);
    assert_fields(&diff, &["a", "b", "cost", "first_difference", "rows"], "diff");

    ok(dir, &["export", &sealed, "-o", "run.export"]);
    let valid = json(dir, &["verify-export", "run.export", "--log-key", &demo.log_key, "--json"]);
    assert_fields(
        &valid,
        &[
            "cosignatures",
            "cosigned_size",
            "covers",
            "index",
            "origin",
            "outcome",
            "record_signatures",
            "records",
            "run",
            "size",
            "unsigned",
            "untrusted",
            "valid",
        ],
        "verify-export",
    );
}

/// Every failure in `--json` mode is one JSON object on stdout with `code`,
/// `class` and `message` (`verify-export` adds `valid: false`), and the exit
/// code is the class's: 1 findings, 2 usage or I/O, 3 build skew (R-VER-4).
#[test]
fn r_ux_2_verify_export_failures_are_json_with_a_code_and_a_class() {
    let demo = Demo::new();
    let dir = demo.path();
    let sealed = demo.run("succeeded");
    ok(dir, &["export", &sealed, "-o", "run.export"]);
    let text = std::fs::read_to_string(dir.join("run.export")).unwrap();
    let key = demo.log_key.as_str();

    let failure = |file: &str, code: i32| {
        let answer = json_exit(dir, &["verify-export", file, "--log-key", key, "--json"], code);
        assert_fields(&answer, &["class", "code", "message", "valid"], file);
        assert_eq!(answer["valid"], false, "{answer}");
        answer
    };

    let missing = failure("missing.export", 2);
    assert_eq!((missing["class"].as_str(), missing["code"].as_str()), (Some("io"), Some("io")), "{missing}");

    std::fs::write(dir.join("binary.export"), [0xff, 0xfe, 0x00, 0x80]).unwrap();
    let binary = failure("binary.export", 1);
    assert_eq!(binary["class"], "findings", "{binary}");

    // The header names a format no build has written yet.
    let (header, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(header).unwrap();
    assert!(header["format"].as_str().unwrap().starts_with("agentplane-export/v"), "{header}");
    header["format"] = Value::from("agentplane-export/v9");
    let newer = format!("{header}\n{rest}");
    std::fs::write(dir.join("v9.export"), newer).unwrap();
    let skew = failure("v9.export", 3);
    assert_eq!(skew["class"], "build_skew", "{skew}");
    assert_eq!(skew["code"], "export_format_unreadable", "{skew}");
    assert!(skew["message"].as_str().unwrap().contains("agentplane-export/v9"), "{skew}");
    // Without --json: the same exit, the message on stderr.
    let stderr = fails(dir, &["verify-export", "v9.export", "--log-key", key], 3);
    assert!(stderr.contains("newer build"), "{stderr}");

    let cut = text.lines().filter(|line| !line.contains("\"type\":\"seal\"")).collect::<Vec<_>>().join("\n");
    std::fs::write(dir.join("cut.export"), cut).unwrap();
    let cut = failure("cut.export", 1);
    assert_eq!(cut["class"], "findings", "{cut}");
    assert!(cut["code"].as_str().unwrap().starts_with("export_"), "{cut}");

    let other = tempfile::tempdir().unwrap();
    let wrong = ok(other.path(), &["keygen"]).trim().to_owned();
    let answer = json_exit(dir, &["verify-export", "run.export", "--log-key", &wrong, "--json"], 1);
    assert_eq!(answer["code"], "export_checkpoint", "{answer}");
}

/// A failure of any other command in `--json` mode is a JSON object too;
/// a command that printed its report first (an audit with findings) does
/// not print a second object.
#[test]
fn r_ux_2_json_failures_of_every_command_are_one_object_on_stdout() {
    let demo = Demo::new();
    let dir = demo.path();
    for args in [
        &["show", "run-not-there", "--json"][..],
        &["prove", "run-not-there", "--json"][..],
        &["cost", "run-not-there", "--json"][..],
    ] {
        let answer = json_exit(dir, args, 2);
        assert_fields(&answer, &["class", "code", "message"], &format!("{args:?}"));
        assert_eq!(answer["class"], "usage", "{args:?}: {answer}");
    }
    let missing = tempfile::tempdir().unwrap();
    let answer = json_exit(missing.path(), &["--store", "nothing.redb", "--origin", "a.test/b", "runs", "--json"], 2);
    assert_eq!(answer["class"], "usage", "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("nothing.redb"), "{answer}");
}

/// The keys of every object in a pretty-printed JSON document, in the order
/// printed, checked to be in alphabetical order.
fn assert_alphabetical(text: &str, what: &str) {
    let mut open: Vec<Vec<String>> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix('"')
            && let Some((key, _)) = rest.split_once("\": ")
            && let Some(keys) = open.last_mut()
        {
            keys.push(key.to_owned());
        }
        if trimmed.ends_with('{') {
            open.push(Vec::new());
        } else if trimmed.starts_with('}') {
            let keys = open.pop().unwrap();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted, "{what}: fields in alphabetical order, as the CLI README says:\n{text}");
        }
    }
}

/// R-UX-2: "fields come in alphabetical order" (the CLI README) in the
/// JSON of every command; `verify-export --json` printed `covers` before
/// `cosigned_size`.
#[test]
fn r_ux_2_every_command_s_json_fields_come_in_alphabetical_order() {
    let demo = Demo::new();
    let dir = demo.path();
    let key = demo.log_key.as_str();
    let sealed = demo.run("succeeded");
    let open = demo.run("failed");
    std::fs::write(dir.join("saved.note"), ok(dir, &["checkpoint"])).unwrap();
    std::fs::write(dir.join("proof.json"), ok(dir, &["prove", &sealed, "--json"])).unwrap();
    ok(dir, &["export", &sealed, "-o", "run.export"]);
    let record_key = ok(dir, &["keys", "--print", "record-key"]).trim().to_owned();
    let commands: Vec<Vec<&str>> = vec![
        vec!["runs", "--json"],
        vec!["show", &sealed, "--json"],
        vec!["keys", "--json"],
        vec!["checkpoint", "--json"],
        vec!["prove", &sealed, "--json"],
        vec!["prove", &open, "--json"],
        vec!["prove", "--consistency", "2", "--json"],
        vec!["verify-proof", "proof.json", "--checkpoint", "saved.note", "--log-key", key, "--json"],
        vec!["cost", "--json"],
        vec!["diff", &sealed, &open, "--json"],
        vec!["verify", "--json"],
        vec!["audit", "--log-key", key, "--checkpoint", "saved.note", "--json"],
        vec!["verify-export", "run.export", "--log-key", key, "--record-key", &record_key, "--json"],
        vec!["verify-export", "missing.export", "--log-key", key, "--json"],
    ];
    for args in commands {
        let out = agentplane(dir, &args);
        assert_alphabetical(&String::from_utf8(out.stdout).unwrap(), &args.join(" "));
    }
}

/// R-UX-2: `sweep --json` is a stream in JSON Lines (`sweep --every 5m
/// --json >> sweep.jsonl`), so its failure object is one compact line of
/// it too; it was pretty-printed over five lines, which a reader of the
/// stream, line by line, cannot parse.
#[test]
fn r_ux_2_a_sweep_json_failure_is_one_line_of_its_stream() {
    let demo = Demo::new();
    let out = agentplane(demo.path(), &["sweep", "--json"]);
    assert_eq!(out.status.code(), Some(2), "a plane with no witness: {}", text(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stdout}");
    let answer: Value = serde_json::from_str(lines[0]).unwrap();
    assert_fields(&answer, &["class", "code", "message"], "sweep --json failure");
    assert_eq!(answer["class"], "usage", "{answer}");
}

/// The README's exit codes by class: a usage mistake is 2, never a pile of
/// findings; an export of a format this build does not read is 3.
#[test]
fn r_ux_2_require_signature_without_a_record_key_is_a_usage_error() {
    let demo = Demo::new();
    let dir = demo.path();
    let origin = ok(dir, &["keys", "--print", "origin"]).trim().to_owned();
    let stderr = fails(dir, &["audit", "--origin", &origin, "--log-key", &demo.log_key, "--require-signature"], 2);
    assert!(stderr.contains("--record-key"), "{stderr}");
    let with_key = ok(dir, &["keys", "--print", "record-key"]).trim().to_owned();
    ok(dir, &["audit", "--log-key", &demo.log_key, "--record-key", &with_key, "--require-signature"]);

    ok(dir, &["export", &demo.run("succeeded"), "-o", "run.export"]);
    let stderr = fails(dir, &["verify-export", "run.export", "--log-key", &demo.log_key, "--require-signature"], 2);
    assert!(stderr.contains("--record-key"), "{stderr}");
}

fn help(command: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &[command, "--help"])
}

fn lists(help: &str, flag: &str) -> bool {
    help.lines().any(|line| line.trim_start().starts_with(&format!("{flag} ")) || line.contains(&format!(" {flag} <")))
}

/// Each command's help lists only the plane flags it uses and has an
/// example; a plane flag given to a command that does not use it is a usage
/// error, never ignored; the same flag works before or after the command.
#[test]
fn r_ux_2_each_help_lists_only_the_flags_its_command_uses() {
    let plane = ["--config", "--store", "--keys", "--tenant", "--origin"];
    let takes: &[(&str, &[&str])] = &[
        ("init", &["--store", "--keys"]),
        ("demo", &["--config", "--store", "--keys", "--tenant", "--origin"]),
        ("keygen", &["--config", "--store", "--keys", "--origin"]),
        ("keys", &["--config", "--store", "--keys", "--tenant", "--origin"]),
        ("sweep", &["--config", "--store", "--keys", "--tenant"]),
        ("runs", &["--config", "--store", "--keys", "--tenant", "--origin"]),
        ("show", &["--config", "--store", "--keys", "--tenant", "--origin"]),
        ("verify", &["--config", "--store", "--keys", "--tenant", "--origin"]),
        ("audit", &["--config", "--store", "--tenant", "--origin"]),
        ("checkpoint", &["--config", "--store", "--keys", "--tenant", "--origin"]),
        ("prove", &["--config", "--store", "--keys", "--tenant", "--origin"]),
        ("cost", &["--config", "--store", "--keys", "--tenant", "--origin"]),
        ("diff", &["--config", "--store", "--keys", "--tenant", "--origin"]),
        ("fork", &["--config", "--store", "--keys", "--tenant", "--origin"]),
        ("resume", &["--config", "--store", "--keys", "--tenant", "--origin"]),
        ("export", &["--config", "--store", "--keys", "--tenant", "--origin"]),
        ("verify-export", &[]),
        ("verify-proof", &[]),
        ("repair", &["--config", "--store"]),
        ("compact", &["--config", "--store"]),
        ("migrate", &["--config", "--store"]),
        ("console", &["--config", "--store", "--keys", "--tenant", "--origin"]),
    ];
    for (command, flags) in takes {
        let text = help(command);
        for flag in plane {
            assert_eq!(lists(&text, flag), flags.contains(&flag), "`{command} --help` and {flag}:\n{text}");
        }
        assert!(text.contains("Example"), "`{command} --help` has an example:\n{text}");
        if flags.contains(&"--store") {
            assert!(text.contains("postgres://"), "`{command} --help` says the store may be a PostgreSQL URL");
        }
    }
    let top = {
        let dir = tempfile::tempdir().unwrap();
        ok(dir.path(), &["--help"])
    };
    assert!(top.contains("PostgreSQL") && top.contains("postgres://"), "{top}");
    assert!(top.contains("Example"), "{top}");
    assert!(!lists(&help("init"), "--tenant") && lists(&help("init"), "--tenant-name"));
    for value in ["succeeded", "cancelled", "abandoned", "failed", "exhausted", "withheld", "quarantined"] {
        assert!(help("runs").contains(value), "runs --help lists the outcome {value}");
    }

    let dir = tempfile::tempdir().unwrap();
    let stderr = fails(dir.path(), &["--origin", "foo", "verify-export", "x.export", "--log-key", "k"], 2);
    assert!(stderr.contains("--origin") && stderr.contains("verify-export"), "{stderr}");
    fails(dir.path(), &["verify-export", "x.export", "--origin", "foo", "--log-key", "k"], 2);
    let stderr = fails(dir.path(), &["--keys", "k.key", "audit", "--log-key", "k"], 2);
    assert!(stderr.contains("--keys") && stderr.contains("audit"), "{stderr}");
    fails(dir.path(), &["--tenant", "shop", "init"], 2);
    assert!(!dir.path().join("agentplane.toml").exists(), "a refused command makes nothing");
    fails(dir.path(), &["--tenant", "a", "runs", "--tenant", "b"], 2);

    // Before or after the command: the same answer.
    let demo = Demo::new();
    let origin = ok(demo.path(), &["keys", "--print", "origin"]).trim().to_owned();
    let before = ok(demo.path(), &["--tenant", "default", "--origin", &origin, "runs", "--json"]);
    let after = ok(demo.path(), &["runs", "--json", "--tenant", "default", "--origin", &origin]);
    assert_eq!(before, after);
    // A tenant the configuration does not name is refused (review 72), by its name.
    let refused = json_exit(demo.path(), &["runs", "--tenant", "nobody", "--json"], 2);
    assert!(
        refused["message"].as_str().unwrap().contains("\"nobody\""),
        "a tenant after the command is the tenant read"
    );
}

/// `keygen` makes the key of the origin `init` gives the tenant `default`,
/// so a plane made either way names its log alike.
#[test]
fn keygen_s_default_origin_is_the_one_init_gives_the_default_tenant() {
    let by_keygen = tempfile::tempdir().unwrap();
    let vkey = ok(by_keygen.path(), &["keygen"]).trim().to_owned();
    let by_init = tempfile::tempdir().unwrap();
    ok(by_init.path(), &["init"]);
    let origin = ok(by_init.path(), &["keys", "--print", "origin"]).trim().to_owned();
    assert_eq!(origin, "agentplane.local/plane/default");
    assert!(vkey.starts_with(&format!("{origin}+")), "{vkey}");
}

/// `export -o -` writes to standard output and `verify-export -` reads
/// standard input; an existing file is overwritten only with `--force`.
#[test]
fn export_to_stdout_verify_from_stdin_and_never_overwrite_silently() {
    let demo = Demo::new();
    let dir = demo.path();
    let sealed = demo.run("succeeded");
    let streamed = ok(dir, &["export", &sealed, "-o", "-"]);
    assert!(streamed.starts_with("{\"type\":\"header\""), "{streamed}");
    assert!(!dir.join("-").exists(), "no file named -");

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane"))
        .current_dir(dir)
        .args(["verify-export", "-", "--log-key", &demo.log_key, "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), streamed.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let verified: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verified["run"], sealed.as_str());

    std::fs::write(dir.join("kept.export"), "precious").unwrap();
    let stderr = fails(dir, &["export", &sealed, "-o", "kept.export"], 2);
    assert!(stderr.contains("--force"), "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.join("kept.export")).unwrap(), "precious");
    ok(dir, &["export", &sealed, "-o", "kept.export", "--force"]);
    assert_eq!(std::fs::read_to_string(dir.join("kept.export")).unwrap(), streamed);
}

/// `verify-export /dev/zero` is refused at the format's bound (a line of at
/// most 64 MiB), quickly and without reading on.
#[cfg(unix)]
#[test]
fn verify_export_refuses_an_endless_input_within_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let answer =
        json_exit(dir.path(), &["verify-export", "/dev/zero", "--log-key", "a.test/b+01020304+AAAA", "--json"], 2);
    // The log key is checked first: a bad one is a usage error, nothing read.
    assert_eq!(answer["class"], "usage", "{answer}");
    let key = {
        let keys = tempfile::tempdir().unwrap();
        ok(keys.path(), &["keygen"]).trim().to_owned()
    };
    let answer = json_exit(dir.path(), &["verify-export", "/dev/zero", "--log-key", &key, "--json"], 1);
    assert_eq!(answer["code"], "not_an_export", "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("64 MiB"), "{answer}");
    // Bounded memory: the peak resident size of the refusing process, as
    // GNU time reports it (kilobytes), stays near the 64 MiB line bound.
    let time = std::path::Path::new("/usr/bin/time");
    assert!(time.is_file(), "this test reads peak memory with GNU time (Debian's `time` package)");
    let out = std::process::Command::new(time)
        .args(["-f", "peak-kb %M", env!("CARGO_BIN_EXE_agentplane"), "verify-export", "/dev/zero", "--log-key", &key])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let peak_kb: u64 = stderr
        .lines()
        .find_map(|line| line.strip_prefix("peak-kb "))
        .and_then(|kb| kb.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak from GNU time: {stderr}"));
    assert!(peak_kb < 256 * 1024, "verify-export /dev/zero peaked at {peak_kb} kB, past its bound");
}

/// A key of the wrong kind is named by its kind, a private key is never
/// echoed, and a long argument is not echoed back whole.
#[test]
fn a_key_of_the_wrong_kind_is_named_and_a_secret_never_echoed() {
    let dir = tempfile::tempdir().unwrap();
    let vkey = {
        let keys = tempfile::tempdir().unwrap();
        ok(keys.path(), &["keygen"]).trim().to_owned()
    };
    let secret = "PRIVATE+KEY+agentplane.local/plane/default+0a0b0c0d+AZZZZxyzzyZZZZ";
    let stderr = fails(dir.path(), &["audit", "--log-key", secret], 2);
    assert!(stderr.contains("--log-key: this is a private key") && !stderr.contains("xyzzy"), "{stderr}");
    let stderr = fails(
        dir.path(),
        &["audit", "--log-key", &vkey, "--witness", "http://127.0.0.1:9", "--witness-key", secret],
        2,
    );
    assert!(stderr.contains("--witness-key: this is a private key") && !stderr.contains("xyzzy"), "{stderr}");
    // Without --witness it is refused before it is read, and not echoed either.
    let stderr = fails(dir.path(), &["audit", "--log-key", &vkey, "--witness-key", secret], 2);
    assert!(stderr.contains("--witness") && !stderr.contains("xyzzy"), "{stderr}");
    let stderr = fails(dir.path(), &["verify-export", "x", "--log-key", &vkey, "--record-key", secret], 2);
    assert!(stderr.contains("--record-key: this is a private key") && !stderr.contains("xyzzy"), "{stderr}");
    let bare = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let stderr = fails(dir.path(), &["verify-export", "x", "--log-key", bare], 2);
    assert!(stderr.contains("bare base64 public key"), "{stderr}");
    let stderr = fails(dir.path(), &["verify-export", "x", "--log-key", "spiffe://a/runtime=AAAA"], 2);
    assert!(stderr.contains("record key"), "{stderr}");
    let long = "k".repeat(100_000);
    let stderr = fails(dir.path(), &["verify-export", "x", "--log-key", &long], 2);
    assert!(stderr.len() < 1_000 && !stderr.contains(&"k".repeat(20)), "{}", stderr.len());
    // A key-value connection string where a store path or URL goes is
    // refused as one, and its password is not echoed back (review 37's note).
    let stderr =
        fails(dir.path(), &["--store", "host=db user=u password = hunter2secret", "--origin", "a.test/b", "runs"], 2);
    assert!(stderr.contains("key=value connection string") && !stderr.contains("hunter2secret"), "{stderr}");
    // Nor a password PostgreSQL's URL parser reads past white space (review 38).
    let url = "postgres://u:hunter2 secret@127.0.0.1:1/db?sslmode=bogus";
    let stderr = fails(dir.path(), &["--store", url, "--origin", "a.test/b", "runs"], 2);
    assert!(stderr.contains("u:***@") && !stderr.contains("secret"), "{stderr}");
}

/// R-UX-3 (review 36's note): a key file a reading command cannot read is
/// refused with what a reading command needs it for, not with the signing
/// commands' advice ("This command signs with the plane's private keys"),
/// which `runs` does not do; a signing command keeps its advice.
#[test]
fn an_unreadable_key_file_is_explained_for_the_command_that_reads_it() {
    let demo = Demo::new();
    let dir = demo.path();
    std::fs::create_dir(dir.join("keys-dir")).unwrap();
    let read = fails(dir, &["runs", "--keys", "keys-dir"], 2);
    assert!(read.contains("reading key file keys-dir") && read.contains("A reading command takes"), "{read}");
    assert!(!read.contains("signs with"), "{read}");
    let signing = fails(dir, &["checkpoint", "--keys", "keys-dir"], 2);
    assert!(signing.contains("signs with the plane's private keys"), "{signing}");
}

/// `show` is a timeline that lines up for any number of records: at 120
/// records and more every column starts where its header does (seq 9, 10
/// and 100 alike), and a finished effect says how long it took.
#[test]
fn show_s_timeline_stays_aligned_past_a_hundred_records() {
    use journal_core::{Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, RuntimeBuilder, Store};
    let dir = tempfile::tempdir().unwrap();
    let origin = "cli.test/plane/default";
    let run = {
        let store = std::sync::Arc::new(store_redb::RedbStore::create(&dir.path().join("plane.redb")).unwrap());
        let tenant = journal_core::TenantId::new("default").unwrap();
        let runtime = RuntimeBuilder::new(std::sync::Arc::clone(&store) as std::sync::Arc<dyn Store>)
            .tenant(tenant.clone(), journal_core::Origin::new(origin).unwrap(), None)
            .build()
            .unwrap();
        let request =
            AdmitRequest { idempotency_key: "long".into(), plan: vec!["work".into()], budget: Budget::default() };
        let Admission::New(mut run) = runtime.admit(&tenant, request).unwrap() else { panic!("admitted twice") };
        run.start_step("work").unwrap();
        for n in 0..40 {
            run.effect(&format!("ek:{n}"), "work", || EffectOutput {
                result: EffectResult::Ok { output: "x".repeat(n) },
                charged: Counters { tokens: n as u64, ..Counters::default() },
            })
            .unwrap();
        }
        run.finish_step("work").unwrap();
        let id = run.run().clone();
        (*run).succeed("done").unwrap();
        id.to_string()
    };
    let out = ok(dir.path(), &["show", &run, "--store", "plane.redb", "--origin", origin]);
    let lines: Vec<&str> = out.lines().collect();
    let header = lines.iter().position(|line| line.starts_with("SEQ")).unwrap();
    // Columns in characters (a short hash ends in a one-character `…`).
    let column = |name: &str| lines[header][..lines[header].find(name).unwrap()].chars().count();
    let rows = &lines[header + 1..];
    assert!(rows.len() >= 120, "{} records", rows.len());
    for name in ["AT (UTC)", "KIND", "ABOUT", "RESULT", "HASH", "SIGNED BY"] {
        let at = column(name);
        for row in rows {
            let chars: Vec<char> = row.chars().collect();
            let aligned = chars[at - 2..at] == [' ', ' '] && chars[at] != ' ';
            assert!(aligned, "{name} is not aligned in:\n{row}\n{}", lines[header]);
        }
    }
    let done = rows.iter().find(|row| row.contains("EffectDone") && row.contains("ek:39")).unwrap();
    assert!(done.contains("ok: ") && done.contains("39 tokens") && done.contains("ms"), "{done}");
    assert!(!out.contains('\u{1b}'), "no colour when stdout is not a terminal");
}

/// `diff` lines both sides up, marks every differing row, names the first,
/// and never compares what only names a run (its idempotency key): two runs
/// of one scenario did the same.
#[test]
fn diff_aligns_both_sides_and_marks_every_differing_row() {
    let demo = Demo::new();
    let dir = demo.path();
    ok(dir, &["demo"]);
    let failed: Vec<String> = ok(dir, &["runs", "--outcome", "failed", "--ids"]).lines().map(str::to_owned).collect();
    assert_eq!(failed.len(), 2, "{failed:?}");
    let same = ok(dir, &["diff", &failed[0], &failed[1]]);
    assert!(same.contains("the two runs did the same"), "two runs of one scenario did the same:\n{same}");

    let answered = demo.run("succeeded");
    let out = agentplane(dir, &["diff", &failed[0], &answered]);
    assert_eq!(out.status.code(), Some(1));
    let table = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    let header = lines.iter().position(|line| line.trim_start().starts_with('#')).unwrap();
    let b_at = lines[header].chars().count() - 1;
    let report = json_exit(dir, &["diff", &failed[0], &answered, "--json"], 1);
    let rows = report["rows"].as_array().unwrap();
    for (row, line) in rows.iter().zip(&lines[header + 1..]) {
        let chars: Vec<char> = line.chars().collect();
        assert_eq!(chars[0] == '!', row["same"] == false, "every differing row is marked:\n{table}");
        assert!(chars[b_at - 2..b_at] == [' ', ' '] && chars[b_at] != ' ', "B is aligned:\n{table}");
        assert!(!line.contains('{'), "cells are words, never cut JSON:\n{table}");
    }
    let first = report["first_difference"].as_u64().unwrap() as usize;
    assert!(lines[header + first].ends_with("<- first difference"), "{table}");
    assert_ne!(rows[first - 1]["a"]["kind"], "RunAdmitted", "an admission differs only by its key: {table}");
}

/// R-LOG-4: `verify-proof` checks a proof `prove --json` printed, offline,
/// against a tree the caller trusts (a checkpoint opened with the log key,
/// or a root and size); a proof never vouches for its own root, and a
/// changed proof or an untrusted tree is refused (exit 1).
#[test]
fn r_log_4_verify_proof_checks_a_printed_proof_against_a_trusted_tree() {
    let demo = Demo::new();
    let dir = demo.path();
    let key = demo.log_key.as_str();
    std::fs::write(dir.join("saved.note"), ok(dir, &["checkpoint"])).unwrap();
    std::fs::write(dir.join("inclusion.json"), ok(dir, &["prove", &demo.run("succeeded"), "--json"])).unwrap();
    std::fs::write(dir.join("consistency.json"), ok(dir, &["prove", "--consistency", "2", "--json"])).unwrap();
    for proof in ["inclusion.json", "consistency.json"] {
        let verified = json(dir, &["verify-proof", proof, "--checkpoint", "saved.note", "--log-key", key, "--json"]);
        assert_eq!(verified["valid"], true, "{proof}: {verified}");
    }
    let inclusion: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("inclusion.json")).unwrap()).unwrap();
    let size = inclusion["size"].to_string();
    ok(dir, &["verify-proof", "inclusion.json", "--root", inclusion["root"].as_str().unwrap(), "--size", &size]);

    let stderr = fails(dir, &["verify-proof", "inclusion.json"], 2);
    assert!(stderr.contains("never vouches for its own root"), "{stderr}");
    let other_root = "00".repeat(32);
    let stderr = fails(dir, &["verify-proof", "inclusion.json", "--root", &other_root, "--size", &size], 1);
    assert!(stderr.contains("not the trusted one"), "{stderr}");
    let mut changed = inclusion.clone();
    changed["index"] = Value::from(inclusion["index"].as_u64().unwrap() ^ 1);
    std::fs::write(dir.join("changed.json"), changed.to_string()).unwrap();
    let answer =
        json_exit(dir, &["verify-proof", "changed.json", "--checkpoint", "saved.note", "--log-key", key, "--json"], 1);
    assert_eq!(answer["class"], "findings", "{answer}");

    // The leaf's bytes bind the proof to the run it names (session 16): a
    // proof relabelled with another run, or whose leaf bytes were swapped,
    // is refused; the verified answer names the run.
    let verified =
        json(dir, &["verify-proof", "inclusion.json", "--checkpoint", "saved.note", "--log-key", key, "--json"]);
    assert_eq!(verified["run"], inclusion["run"], "{verified}");
    let mut relabelled = inclusion.clone();
    relabelled["run"] = Value::from(demo.run("failed"));
    std::fs::write(dir.join("relabelled.json"), relabelled.to_string()).unwrap();
    let stderr = fails(dir, &["verify-proof", "relabelled.json", "--checkpoint", "saved.note", "--log-key", key], 1);
    assert!(stderr.contains("does not seal run"), "{stderr}");
    let mut swapped = inclusion.clone();
    swapped["leaf"] = Value::from(inclusion["leaf"].as_str().unwrap().replace("records ", "records 1"));
    std::fs::write(dir.join("swapped.json"), swapped.to_string()).unwrap();
    let stderr = fails(dir, &["verify-proof", "swapped.json", "--checkpoint", "saved.note", "--log-key", key], 1);
    assert!(stderr.contains("does not hash to its leaf_hash"), "{stderr}");
}

/// R-LOG-4, R-COVER-2: a printed head proof (an open run's) is bound to its
/// run, seq and chain hash as a seal proof is to its run: `prove --json`
/// carries the heads leaf's bytes, and `verify-proof` holds the entry
/// `(run, head_seq, head_hash)` to the leaf's entries tree. A head proof
/// relabelled with another run, or another seq or hash (claiming the run had
/// a record it never had), is refused; it was "valid" with `run: null`.
#[test]
fn r_log_4_verify_proof_binds_a_head_proof_to_its_run_seq_and_hash() {
    let demo = Demo::new();
    let dir = demo.path();
    let key = demo.log_key.as_str();
    std::fs::write(dir.join("saved.note"), ok(dir, &["checkpoint"])).unwrap();
    let open = demo.run("failed");
    let printed = ok(dir, &["prove", &open, "--json"]);
    std::fs::write(dir.join("head.json"), &printed).unwrap();
    let head: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(head["kind"], "head", "{head}");
    assert!(head["leaf"].as_str().unwrap().starts_with("agentplane/heads/v1\n"), "{head}");

    let verified = json(dir, &["verify-proof", "head.json", "--checkpoint", "saved.note", "--log-key", key, "--json"]);
    assert_eq!((verified["valid"].clone(), verified["kind"].clone()), (Value::from(true), Value::from("head")));
    assert_eq!(verified["run"], open.as_str(), "the verified answer names the run the entry is of: {verified}");
    assert_eq!(verified["head_seq"], head["head_seq"], "and the head it checked: {verified}");
    assert_eq!(verified["head_hash"], head["head_hash"], "{verified}");
    let said = ok(dir, &["verify-proof", "head.json", "--checkpoint", "saved.note", "--log-key", key]);
    assert!(said.contains(&format!("run {open} had record {}", head["head_seq"])), "{said}");

    let other_hash = format!("{:0>64}", "1");
    let changes: [(&str, Value); 4] = [
        ("run", Value::from(demo.run("quarantined"))),
        ("head_seq", Value::from(head["head_seq"].as_u64().unwrap() + 1)),
        ("head_hash", Value::from(other_hash)),
        ("leaf", Value::from(head["leaf"].as_str().unwrap().replace("runs ", "runs 1"))),
    ];
    for (field, value) in changes {
        let mut changed = head.clone();
        changed[field] = value;
        std::fs::write(dir.join("changed.json"), changed.to_string()).unwrap();
        let answer = json_exit(
            dir,
            &["verify-proof", "changed.json", "--checkpoint", "saved.note", "--log-key", key, "--json"],
            1,
        );
        assert_eq!(answer["class"], "findings", "{field} changed: {answer}");
    }
}

/// R-RUN-5: `resume` continues a stopped run from the command line: an
/// exhausted run once its ceiling is raised, and a fork (which stays
/// running until its agent code resumes it) run on by the demo's code.
#[test]
fn r_run_5_resume_continues_an_exhausted_run_and_a_fork() {
    let demo = Demo::new();
    let dir = demo.path();
    let exhausted = demo.run("exhausted");
    let stderr = fails(dir, &["resume", &exhausted], 2);
    assert!(stderr.contains("exhausted"), "without a raised ceiling it stops again: {stderr}");
    let out = ok(dir, &["resume", &exhausted, "--raise", "effects=5"]);
    assert!(out.contains("succeeded"), "{out}");
    let exhausted_now = ok(dir, &["runs", "--outcome", "exhausted", "--ids"]);
    assert!(!exhausted_now.contains(&exhausted), "it moved out of the exhausted listing (R-RUN-3)");
    fails(dir, &["resume", &exhausted, "--raise", "bananas=5"], 2);

    let answered = ok(dir, &["runs", "--outcome", "succeeded", "--ids"]).lines().next().unwrap().to_owned();
    let fork = ok(dir, &["fork", &answered, "--at", "2"]).trim().to_owned();
    let listed = json(dir, &["runs", "--json"]);
    let row = listed.as_array().unwrap().iter().find(|r| r["run"] == fork.as_str()).unwrap();
    assert!(row["outcome"].is_null(), "a fork is running until resumed: {row}");
    let out = ok(dir, &["resume", &fork]);
    assert!(out.contains("succeeded"), "{out}");
    ok(dir, &["verify", "--require-signature"]);
}

/// R-RUN-5: `resume` of the demo's failed run drives its code again from
/// the top, which meets its failed fetch read back and stops: the step it
/// passes on the way is the history's, read back, so the resume writes
/// nothing, however often it is asked (it appended that step's start again
/// each time, each counted against a steps ceiling).
#[test]
fn r_run_5_resuming_a_run_that_stops_again_writes_nothing() {
    let demo = Demo::new();
    let dir = demo.path();
    let failed = demo.run("failed");
    let records = |dir| json(dir, &["show", &failed, "--json"])["records"].as_array().map(Vec::len);
    let before = records(dir);
    for _ in 0..2 {
        let out = ok(dir, &["resume", &failed]);
        assert!(out.contains("failed"), "its fetch read back fails it again: {out}");
    }
    assert_eq!(records(dir), before, "nothing appended");
}

/// R-RUN-5, R-UX-2: `resume` of a run that still waits for an answer says
/// which answer, as the flag to give: the ceiling crossed (`--raise`), the
/// withholding (`--lift`), the effect in doubt (`--answer`); a sealed run
/// says it is sealed. It said only "run R is exhausted: ...", and "run R is
/// succeeded".
#[test]
fn r_run_5_resume_of_a_stopped_run_names_the_answer_it_waits_for() {
    let demo = Demo::new();
    let dir = demo.path();
    let exhausted = demo.run("exhausted");
    let stderr = fails(dir, &["resume", &exhausted], 2);
    assert!(stderr.contains(&format!("agentplane resume {exhausted} --raise effects=")), "{stderr}");
    // A ceiling raised on another dimension than the one crossed still names the one crossed.
    let stderr = fails(dir, &["resume", &exhausted, "--raise", "tokens=1000"], 2);
    assert!(stderr.contains("--raise effects="), "{stderr}");
    let withheld = demo.run("withheld");
    let stderr = fails(dir, &["resume", &withheld], 2);
    assert!(stderr.contains(&format!("agentplane resume {withheld} --lift")), "{stderr}");
    let quarantined = demo.run("quarantined");
    let stderr = fails(dir, &["resume", &quarantined], 2);
    assert!(
        stderr.contains(&format!("agentplane resume {quarantined} --answer ek:transfer=happened"))
            && stderr.contains("not-happened"),
        "{stderr}"
    );
    let sealed = demo.run("succeeded");
    let stderr = fails(dir, &["resume", &sealed], 2);
    assert!(stderr.contains("sealed") && !stderr.contains("is succeeded"), "{stderr}");
}

/// The CLI README's table of plane flags is what each command's help lists
/// and takes: the table said `init` takes none (it takes `--store` and
/// `--keys`, which it writes into the configuration) and left `migrate`
/// under "every other command: all five" (it takes `--config` and `--store`).
#[test]
fn r_ux_2_the_readme_s_table_of_plane_flags_is_what_each_command_takes() {
    let plane = ["--config", "--store", "--keys", "--tenant", "--origin"];
    let commands = [
        "init",
        "demo",
        "keygen",
        "keys",
        "sweep",
        "runs",
        "show",
        "verify",
        "audit",
        "checkpoint",
        "prove",
        "cost",
        "diff",
        "fork",
        "resume",
        "export",
        "verify-export",
        "verify-proof",
        "repair",
        "compact",
        "migrate",
        "console",
    ];
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let table = readme.split("| command | plane flags |").nth(1).unwrap();
    let mut named = std::collections::BTreeMap::new();
    let mut others = None;
    for row in table.lines().skip(2).take_while(|line| line.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (who, flags) = (cells[1], cells[2]);
        let flags: Vec<&str> = if flags == "all five" {
            plane.to_vec()
        } else {
            plane.iter().copied().filter(|flag| flags.contains(&format!("`{flag}`"))).collect()
        };
        if who == "every other command" {
            others = Some(flags);
            continue;
        }
        for command in who.split(',') {
            named.insert(command.trim().trim_matches('`').to_owned(), flags.clone());
        }
    }
    let others = others.unwrap();
    for command in commands {
        let flags = named.get(command).unwrap_or(&others);
        let text = help(command);
        for flag in plane {
            assert_eq!(
                lists(&text, flag),
                flags.contains(&flag),
                "the README's table, `{command}` and {flag}:\n{text}"
            );
        }
    }
}

/// The text a command's `--help` gives for `flag` (clap's long help: the
/// lines after the flag's own, up to the blank line).
fn flag_help(help: &str, flag: &str) -> String {
    let mut lines = help.lines().skip_while(|line| !line.trim_start().starts_with(&format!("{flag} ")));
    let head = lines.next().unwrap_or_else(|| panic!("{flag} is not in the help:\n{help}"));
    std::iter::once(head).chain(lines.take_while(|line| !line.trim().is_empty())).collect::<Vec<_>>().join(" ")
}

/// R-UX-2: a plane flag's help says what that command does with it, as the
/// README says. `sweep --help` said `--tenant` defaults to "the
/// configuration's first" (without it the sweep takes every tenant: the
/// README's "that tenant alone"), and never said what a bare `--every`
/// waits (the configuration's `sweep_every`); `audit --help` said
/// `--origin` defaults to "the key file's" (the audit never reads a key
/// file: the origin is the log key's name when not given).
#[test]
fn r_ux_2_a_plane_flag_s_help_says_what_its_command_does_with_it() {
    let sweep = help("sweep");
    let tenant = flag_help(&sweep, "--tenant");
    assert!(!tenant.contains("configuration's first") && tenant.contains("every tenant"), "{tenant}");
    let every = flag_help(&sweep, "--every");
    assert!(every.contains("sweep_every"), "{every}");
    let audit = help("audit");
    let origin = flag_help(&audit, "--origin");
    assert!(!origin.contains("key file") && origin.contains("the log key's name"), "{origin}");
}

/// R-RUN-7: `cost --since/--until` counts the records written in the
/// window, by the time on each (since inclusive, until exclusive), and a
/// window that holds no instant (`--until` not after `--since`, the two
/// swapped) is a usage error, not a figure of 0 tokens that reads as "this
/// tenant spent nothing".
#[test]
fn r_run_7_cost_counts_a_window_by_the_records_time_and_refuses_an_empty_one() {
    let demo = Demo::new();
    let dir = demo.path();
    let runs = json(dir, &["runs", "--json"]);
    let row = runs.as_array().unwrap().iter().find(|row| row["tokens"].as_u64().unwrap() > 0).unwrap();
    let (run, tokens) = (row["run"].as_str().unwrap(), row["tokens"].as_u64().unwrap());
    let shown = json(dir, &["show", run, "--json"]);
    let records = shown["records"].as_array().unwrap();
    let first_done = records.iter().find(|record| record["kind"] == "EffectDone").unwrap()["at"].as_str().unwrap();
    let cost = |args: &[&str]| {
        let mut all = vec!["cost", run, "--json"];
        all.extend(args);
        json(dir, &all)["tokens"].as_u64().unwrap()
    };
    assert_eq!(cost(&[]), tokens);
    assert_eq!(cost(&["--since", "2000-01-01"]), tokens);
    assert_eq!(cost(&["--until", first_done]), 0, "until is exclusive: nothing charged before {first_done}");
    assert_eq!(cost(&["--since", first_done]), tokens, "since is inclusive");
    assert_eq!(cost(&["--since", "2000-01-01", "--until", "2000-01-02"]), 0, "a window before every record");
    // The text says over how many runs the figure was counted, as the JSON's `runs` does.
    let counted = json(dir, &["cost", "--json"])["runs"].as_u64().unwrap();
    let text = String::from_utf8(agentplane(dir, &["cost"]).stdout).unwrap();
    assert!(text.contains(&format!(", {counted} runs: ")), "{text}");

    for (since, until) in [("2026-12-01", "2026-11-01"), (first_done, first_done)] {
        let stderr = fails(dir, &["cost", "--since", since, "--until", until], 2);
        assert!(stderr.contains("--until") && stderr.contains("--since"), "{stderr}");
    }
}

/// `init --witness` given a private key by mistake (a witness's key file
/// pasted whole, with no `URL=` before it) refuses it without echoing any
/// of it: the message says what it is, and no byte of the seed is shown.
#[test]
fn init_never_echoes_a_private_key_given_as_a_witness() {
    let dir = tempfile::tempdir().unwrap();
    // A short name puts the seed's base64 within the first 60 characters.
    let secret = "PRIVATE+KEY+w+0a0b0c0d+AZZZZxyzzyZZZZ";
    let stderr = fails(dir.path(), &["init", "--witness", secret], 2);
    assert!(stderr.contains("this is a private key") && !stderr.contains("xyz"), "{stderr}");
    let stderr = fails(dir.path(), &["init", "--witness", &format!("http://127.0.0.1:9={secret}")], 2);
    assert!(stderr.contains("this is a private key") && !stderr.contains("xyz"), "{stderr}");
    // Base64 padding: split at its `=`, the "URL" would be the key itself.
    let stderr = fails(dir.path(), &["init", "--witness", &format!("{secret}=")], 2);
    assert!(stderr.contains("this is a private key") && !stderr.contains("xyz"), "{stderr}");
    assert!(!dir.path().join("agentplane.toml").exists(), "nothing is made");
}

/// R-RUN-4, R-RUN-5, R-UX-2: an effect's charge took a run past its
/// ceiling (190 tokens against 150), so the run needs a ceiling of at least
/// 190 to go on, not merely one above 150. `resume` said "raise that
/// ceiling above 150", and after `--raise tokens=151` said it again: an
/// operator who did as told was told the same, and the run never moved. It
/// now names the least ceiling the run can go on under.
#[test]
fn r_run_5_resume_of_a_run_exhausted_past_its_ceiling_names_the_ceiling_it_needs() {
    use journal_core::{Admission, AdmitRequest, Budget, Counters, EffectOutput, EffectResult, RuntimeBuilder, Store};
    let demo = Demo::new();
    let dir = demo.path();
    let origin = "agentplane.local/plane/default";
    let run = {
        let store = std::sync::Arc::new(store_redb::RedbStore::open(&dir.join("agentplane.redb")).unwrap());
        let tenant = journal_core::TenantId::new("default").unwrap();
        let runtime = RuntimeBuilder::new(std::sync::Arc::clone(&store) as std::sync::Arc<dyn Store>)
            .tenant(tenant.clone(), journal_core::Origin::new(origin).unwrap(), None)
            .build()
            .unwrap();
        let budget = Budget { tokens: Some(150), ..Budget::default() };
        let request = AdmitRequest { idempotency_key: "demo-x-raised".into(), plan: vec!["research".into()], budget };
        let Admission::New(mut run) = runtime.admit(&tenant, request).unwrap() else { panic!("admitted twice") };
        run.start_step("research").unwrap();
        for (key, tokens) in [("ek:search", 100), ("ek:read", 90)] {
            let _ = run.effect(key, "research", || EffectOutput {
                result: EffectResult::Ok { output: key.into() },
                charged: Counters { tokens, ..Counters::default() },
            });
        }
        run.run().to_string()
    };
    let stderr = fails(dir, &["resume", &run], 2);
    assert!(stderr.contains("--raise tokens=190 ") && stderr.contains("to 190 or more"), "{stderr}");
    let stderr = fails(dir, &["resume", &run, "--raise", "tokens=151"], 2);
    assert!(!stderr.contains("above 150"), "told again what was just done: {stderr}");
    assert!(stderr.contains("raise that ceiling to 190 or more"), "{stderr}");
}

/// The command a line of stderr names after `prefix`, up to `end` (or the
/// line's end), split into arguments as a shell splits a plain command line.
fn printed_command(stderr: &str, prefix: &str, end: &str) -> Vec<String> {
    let line = stderr
        .lines()
        .find_map(|line| line.split_once(prefix).map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no `{prefix}` in: {stderr}"));
    let command = line.split(end).next().unwrap();
    let mut words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    assert_eq!(words.first().map(String::as_str), Some("agentplane"), "{line}");
    words.remove(0);
    words
}

/// R-RUN-5, R-UX-2: the ceiling `resume` names for an exhausted run is a
/// command that works run as printed, as the CLI README promises of every
/// command a message names. It printed `--raise effects=N`, whose `N`
/// answered "invalid digit found in string", a message that said neither
/// what was wrong nor what to give.
#[test]
fn r_run_5_the_ceiling_resume_names_works_run_as_printed() {
    let demo = Demo::new();
    let dir = demo.path();
    let exhausted = demo.run("exhausted");
    let stderr = fails(dir, &["resume", &exhausted, "--raise", "effects=N"], 2);
    assert!(stderr.contains("a whole number") && stderr.contains("none"), "{stderr}");
    let stderr = fails(dir, &["resume", &exhausted], 2);
    let answer = printed_command(&stderr, "or more: ", " (or");
    let args: Vec<&str> = answer.iter().map(String::as_str).collect();
    let out = ok(dir, &args);
    assert!(out.contains("succeeded"), "`{}`: {out}", args.join(" "));
}

/// R-STORE-4, R-UX-2: the "next page" command `runs --limit` prints, run
/// as printed, lists the next page of the same plane, printed as this page
/// was. It named the tenant alone: a listing of a plane named by `--config`
/// (or `--store`) printed a command that, run where it was, said "no plane
/// in this folder", and one read with `--json` or `--ids` printed a
/// command whose page came as a table.
#[test]
fn r_store_4_the_next_page_of_runs_run_as_printed_pages_the_same_plane_alike() {
    let demo = Demo::new();
    let root = demo.path().parent().unwrap();
    let config = demo.path().join("agentplane.toml");
    let config = config.to_str().unwrap();
    let out = agentplane(root, &["--config", config, "runs", "--limit", "2", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let first: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let next = printed_command(&stderr, "next page: ", "\n");
    let args: Vec<&str> = next.iter().map(String::as_str).collect();
    let page = json(root, &args);
    let page = page.as_array().unwrap_or_else(|| panic!("`{}` printed a page as JSON: {page}", args.join(" ")));
    assert_eq!(page.len(), 2, "{page:?}");
    let seen: Vec<&Value> = first.as_array().unwrap().iter().map(|row| &row["run"]).collect();
    assert!(page.iter().all(|row| !seen.contains(&&row["run"])), "the next page, not this one: {page:?}");

    let store = demo.path().join("agentplane.redb");
    let out =
        agentplane(root, &["--store", store.to_str().unwrap(), "runs", "--limit", "2", "--ids", "--skip-signatures"]);
    assert!(out.status.success(), "{}", text(&out));
    let next = printed_command(&String::from_utf8(out.stderr).unwrap(), "next page: ", "\n");
    let args: Vec<&str> = next.iter().map(String::as_str).collect();
    let page = ok(root, &args);
    assert_eq!(page.lines().count(), 2, "`{}` printed ids: {page}", args.join(" "));
    assert!(page.lines().all(|line| line.starts_with("run-")), "{page}");
}

/// R-RUN-5, R-STORE-4: the answer `resume` says a stopped run waits for is
/// a command that, run as printed, gives it: on the plane named (`--config`)
/// and for the run's tenant. It said `agentplane resume RUN --raise ...`,
/// which for a run of tenant `search` answered "no run RUN in tenant shop"
/// (the configuration's first), and away from the plane's folder "no plane".
#[test]
fn r_run_5_the_answer_resume_names_works_run_as_printed() {
    let root = tempfile::tempdir().unwrap();
    let plane = root.path().join("plane");
    std::fs::create_dir(&plane).unwrap();
    ok(&plane, &["init", "--tenant-name", "shop", "--tenant-name", "search"]);
    ok(&plane, &["--tenant", "search", "demo"]);
    let config = plane.join("agentplane.toml");
    let config = config.to_str().unwrap();
    let on = ["--config", config, "--tenant", "search"];
    let listed = |outcome: &str| {
        ok(root.path(), &[&on[..], &["runs", "--outcome", outcome, "--ids"]].concat()).trim().to_owned()
    };
    let exhausted = listed("exhausted");
    let stderr = fails(root.path(), &[&on[..], &["resume", &exhausted]].concat(), 2);
    let answer = printed_command(&stderr, "or more: ", " (or");
    let args: Vec<&str> = answer.iter().map(String::as_str).collect();
    let out = ok(root.path(), &args);
    assert!(out.contains("succeeded"), "`{}`: {out}", args.join(" "));

    let withheld = listed("withheld");
    let stderr = fails(root.path(), &[&on[..], &["resume", &withheld]].concat(), 2);
    let answer = printed_command(&stderr, "once it may run on: ", "\n");
    let args: Vec<&str> = answer.iter().map(String::as_str).collect();
    assert!(ok(root.path(), &args).contains("succeeded"), "{}", args.join(" "));

    // In the plane's folder, for its first tenant, the answer is as short as it was.
    let shop = tempfile::tempdir().unwrap();
    ok(shop.path(), &["demo"]);
    let dir = shop.path().join("agentplane-demo");
    let withheld = ok(&dir, &["runs", "--outcome", "withheld", "--ids"]).trim().to_owned();
    let stderr = fails(&dir, &["resume", &withheld], 2);
    assert!(stderr.contains(&format!("once it may run on: agentplane resume {withheld} --lift")), "{stderr}");
}

/// R-UX-2 (session 29's note): the command `export` names when no witness
/// quorum has cosigned the run yet is the sweep of the plane exported from,
/// with the plane flags it was given: it said `agentplane sweep`, which run
/// where the export was answered "no plane in this folder".
#[test]
fn r_ux_2_export_names_the_sweep_of_its_own_plane() {
    let demo = Demo::new();
    let sealed = demo.run("succeeded");
    let elsewhere = tempfile::tempdir().unwrap();
    let config = demo.path().join("agentplane.toml");
    let config = config.to_str().unwrap();
    let output = elsewhere.path().join("run.json");
    let exported =
        agentplane(elsewhere.path(), &["--config", config, "export", &sealed, "-o", output.to_str().unwrap()]);
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    let stderr = String::from_utf8_lossy(&exported.stderr);
    assert!(stderr.contains(&format!("(`agentplane --config {config} sweep`)")), "{stderr}");
}

/// R-LOG-4, R-UX-2: `prove` of an open run that no heads leaf holds yet
/// says what puts it in the log: a checkpoint (the sweep, an export), after
/// which `prove` gives its head's proof, as the CLI README says it does for
/// an open run. It said "conclude it first", as if only a seal had a place
/// in the log.
#[test]
fn r_log_4_prove_of_an_open_run_no_checkpoint_holds_names_the_checkpoint() {
    let demo = Demo::new();
    let dir = demo.path();
    let sealed = demo.run("succeeded");
    let fork = ok(dir, &["fork", &sealed, "--at", "2"]).trim().to_owned();
    let stderr = fails(dir, &["prove", &fork], 2);
    assert!(stderr.contains("agentplane checkpoint"), "{stderr}");
    assert!(!stderr.contains("conclude it first"), "{stderr}");
    ok(dir, &["checkpoint"]);
    let head = json(dir, &["prove", &fork, "--json"]);
    assert_eq!(head["kind"], "head", "{head}");
    assert_eq!(head["run"], fork.as_str(), "{head}");
}

/// R-UX-2: `keys` prints one thing: `--witness-config`, `--print PART` or
/// `--json`. Given two, it printed one and dropped the other without a
/// word (`keys --print log-key --json` printed the bare key, not JSON); a
/// flag given is never ignored, so two are a usage error (exit 2).
#[test]
fn r_ux_2_keys_refuses_two_outputs_rather_than_ignore_one() {
    let demo = Demo::new();
    let dir = demo.path();
    for args in [
        &["keys", "--print", "log-key", "--json"][..],
        &["keys", "--witness-config", "--json"][..],
        &["keys", "--witness-config", "--print", "origin"][..],
    ] {
        let out = agentplane(dir, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        // Nothing printed but, asked for JSON, the usage failure object.
        if args.contains(&"--json") {
            let failure: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(failure["class"], "usage", "{args:?}: {failure}");
        } else {
            assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out));
        }
    }
    assert_eq!(json(dir, &["keys", "--json"])["tenant"], "default");
    assert!(ok(dir, &["keys", "--print", "origin"]).starts_with("agentplane.local/plane/default"));
}

/// Runs `agentplane ARGS` in `dir` with its standard output closed before
/// it writes (`| head -0`), or on `/dev/full` (a full disk): its exit code
/// and standard error.
fn with_stdout_lost(dir: &Path, args: &[&str], full: bool) -> (Option<i32>, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_agentplane"));
    command.args(args).current_dir(dir).stderr(std::process::Stdio::piped());
    let child = if full {
        command.stdout(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap()).spawn().unwrap()
    } else {
        let mut child = command.stdout(std::process::Stdio::piped()).spawn().unwrap();
        drop(child.stdout.take());
        child
    };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    (out.status.code(), stderr)
}

/// R-UX-2 (review 72): a command that failed in `--json` mode prints its
/// failure object on stdout; a reader that closed the pipe (`| head -c 0`,
/// a consumer that died) made that write end the command with exit 0 and
/// nothing on stderr, so a cron job read success from a refused command. The
/// failure keeps its class's exit code and its message on stderr whatever
/// became of stdout (a closed pipe, a full disk).
#[cfg(unix)]
#[test]
fn r_ux_2_a_json_failure_keeps_its_exit_code_and_message_when_stdout_is_lost() {
    let missing = tempfile::tempdir().unwrap();
    for full in [false, true] {
        let args = ["--store", "nothing.redb", "--origin", "a.test/b", "runs", "--json"];
        let (code, stderr) = with_stdout_lost(missing.path(), &args, full);
        assert_eq!(code, Some(2), "full disk {full}: a usage failure: {stderr}");
        assert!(stderr.contains("nothing.redb"), "full disk {full}: the failure is said: {stderr}");
    }
}

/// R-UX-2, R-AUD-9 (review 72): `verify` with findings whose reader closed
/// the pipe (`agentplane verify | head -3` in a cron job, the FINDING lines
/// first) exited 0, and on a full disk 2: the tamper alarm an alert waits
/// for (exit 1) was lost with the output. The verdict is reached before the
/// report is printed, and is the exit whatever became of stdout; so is
/// `diff`'s.
#[cfg(unix)]
#[test]
fn r_ux_2_a_verdict_is_the_exit_code_when_stdout_is_lost() {
    let demo = Demo::new();
    let dir = demo.path();
    let (a, b) = (demo.run("succeeded"), demo.run("failed"));
    {
        use journal_core::testkit::TamperAccess;
        let store = store_redb::RedbStore::open(&dir.join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("default").unwrap();
        store.set_idempotency(&tenant, "tomorrows-job", &journal_core::RunId::new(&a).unwrap());
    }
    assert_eq!(json_exit(dir, &["verify", "--json"], 1)["verdict"], "findings");
    for full in [false, true] {
        for args in [&["verify", "--json"][..], &["verify"][..], &["diff", &a, &b, "--json"][..]] {
            let (code, stderr) = with_stdout_lost(dir, args, full);
            assert_eq!(code, Some(1), "{args:?}, full disk {full}: {stderr}");
        }
    }
}

/// R-UX-2, R-UX-3: a write to a lost stdout ended the process there
/// (`process::exit`), whatever the command had still to do and with its
/// store open: `agentplane demo | head -1` exited 0 with its checkpoint
/// never signed and the redb store left "not closed cleanly", so the next
/// `checkpoint` or `sweep` refused (exit 2, "needs a repair first"). Output
/// lost is now dropped and the command finishes its work: exit 0 for a
/// closed pipe, 2 (I/O, said on stderr) for a full disk, the store closed.
#[cfg(unix)]
#[test]
fn r_ux_2_a_command_that_writes_finishes_its_work_when_stdout_is_lost() {
    for full in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        ok(dir.path(), &["init"]);
        let (code, stderr) = with_stdout_lost(dir.path(), &["demo"], full);
        assert_eq!(code, Some(if full { 2 } else { 0 }), "full disk {full}: {stderr}");
        if full {
            assert!(stderr.contains("writing to standard output"), "{stderr}");
        }
        let mark = std::fs::read_to_string(dir.path().join("agentplane.highwater")).unwrap();
        let signed_nothing = mark.lines().any(|line| line.split_whitespace().nth(1) == Some("never"));
        assert!(!signed_nothing, "full disk {full}: the demo signed its checkpoint: {mark}");
        ok(dir.path(), &["checkpoint"]);
    }
}

/// R-UX-2, R-AUD-5: `verify` and `audit` keep their verdict for the
/// console's plane page (`audits/TENANT.json`) after the report was
/// printed, so a reader that stopped reading (`verify | grep -q`, a closed
/// pipe) or a full disk ended the command before it was kept: the exit said
/// findings, and the console went on showing the verdict before them (a
/// clean one). The verdict is kept before the report is printed.
#[cfg(unix)]
#[test]
fn r_ux_2_a_verdict_is_kept_for_the_console_when_stdout_is_lost() {
    let demo = Demo::new();
    let dir = demo.path();
    let kept = dir.join("audits").join("default.json");
    assert_eq!(json_exit(dir, &["verify", "--json"], 0)["verdict"], "clean");
    let clean = std::fs::read_to_string(&kept).unwrap();
    assert!(clean.contains("\"findings\": 0") || clean.contains("\"findings\":0"), "{clean}");
    let a = demo.run("succeeded");
    {
        use journal_core::testkit::TamperAccess;
        let store = store_redb::RedbStore::open(&dir.join("agentplane.redb")).unwrap();
        let tenant = journal_core::TenantId::new("default").unwrap();
        store.set_idempotency(&tenant, "tomorrows-job", &journal_core::RunId::new(&a).unwrap());
    }
    for full in [false, true] {
        for args in [&["verify", "--json"][..], &["verify"][..]] {
            std::fs::remove_file(&kept).unwrap();
            let (code, stderr) = with_stdout_lost(dir, args, full);
            assert_eq!(code, Some(1), "{args:?}, full disk {full}: {stderr}");
            let verdict: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(&kept).unwrap_or_else(|err| panic!("{args:?}, full disk {full}: {err}")),
            )
            .unwrap();
            assert_eq!(verdict["verdict"], "findings", "{args:?}, full disk {full}: {verdict}");
        }
    }
}

/// R-STORE-4, R-UX-2 (review 72): a tenant the configuration does not name
/// (a typo in a cron job's `--tenant`) was read under the key file's one
/// origin, another tenant's: `verify --json` answered `findings` (a
/// deletion: that origin's signed trees against a log of nothing), exit 1,
/// a false tamper alarm; `keys --json` printed another tenant's origin and
/// log key as the typo's; `runs --json` an empty list, exit 0. A read of a
/// tenant the configuration does not name, with no `--origin`, is a usage
/// error naming the configured tenants; given `--origin`, it is read.
#[test]
fn r_store_4_a_tenant_the_configuration_does_not_name_is_refused_not_read_under_another_s_origin() {
    let demo = Demo::new();
    let dir = demo.path();
    for args in [
        &["verify", "--json", "--tenant", "defualt"][..],
        &["keys", "--json", "--tenant", "defualt"][..],
        &["runs", "--json", "--tenant", "defualt"][..],
        &["cost", "--json", "--tenant", "defualt"][..],
    ] {
        let answer = json_exit(dir, args, 2);
        assert_eq!(answer["class"], "usage", "{args:?}: {answer}");
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains("defualt") && message.contains("default"), "{args:?}: {message}");
    }
    let origin = json(dir, &["keys", "--json"])["origin"].as_str().unwrap().to_owned();
    let read = json(dir, &["runs", "--json", "--tenant", "defualt", "--origin", &origin]);
    assert_eq!(read, serde_json::json!([]), "an origin given is read as given");
}

/// R-UX-2: the schemas the CLI README documents and the first test above
/// does not reach: `verify-proof --json` of each kind, `diff --json`'s rows
/// and cost, `verify-export --json` without witness keys, and a `sweep
/// --json` line (README: "Each schema below is held to real output by
/// `tests/ux.rs`"; these were held nowhere, or only in part).
#[test]
fn r_ux_2_verify_proof_diff_rows_sweep_lines_and_unwitnessed_exports_have_their_documented_schema() {
    let demo = Demo::new();
    let dir = demo.path();
    let sealed = demo.run("succeeded");
    let open = demo.run("failed");
    std::fs::write(dir.join("saved.note"), ok(dir, &["checkpoint"])).unwrap();
    let verify_proof = ["head_hash", "head_seq", "kind", "old_size", "root", "run", "size", "trusted_by", "valid"];
    for (kind, prove) in [
        ("inclusion", vec!["prove", sealed.as_str(), "--json"]),
        ("head", vec!["prove", open.as_str(), "--json"]),
        ("consistency", vec!["prove", "--consistency", "2", "--json"]),
    ] {
        std::fs::write(dir.join("proof.json"), ok(dir, &prove)).unwrap();
        let checked = json(
            dir,
            &["verify-proof", "proof.json", "--checkpoint", "saved.note", "--log-key", &demo.log_key, "--json"],
        );
        assert_fields(&checked, &verify_proof, &format!("verify-proof of {kind}"));
        assert_eq!(checked["valid"], true, "{checked}");
        assert_eq!(checked["kind"], kind, "{checked}");
        assert_eq!(checked["trusted_by"], "a checkpoint signed by the log key", "{checked}");
        assert_hex(&checked["root"], "verify-proof root");
        let expected_run = match kind {
            "inclusion" => Value::from(sealed.as_str()),
            "head" => Value::from(open.as_str()),
            _ => Value::Null,
        };
        assert_eq!(checked["run"], expected_run, "{checked}");
        assert_eq!(checked["old_size"].is_u64(), kind == "consistency", "{checked}");
        assert_eq!(checked["head_seq"].is_u64(), kind == "head", "{checked}");
        if kind == "head" {
            assert_hex(&checked["head_hash"], "verify-proof head_hash");
        } else {
            assert!(checked["head_hash"].is_null(), "{checked}");
        }
    }

    // diff: every row `position`, `same`, `a`, `b`; each side a record or
    // null; `same` compares what the records did (kind, effect key, body
    // without the idempotency key and tenant), never when they were written.
    let diff = json_exit(dir, &["diff", &sealed, &open, "--json"], 1);
    let rows = diff["rows"].as_array().unwrap();
    for row in rows {
        assert_fields(row, &["a", "b", "position", "same"], "diff row");
        for side in [&row["a"], &row["b"]] {
            if !side.is_null() {
                assert_fields(side, &["at", "body", "effect_key", "kind", "seq"], "diff row side");
            }
        }
    }
    assert_eq!(rows[0]["a"]["kind"], "RunAdmitted");
    assert_ne!(rows[0]["a"]["body"], rows[0]["b"]["body"], "two jobs' admissions name two keys");
    assert_eq!(rows[0]["same"], true, "the README: identity fields are shown, never compared");
    for side in ["a", "b"] {
        assert_fields(
            &diff["cost"][side],
            &["cost_micros", "effects", "steps", "tokens", "wall_millis"],
            &format!("diff cost {side}"),
        );
    }

    // verify-export with no witness key: `cosignatures` null, the rest as documented.
    ok(dir, &["export", &sealed, "-o", "run.export"]);
    let valid = json(dir, &["verify-export", "run.export", "--log-key", &demo.log_key, "--json"]);
    assert!(valid["cosignatures"].is_null(), "no --witness-key: no cosignature counted: {valid}");
    assert!(valid["record_signatures"].is_string(), "{valid}");

    // sweep --json: one line per tenant and round, the documented fields.
    let plane = tempfile::tempdir().unwrap();
    let _witness = witnessed_plane(plane.path());
    ok(plane.path(), &["--tenant", "shop", "demo"]);
    let out = agentplane(plane.path(), &["sweep", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Value> = stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(lines.len(), 1, "one tenant, one round: {stdout}");
    let line = &lines[0];
    assert_fields(
        line,
        &["at", "cosigned", "needed", "needs_attention", "outcome", "problems", "root", "size", "tenant"],
        "sweep line",
    );
    assert_eq!(line["outcome"], "met", "{line}");
    assert_hex(&line["root"], "sweep root");
    let at = line["at"].as_str().unwrap();
    assert!(at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T', "to the second: {at}");
}

/// R-UX-1: the commands the workspace README's crate table and the CLI
/// README's synopsis name are the commands `agentplane --help` lists, no
/// more and no fewer (the crate table left `migrate` out).
#[test]
fn r_ux_1_both_readmes_name_every_command_the_binary_has() {
    let help = ok(Path::new("."), &["--help"]);
    let listed = help.split("Commands:").nth(1).unwrap().split("Options:").next().unwrap();
    let mut commands: Vec<&str> =
        listed.lines().filter_map(|line| line.split_whitespace().next()).filter(|command| *command != "help").collect();
    commands.sort_unstable();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = std::fs::read_to_string(manifest.join("../../README.md")).unwrap();
    let row = workspace.lines().find(|line| line.starts_with("| `crates/cli` |")).unwrap();
    let cell = row.split("the `agentplane` command:").nth(1).unwrap().split(';').next().unwrap();
    let mut in_table: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
    in_table.sort_unstable();
    assert_eq!(in_table, commands, "the README's crate table: {row}");
    let cli = std::fs::read_to_string(manifest.join("README.md")).unwrap();
    let synopsis = cli.split("```sh").nth(1).unwrap().split("```").next().unwrap();
    let mut in_synopsis: Vec<&str> =
        synopsis.lines().filter_map(|line| line.strip_prefix("agentplane ")?.split_whitespace().next()).collect();
    in_synopsis.sort_unstable();
    in_synopsis.dedup();
    assert_eq!(in_synopsis, commands, "the CLI README's synopsis");
}
