//! Records, versions and shapes (R-CHAIN-3/4/6, R-VER-1..6).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

use journal_core::golden::golden_records;
use journal_core::{
    BuildSkew, ChainHash, JournalError, Record, RecordKind, RunId, StoredRecord, Upcasters, verify_links,
};

#[test]
fn r_chain_6_every_kind_has_a_typed_body_that_round_trips() {
    let records = golden_records().unwrap();
    let kinds: Vec<RecordKind> = records.iter().map(Record::kind).collect();
    assert_eq!(kinds, RecordKind::ALL, "the golden set holds one record of every kind");
    for record in records {
        let bytes = record.encode().unwrap();
        assert_eq!(Record::decode_verified(&bytes, &Upcasters::builtin()).unwrap(), record);
        assert!(!bytes.contains(&b'\n') && !bytes.starts_with(b" "), "one compact line");
    }
}

#[test]
fn r_chain_3_fields_in_fixed_order_nothing_skipped() {
    let record = &golden_records().unwrap()[1];
    let text = String::from_utf8(record.encode().unwrap()).unwrap();
    let order = ["\"kind\"", "\"v\"", "\"run\"", "\"seq\"", "\"at\"", "\"effect_key\"", "\"build\"", "\"body\""];
    let positions: Vec<usize> = order.iter().map(|field| text.find(field).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(text.contains("\"effect_key\":null"), "an absent effect key is written as null: {text}");
}

fn with_field(bytes: &[u8], field: &str, value: serde_json::Value) -> Vec<u8> {
    // Rewrites one envelope field by text, keeping the rest byte for byte.
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let old = format!("\"{field}\":{}", v[field]);
    let new = format!("\"{field}\":{value}");
    assert!(text.contains(&old));
    text.replacen(&old, &new, 1).into_bytes()
}

#[test]
fn r_ver_2_a_newer_version_is_refused_as_build_skew_with_the_remedy() {
    let record = &golden_records().unwrap()[2];
    let ahead = with_field(&record.encode().unwrap(), "v", serde_json::json!(2));
    let err = Record::decode_verified(&ahead, &Upcasters::builtin()).unwrap_err();
    assert!(err.is_build_skew() && !err.is_tamper(), "{err:?}");
    let JournalError::BuildSkew(skew) = &err else { panic!() };
    let BuildSkew::UnknownRecordVersion { kind, v, readable, writer, remedy, .. } = skew.as_ref() else {
        panic!("{skew:?}")
    };
    assert_eq!((kind.as_str(), *v, *readable), ("StepStarted", 2, Some(1)));
    assert_eq!(writer.as_ref().unwrap().version, "golden");
    assert!(remedy.contains("agentplane-journal-core golden"), "the remedy names the writer: {remedy}");
}

#[test]
fn r_ver_3_an_unknown_field_is_refused_as_unreadable_shape() {
    let record = &golden_records().unwrap()[2];
    let text = String::from_utf8(record.encode().unwrap()).unwrap();
    let extra_body = text.replace("{\"step\":\"search\"}", "{\"step\":\"search\",\"priority\":1}");
    let extra_envelope = text.replacen("\"body\":", "\"trace\":\"x\",\"body\":", 1);
    for bytes in [extra_body, extra_envelope] {
        let err = Record::decode_verified(bytes.as_bytes(), &Upcasters::builtin()).unwrap_err();
        assert!(
            matches!(&err, JournalError::BuildSkew(skew) if matches!(skew.as_ref(), BuildSkew::UnreadableRecordShape { .. })),
            "{err:?}"
        );
        assert!(err.to_string().contains("UnreadableRecordShape"));
    }
}

#[test]
fn r_ver_2_the_upcaster_seam_is_on_the_read_path_of_every_kind() {
    // A v0 StepStarted (an imagined older shape with "title" for "step") reads
    // only through a registered upcaster: the registry is consulted on every read.
    let record = &golden_records().unwrap()[2];
    let text = String::from_utf8(record.encode().unwrap()).unwrap();
    let v0 = text.replace("\"v\":1", "\"v\":0").replace("{\"step\":", "{\"title\":");
    let refused = Record::decode_verified(v0.as_bytes(), &Upcasters::builtin()).unwrap_err();
    assert!(refused.is_build_skew(), "{refused:?}");
    let mut upcasters = Upcasters::builtin();
    upcasters.register("StepStarted", 0, |bytes| {
        let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
        Ok(text.replace("\"v\":0", "\"v\":1").replace("{\"title\":", "{\"step\":").into_bytes())
    });
    assert_eq!(&Record::decode_verified(v0.as_bytes(), &upcasters).unwrap(), record);
}

/// A test-only kind with two shapes.
#[derive(serde::Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct TestNoteV2 {
    text: String,
    lang: String,
}

