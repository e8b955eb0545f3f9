//! How a backend keeps a record's bytes (issue 25; redb's records table of
//! layout 2, PostgreSQL's rows of schema 5 on): one tag byte, then the bytes
//! as written (`PLAIN`) or compressed by zstd against a dictionary frozen
//! into this crate (`ZSTD_DICTIONARY_1`).
//! The chain, the signatures, the audit and every export see the bytes as
//! written: compression is only how they lie on disk.
//!
//! The dictionary is raw content (one record of each kind, from the golden
//! corpus), so what it shares with a record (field names, kinds, the build
//! stanza) costs a few bits. A dictionary is never changed once a file may
//! hold rows compressed against it (a test pins its hash): a better one
//! would come in under a new tag, beside this one.

use std::cell::RefCell;
use std::sync::OnceLock;

/// The bytes follow as written.
const PLAIN: u8 = 0;
/// A zstd frame follows, compressed against [`DICTIONARY_1`].
const ZSTD_DICTIONARY_1: u8 = 1;

/// The frozen dictionary of tag 1.
pub const DICTIONARY_1: &[u8] = include_bytes!("records-dictionary-1.txt");

/// zstd's level for records: its default, about 2 µs a record here; higher
/// levels gained a few percent of size for twice the time and more.
const LEVEL: i32 = 3;

/// The largest record this encoding compresses, and so the most a stored
/// frame may decompress to: a frame claiming more is damage, never an
/// allocation. Larger records are kept plain.
pub const MAX_COMPRESSED_RECORD: usize = 1 << 30;

/// The most a frame may decompress to per byte of it, past
/// [`EXPANSION_ALLOWANCE`]: a record that compresses better is kept plain.
/// zstd turns four bytes into 128 KiB of one repeated byte, so without this
/// a forged row of 32 KiB would decompress to 1 GiB, and a run of a few
/// such rows would take every reader's memory. Records compress about 2.6
/// to 1 against the dictionary.
const MAX_EXPANSION: usize = 64;
/// What any frame may decompress to whatever its size (short records,
/// which the dictionary shrinks most).
const EXPANSION_ALLOWANCE: usize = 4096;

/// The most a frame of `frame_len` bytes may decompress to.
fn decompressed_limit(frame_len: usize) -> usize {
    frame_len.saturating_mul(MAX_EXPANSION).saturating_add(EXPANSION_ALLOWANCE).min(MAX_COMPRESSED_RECORD)
}

fn encoder_dictionary() -> &'static zstd::dict::EncoderDictionary<'static> {
    static DICTIONARY: OnceLock<zstd::dict::EncoderDictionary<'static>> = OnceLock::new();
    DICTIONARY.get_or_init(|| zstd::dict::EncoderDictionary::copy(DICTIONARY_1, LEVEL))
}

fn decoder_dictionary() -> &'static zstd::dict::DecoderDictionary<'static> {
    static DICTIONARY: OnceLock<zstd::dict::DecoderDictionary<'static>> = OnceLock::new();
    DICTIONARY.get_or_init(|| zstd::dict::DecoderDictionary::copy(DICTIONARY_1))
}

thread_local! {
    // A context per thread, made once: making one costs more than
    // compressing a record.
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// `bytes` as a backend stores them: compressed when that is smaller.
pub fn encode(bytes: &[u8]) -> Vec<u8> {
    if bytes.len() <= MAX_COMPRESSED_RECORD
        && let Some(frame) = compress(bytes)
        && frame.len() < bytes.len()
        && bytes.len() <= decompressed_limit(frame.len())
    {
        let mut out = Vec::with_capacity(frame.len() + 1);
        out.push(ZSTD_DICTIONARY_1);
        out.extend_from_slice(&frame);
        return out;
    }
    let mut out = Vec::with_capacity(bytes.len() + 1);
    out.push(PLAIN);
    out.extend_from_slice(bytes);
    out
}

/// zstd's frame for `bytes`, or `None` if zstd failed (the record is then
/// kept plain: a failure to save space never fails an append).
fn compress(bytes: &[u8]) -> Option<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            let mut compressor = zstd::bulk::Compressor::with_prepared_dictionary(encoder_dictionary()).ok()?;
            // The frame names its decompressed size (which `decode` bounds);
            // the dictionary is known by the tag, and the chain hash already
            // checks the bytes.
            compressor.include_contentsize(true).ok()?;
            compressor.include_dictid(false).ok()?;
            compressor.include_checksum(false).ok()?;
            *cell = Some(compressor);
        }
        cell.as_mut()?.compress(bytes).ok()
    })
}

/// Why stored bytes do not decode.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// No tag byte.
    #[error("a stored record is empty: an encoded record starts with its encoding's tag")]
    Empty,
    /// A tag this build does not know.
    #[error("a stored record has the unknown encoding tag {0}: written by a newer build, or damaged")]
    UnknownTag(u8),
    /// A frame that does not name its size, or names more than the bound.
    #[error(
        "a stored record's zstd frame does not name its size, or names more than this encoding ever writes \
         ({MAX_EXPANSION} bytes per byte of frame, past {EXPANSION_ALLOWANCE}; {MAX_COMPRESSED_RECORD} at most)"
    )]
    Unbounded,
    /// A frame zstd refuses.
    #[error("a stored record's zstd frame does not decompress: {0}")]
    Corrupt(std::io::Error),
}