fn test_note(run: &str, seq: u64, v: u32, body: &str) -> Vec<u8> {
    format!(
        "{{\"kind\":\"TestNote\",\"v\":{v},\"run\":\"{run}\",\"seq\":{seq},\"at\":\"2026-01-01T00:00:00.000Z\",\"effect_key\":null,\"build\":{{\"name\":\"test-writer\",\"version\":\"{v}.0\"}},\"body\":{body}}}"
    )
    .into_bytes()
}

fn upcast_v1_to_v2(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    value["v"] = serde_json::json!(2);
    value["body"]["lang"] = serde_json::json!("en");
    serde_json::to_vec(&value).map_err(|e| e.to_string())
}

#[test]
fn r_ver_5_an_upcast_record_still_verifies_its_link_over_the_original_bytes() {
    let mut upcasters = Upcasters::builtin();
    upcasters.declare_current("TestNote", 2);
    upcasters.register("TestNote", 1, upcast_v1_to_v2);
    let run = RunId::new("versions").unwrap();
    let originals = [
        test_note("versions", 1, 1, "{\"text\":\"hello\"}"),
        test_note("versions", 2, 2, "{\"text\":\"hi\",\"lang\":\"fr\"}"),
    ];
    let mut prev = ChainHash::GENESIS;
    let rows: Vec<StoredRecord> = originals
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let hash = ChainHash::link(&prev, bytes);
            let row = StoredRecord {
                seq: i as u64 + 1,
                kind: "TestNote".into(),
                effect_key: None,
                prev_hash: prev,
                hash,
                bytes: bytes.clone(),
                signature: None,
            };
            prev = hash;
            row
        })
        .collect();
    // The chain commits to the bytes as written.
    verify_links(&run, &rows, None).unwrap();
    for row in &rows {
        let header = Record::header(&row.bytes).unwrap();
        let current = upcasters.upcast(&header, &row.bytes).unwrap();
        let note: TestNoteV2 = serde_json::from_slice::<serde_json::Value>(&current)
            .map(|v| serde_json::from_value(v["body"].clone()).unwrap())
            .unwrap();
        assert!(note.lang == "en" || note.lang == "fr");
        assert_eq!(ChainHash::link(&row.prev_hash, &row.bytes), row.hash, "the upcast never touched the stored bytes");
    }
    // Pure and total (R-VER-6): the same input gives the same output.
    assert_eq!(upcast_v1_to_v2(&originals[0]), upcast_v1_to_v2(&originals[0]));

    // A v3 record (from a newer writer) is refused with the remedy.
    let v3 = test_note("versions", 3, 3, "{\"text\":\"x\",\"lang\":\"de\",\"tone\":\"dry\"}");
    let header = Record::header(&v3).unwrap();
    let err = upcasters.upcast(&header, &v3).unwrap_err();
    assert!(err.is_build_skew());
    assert!(err.to_string().contains("UnknownRecordVersion") && err.to_string().contains("test-writer 3.0"), "{err}");
}

#[test]
fn r_ux_3_garbage_bytes_never_panic_and_are_typed() {
    for garbage in [&b""[..], b"{", b"null", b"{\"kind\":1}", b"\xff\xfe", b"{\"kind\":\"RunAdmitted\",\"v\":1}"] {
        let err = Record::decode_verified(garbage, &Upcasters::builtin()).unwrap_err();
        assert!(err.is_build_skew(), "{err:?}");
    }
}

/// Verifies a one-row run holding `bytes` under `hash` and returns the refusal.
fn single_row_refusal(run: &RunId, bytes: Vec<u8>, hash: ChainHash) -> JournalError {
    let row = StoredRecord {
        seq: 1,
        kind: "RunAdmitted".into(),
        effect_key: None,
        prev_hash: ChainHash::GENESIS,
        hash,
        bytes,
        signature: None,
    };
    let upcasters = Upcasters::builtin();
    let check = journal_core::ChainCheck {
        upcasters: &upcasters,
        verifier: None,
        options: journal_core::VerifyOptions::default(),
    };
    journal_core::verify_run(run, &[row], None, check).unwrap_err()
}

#[test]
fn r_chain_4_the_hash_is_checked_before_the_body_is_parsed() {
    // A row whose bytes were replaced by an unreadable shape, hash left as it
    // was: the reader reports damage (the hash), not a build skew (the shape),
    // because it never parses bytes the chain does not vouch for.
    let record = &golden_records().unwrap()[0];
    let bytes = record.encode().unwrap();
    let hash = ChainHash::link(&ChainHash::GENESIS, &bytes);
    let mut unreadable = bytes.clone();
    unreadable.extend_from_slice(b"garbage");
    let err = single_row_refusal(&record.run, unreadable, hash);
    assert!(err.is_tamper() && !err.is_build_skew(), "{err:?}");
}

#[test]
fn r_ver_1_r_ver_4_every_read_compares_the_version_and_skew_is_never_tamper() {
    // The same well-formed bytes, version bumped and rechained: the chain is
    // intact, so the refusal is build skew, with the writer and the remedy.
    let record = &golden_records().unwrap()[0];
    let ahead = with_field(&record.encode().unwrap(), "v", serde_json::json!(7));
    let hash = ChainHash::link(&ChainHash::GENESIS, &ahead);
    let err = single_row_refusal(&record.run, ahead, hash);
    assert!(err.is_build_skew() && !err.is_tamper(), "{err:?}");
    assert_eq!(err.class(), journal_core::ErrorClass::BuildSkew);
    assert!(err.to_string().contains("read it with agentplane-journal-core golden"), "{err}");
}

fn shape_refusal(bytes: &[u8]) -> JournalError {
    let err = Record::decode_verified(bytes, &Upcasters::builtin()).unwrap_err();
    assert!(
        matches!(&err, JournalError::BuildSkew(skew) if matches!(skew.as_ref(), BuildSkew::UnreadableRecordShape { .. })),
        "{err:?}"
    );
    err
}

/// R-VER-3: a field missing from a record is refused like an unknown one:
/// a budget whose ceiling is absent must not read as "unlimited", and an
/// envelope without its effect key or its time is not a record this build reads.
#[test]
fn r_ver_3_a_missing_field_is_refused_as_unreadable_shape_options_included() {
    let records = golden_records().unwrap();
    let admitted = String::from_utf8(records[0].encode().unwrap()).unwrap();
    assert!(admitted.contains("\"effects\":null,"), "{admitted}");
    shape_refusal(admitted.replacen("\"effects\":null,", "", 1).as_bytes());
    shape_refusal(admitted.replacen("\"tokens\":10000,", "", 1).as_bytes());
    shape_refusal(admitted.replacen("\"effect_key\":null,", "", 1).as_bytes());
    let at = admitted.find("\"at\":").unwrap();
    let end = admitted[at..].find(',').unwrap() + at + 1;
    shape_refusal(format!("{}{}", &admitted[..at], &admitted[end..]).as_bytes());
    let raised = String::from_utf8(records[8].encode().unwrap()).unwrap();
    shape_refusal(raised.replacen(",\"ceiling\":20000", "", 1).as_bytes());
}

/// The instant has one spelling: another spelling of the same instant is a
/// shape this build does not read (the bytes are hashed; two spellings would
/// be two histories of one moment).
#[test]
fn records_carry_their_instant_in_one_canonical_spelling() {
    let record = &golden_records().unwrap()[3];
    let bytes = record.encode().unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("\"at\":\"2026-01-01T00:00:00.750Z\""), "{text}");
    assert_eq!(Record::decode_verified(&bytes, &Upcasters::builtin()).unwrap().at, record.at);
    for other in [
        "2026-01-01T00:00:00.75Z",
        "2026-01-01T00:00:00.750+00:00",
        "2026-01-01 00:00:00.750Z",
        "1969-12-31T23:59:59.999Z",
    ] {
        shape_refusal(text.replace("2026-01-01T00:00:00.750Z", other).as_bytes());
    }
}

/// R-VER-4: the remedy names the binary that is running (not this library),
/// and still names the writer when the writer's `build` has fields this build
/// does not know.
#[test]
fn r_ver_4_the_remedy_names_the_running_binary_and_a_writer_ahead() {
    let record = &golden_records().unwrap()[2];
    let text = String::from_utf8(record.encode().unwrap()).unwrap();
    let ahead = text.replace("\"version\":\"golden\"}", "\"version\":\"9.0\",\"commit\":\"abc\"}").replacen(
        "\"body\":",
        "\"trace\":1,\"body\":",
        1,
    );
    let reader = Upcasters::builtin().read_by(journal_core::Build::new("agentplane-cli", "0.1.0"));
    let err = Record::decode_verified(ahead.as_bytes(), &reader).unwrap_err();
    let JournalError::BuildSkew(skew) = &err else { panic!("{err:?}") };
    let BuildSkew::UnreadableRecordShape { writer, remedy, .. } = skew.as_ref() else { panic!("{skew:?}") };
    assert_eq!(writer.as_ref().map(|w| w.to_string()).as_deref(), Some("agentplane-journal-core 9.0"));
    assert!(remedy.contains("read it with agentplane-journal-core 9.0"), "{remedy}");
    assert!(remedy.contains("not agentplane-cli 0.1.0"), "the running binary is named: {remedy}");
}