/// The record's bytes as written, from what [`encode`] stored.
pub fn decode(stored: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let (&tag, rest) = stored.split_first().ok_or(DecodeError::Empty)?;
    match tag {
        PLAIN => Ok(rest.to_vec()),
        ZSTD_DICTIONARY_1 => {
            let size = match zstd::zstd_safe::get_frame_content_size(rest) {
                Ok(Some(size)) if size <= decompressed_limit(rest.len()) as u64 => size as usize,
                _ => return Err(DecodeError::Unbounded),
            };
            DECOMPRESSOR.with(|cell| {
                let mut cell = cell.borrow_mut();
                let decompressor = match cell.as_mut() {
                    Some(decompressor) => decompressor,
                    None => cell.insert(
                        zstd::bulk::Decompressor::with_prepared_dictionary(decoder_dictionary())
                            .map_err(DecodeError::Corrupt)?,
                    ),
                };
                let bytes = decompressor.decompress(rest, size).map_err(DecodeError::Corrupt)?;
                if bytes.len() != size {
                    return Err(DecodeError::Corrupt(std::io::Error::other(format!(
                        "the frame names {size} bytes and holds {}",
                        bytes.len()
                    ))));
                }
                Ok(bytes)
            })
        }
        other => Err(DecodeError::UnknownTag(other)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The dictionary is part of the file format: rows compressed against
    /// it must decompress with every later build (issue 25).
    #[test]
    fn the_dictionary_of_tag_1_never_changes() {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(DICTIONARY_1);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "688227cd1a997b24d4efdcb66941977f3d6b09704d15b97e21105b01ecfbac36");
    }

    #[test]
    fn records_round_trip_and_shrink() {
        let record = br#"{"kind":"EffectFinished","v":1,"run":"run-0019c4cfb9c951a6b927205a","seq":6,"at":"2026-12-03T16:14:38.150Z","effect_key":"ek:1","build":{"name":"agentplane-journal-core","version":"0.1.0"},"body":{"step":"work","result":{"Ok":{"output":"the answer"}},"charged":{"tokens":100,"cost_micros":250,"steps":0,"effects":1,"wall_millis":40}}}"#;
        let stored = encode(record);
        assert_eq!(stored.first(), Some(&ZSTD_DICTIONARY_1));
        assert!(stored.len() * 2 < record.len(), "{} stored for {}", stored.len(), record.len());
        assert_eq!(decode(&stored).ok().as_deref(), Some(&record[..]));
    }

    #[test]
    fn incompressible_and_empty_records_are_kept_plain() {
        for record in [&b""[..], b"x", &[0xff, 0x00, 0x7f, 0x13, 0x99][..]] {
            let stored = encode(record);
            assert_eq!(stored.first(), Some(&PLAIN));
            assert_eq!(decode(&stored).ok().as_deref(), Some(record));
        }
    }

    /// A forged row never allocates what its frame claims, and every bad
    /// row is an error, never a panic.
    #[test]
    fn forged_rows_are_errors() {
        assert!(matches!(decode(b""), Err(DecodeError::Empty)));
        assert!(matches!(decode(&[9, 1, 2]), Err(DecodeError::UnknownTag(9))));
        assert!(matches!(decode(&[ZSTD_DICTIONARY_1, 1, 2, 3]), Err(DecodeError::Unbounded)));
        // A frame header claiming 2^40 bytes: magic, then a descriptor of
        // one segment with an 8-byte content size, then the size.
        let mut huge = vec![ZSTD_DICTIONARY_1, 0x28, 0xb5, 0x2f, 0xfd, 0xe0];
        huge.extend_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(matches!(decode(&huge), Err(DecodeError::Unbounded)));
        let mut stored = encode(&[b'a'; 4096]);
        let truncated = stored.len() / 2;
        stored.truncate(truncated);
        assert!(matches!(decode(&stored), Err(DecodeError::Corrupt(_))), "a cut frame");
    }

    /// A decompression bomb (found by the layout review): a genuine frame
    /// of a few KiB that names 64 MiB is refused before anything is
    /// allocated for it; and a record that compresses that well is kept
    /// plain, so no frame this encoding writes is ever refused.
    #[test]
    fn a_frame_expanding_past_the_bound_is_refused_and_never_written() {
        let bomb = zstd::bulk::compress(&vec![b'a'; 64 << 20], 3).unwrap();
        assert!(bomb.len() < 64 << 10, "{}", bomb.len());
        let mut stored = vec![ZSTD_DICTIONARY_1];
        stored.extend_from_slice(&bomb);
        assert!(matches!(decode(&stored), Err(DecodeError::Unbounded)));
        let repetitive = vec![b' '; 1 << 20];
        let kept = encode(&repetitive);
        assert_eq!(kept.first(), Some(&PLAIN));
        assert_eq!(decode(&kept).unwrap(), repetitive);
    }
}