/// R-VER-4, R-CHAIN-5 (noted in session 19, fixed in session 20): bytes that
/// are no build's record (not JSON, or JSON without a kind and a version)
/// rechained so the hash matches were refused as build skew (exit 3: "run
/// the build that wrote it"), which let a rewrite of an unsigned chain pass
/// for a rolling deploy. They are tamper; a record a build did write, at a
/// version or shape this build does not read, stays build skew.
#[test]
fn r_ver_4_bytes_no_build_writes_rechained_are_tamper_not_build_skew() {
    let record = &golden_records().unwrap()[0];
    for bytes in [b"not a record".to_vec(), b"{\"hello\":1}".to_vec(), vec![0xff, 0x00, 0x7b]] {
        let hash = ChainHash::link(&ChainHash::GENESIS, &bytes);
        let err = single_row_refusal(&record.run, bytes.clone(), hash);
        assert!(err.is_tamper() && !err.is_build_skew(), "{:?}: {err:?}", String::from_utf8_lossy(&bytes));
        assert!(err.to_string().contains("no build's record"), "{err}");
    }
    let unknown_kind = with_field(&record.encode().unwrap(), "kind", serde_json::json!("RunTeleported"));
    let hash = ChainHash::link(&ChainHash::GENESIS, &unknown_kind);
    let err = single_row_refusal(&record.run, unknown_kind, hash);
    assert!(err.is_build_skew() && !err.is_tamper(), "a kind a newer build writes is skew: {err:?}");
}

/// The golden records as one run's stored rows, chained from genesis.
fn golden_rows() -> Vec<StoredRecord> {
    let mut prev = ChainHash::GENESIS;
    golden_records()
        .unwrap()
        .iter()
        .map(|record| {
            let row = StoredRecord::new(record, prev, None).unwrap();
            prev = row.hash;
            row
        })
        .collect()
}

fn verify_golden(rows: &[StoredRecord], head: Option<journal_core::ExpectedHead>) -> Result<(), JournalError> {
    let upcasters = Upcasters::builtin();
    let check = journal_core::ChainCheck {
        upcasters: &upcasters,
        verifier: None,
        options: journal_core::VerifyOptions::default(),
    };
    journal_core::verify_run(&golden_records().unwrap()[0].run, rows, head, check).map(drop)
}

/// R-VER-4, R-CHAIN-5: a record rewritten by someone with the store and no
/// key, its version raised and its own hash made to match, while the record
/// after it still links to the hash as written (or the runs table's head
/// still names the head as written), was refused as build skew (exit 3,
/// "read it with the build that wrote it"): the parse came before the rest
/// of the chain was held to it. The skew is only the reader's when the whole
/// chain and its recorded head vouch for the bytes; here they do not, and
/// the read says tamper.
#[test]
fn r_ver_4_a_version_raised_and_rechained_in_place_is_tamper_when_the_rest_of_the_chain_disagrees() {
    let rows = golden_rows();
    let head = rows.last().map(|row| journal_core::ExpectedHead { seq: row.seq, hash: row.hash });
    assert!(verify_golden(&rows, head).is_ok());
    // Record 3 raised to v7 and rechained alone: record 4 no longer links.
    let mut forged = rows.clone();
    forged[2].bytes = with_field(&forged[2].bytes, "v", serde_json::json!(7));
    forged[2].hash = ChainHash::link(&forged[2].prev_hash, &forged[2].bytes);
    let err = verify_golden(&forged, head).unwrap_err();
    assert!(err.is_tamper() && !err.is_build_skew(), "{err:?}");
    assert!(matches!(err, JournalError::Tamper { seq: 4, kind: journal_core::TamperKind::BrokenLink, .. }), "{err:?}");
    // The last record raised and rechained: the recorded head disagrees.
    let mut forged = rows.clone();
    let last = forged.len() - 1;
    forged[last].bytes = with_field(&forged[last].bytes, "v", serde_json::json!(7));
    forged[last].hash = ChainHash::link(&forged[last].prev_hash, &forged[last].bytes);
    let err = verify_golden(&forged, head).unwrap_err();
    assert!(err.is_tamper() && !err.is_build_skew(), "{err:?}");
    // The same forgery with every later link and the head made to agree is
    // indistinguishable from a newer writer: build skew, as R-VER-4 says.
    let head = forged.last().map(|row| journal_core::ExpectedHead { seq: row.seq, hash: row.hash });
    let err = verify_golden(&forged, head).unwrap_err();
    assert!(err.is_build_skew(), "{err:?}");
}
