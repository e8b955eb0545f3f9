//! The high-water mark beside the state (R-WIT-6): a small file,
//! `<state>.highwater`, holding the latest checkpoint cosigned for each
//! origin (its size, root and the cosigned note served to readers), written
//! durably after every commit that moves a tree and before any answer of
//! that commit leaves. It is the witness's memory of what it answered; the
//! state (the redb file) is its working copy, committed without a flush and
//! flushed now and then and at shutdown. At start the larger of the two is
//! taken for every origin: a state replaced by an older copy of itself (a
//! backup restored, a file copied back), lost, or behind after a crash is
//! brought forward to the mark (and the restore logged), so the witness
//! never cosigns a fork of what it answered; two roots for one size are
//! damage and refused. What the mark cannot see: the state and the mark
//! restored together.
//!
//! The file is two slots of equal size, each a header (magic, a counter, the
//! content's length, the SHA-256 of those and the content) and the content.
//! A write overwrites the older slot in place and flushes its data
//! (`fdatasync`): one flush a commit, as the state alone took before it had
//! a mark (a mark written aside and renamed over, beside a flushed two-phase
//! state commit, took four, and measured 0.14 of litewitness's rate at one
//! client where one flush measures over 2). A write torn by a
//! crash damages only the slot it wrote, whose commit was never answered;
//! the other slot holds every checkpoint answered before it. The file is
//! made (written aside, flushed, renamed, its directory flushed) only when
//! there is none or its slots have grown too small.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use tlog::{RootHash, Tree};

/// The latest checkpoint cosigned for an origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Latest {
    pub(crate) tree: Tree,
    /// The checkpoint with its signatures and the witness's cosignatures,
    /// as served to readers.
    pub(crate) note: String,
}

/// Origin -> the latest checkpoint cosigned for it.
pub(crate) type Held = BTreeMap<String, Latest>;

/// The largest mark read: two slots, each an entry per log (a note is at
/// most a request body, 16 KiB).
const MAX_MARK_BYTES: u64 = 256 << 20;
const MAGIC: &[u8; 8] = b"APWMARK1";
/// Magic, counter, content length, SHA-256.
const HEADER_BYTES: usize = 8 + 8 + 4 + 32;
/// Slots are whole pages, at least one.
const PAGE: u64 = 4096;

/// The mark's path: the state's, with `.highwater` added.
pub(crate) fn path_for(state: &Path) -> PathBuf {
    let mut path = state.as_os_str().to_owned();
    path.push(".highwater");
    PathBuf::from(path)
}

/// The mark on disk: where it is, its slots' size, the counter of its
/// newest slot and which slot that is (0 or 1): the next write goes to the
/// other, never over the newest.
#[derive(Debug)]
pub(crate) struct MarkFile {
    path: PathBuf,
    slot_bytes: u64,
    counter: u64,
    newest: u64,
}

/// Reads the mark: what it holds and the file to write it again, `None`
/// when there is none.
pub(crate) fn read(path: &Path) -> Result<Option<(Held, MarkFile)>, String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("reading the high-water mark {}: {err}", path.display())),
    };
    let mut bytes = Vec::new();
    file.take(MAX_MARK_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("reading the high-water mark {}: {err}", path.display()))?;
    let damaged = || format!("the high-water mark {} is damaged", path.display());
    let len = bytes.len() as u64;
    if len > MAX_MARK_BYTES {
        return Err(format!("the high-water mark {} is larger than {MAX_MARK_BYTES} bytes", path.display()));
    }
    if len == 0 || !len.is_multiple_of(2 * PAGE) {
        return Err(damaged());
    }
    let slot_bytes = len / 2;
    let (first, second) = bytes.split_at(bytes.len() / 2);
    let newest = [slot(first), slot(second)]
        .into_iter()
        .zip(0u64..)
        .filter_map(|(slot, at)| slot.map(|(counter, content)| (counter, content, at)))
        .max_by_key(|(counter, ..)| *counter);
    let Some((counter, content, newest)) = newest else { return Err(damaged()) };
    let held = decode(content).ok_or_else(damaged)?;
    Ok(Some((held, MarkFile { path: path.to_owned(), slot_bytes, counter, newest })))
}

/// A slot's content: for each origin, its length (u32 LE) and bytes, the
/// size (u64 LE), the root (32 bytes), the note's length (u32 LE) and bytes.
fn decode(mut content: &[u8]) -> Option<Held> {
    fn take<'a>(content: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (taken, rest) = content.split_at_checked(n)?;
        *content = rest;
        Some(taken)
    }
    fn text(content: &mut &[u8]) -> Option<String> {
        let len = usize::try_from(u32::from_le_bytes(take(content, 4)?.try_into().ok()?)).ok()?;
        String::from_utf8(take(content, len)?.to_vec()).ok()
    }
    let mut held = Held::new();
    while !content.is_empty() {
        let origin = text(&mut content)?;
        let size = u64::from_le_bytes(take(&mut content, 8)?.try_into().ok()?);
        let root = RootHash::from_hash_bytes(take(&mut content, 32)?.try_into().ok()?);
        let note = text(&mut content)?;
        if held.insert(origin, Latest { tree: Tree::new(size, root), note }).is_some() {
            return None;
        }
    }
    Some(held)
}

/// A slot's counter and content, `None` when its header or checksum does
/// not hold (never written, or a write torn by a crash).
fn slot(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (header, rest) = bytes.split_at_checked(HEADER_BYTES)?;
    let (magic, header) = header.split_at_checked(MAGIC.len())?;
    let (counter, header) = header.split_at_checked(8)?;
    let (length_raw, digest) = header.split_at_checked(4)?;
    let length = usize::try_from(u32::from_le_bytes(length_raw.try_into().ok()?)).ok()?;
    let content = rest.get(..length)?;
    (magic == MAGIC && digest == checksum(counter, length_raw, content).as_slice())
        .then_some((u64::from_le_bytes(counter.try_into().ok()?), content))
}

fn length_bytes(content: &[u8]) -> Option<[u8; 4]> {
    Some(u32::try_from(content.len()).ok()?.to_le_bytes())
}

fn checksum(counter: &[u8], length: &[u8], content: &[u8]) -> [u8; 32] {
    Sha256::new().chain_update(MAGIC).chain_update(counter).chain_update(length).chain_update(content).finalize().into()
}

/// `held` as a slot numbered `counter`.
fn encode(counter: u64, held: &Held) -> std::io::Result<Vec<u8>> {
    let too_large = || std::io::Error::other("the high-water mark would exceed 4 GiB");
    let mut content = Vec::new();
    for (origin, latest) in held {
        content.extend_from_slice(&length_bytes(origin.as_bytes()).ok_or_else(too_large)?);
        content.extend_from_slice(origin.as_bytes());
        content.extend_from_slice(&latest.tree.size.to_le_bytes());
        content.extend_from_slice(latest.tree.root.as_bytes());
        content.extend_from_slice(&length_bytes(latest.note.as_bytes()).ok_or_else(too_large)?);
        content.extend_from_slice(latest.note.as_bytes());
    }
    let length = length_bytes(&content).ok_or_else(too_large)?;
    let counter = counter.to_le_bytes();
    let mut slot = Vec::with_capacity(HEADER_BYTES + content.len());
    slot.extend_from_slice(MAGIC);
    slot.extend_from_slice(&counter);
    slot.extend_from_slice(&length);
    slot.extend_from_slice(&checksum(&counter, &length, &content));
    slot.extend_from_slice(&content);
    Ok(slot)
}

/// The size of each slot of a mark whose newest slot takes `needed` bytes:
/// room to grow (twice what is needed, in whole pages), but never a file
/// larger than `limit`, the most [`read`] takes back at start (a mark the
/// witness wrote and then refused to start on). `None` when even the
/// slots `needed` asks for exceed it.
fn slot_bytes_for(needed: u64, limit: u64) -> Option<u64> {
    let largest = limit / 2 / PAGE * PAGE;
    let roomy = needed.checked_mul(2)?.div_ceil(PAGE).max(1).checked_mul(PAGE)?;
    let slot_bytes = roomy.min(largest);
    (needed <= slot_bytes).then_some(slot_bytes)
}

/// The file `path` names, following links to their end (whether that file
/// exists or not); a loop of links is an error.
fn through_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut path = path.to_owned();
    // As many links as the system itself follows in one path.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&path)?;
                // Relative to the link's folder; an absolute link replaces it.
                path = path.parent().map_or_else(|| link.clone(), |dir| dir.join(&link));
            }
            Ok(_) => return Ok(path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(path),
            Err(err) => return Err(err),
        }
    }
    Err(std::io::Error::other(format!("{}: a loop of links", path.display())))
}

impl MarkFile {
    /// Makes the mark at `path` holding `held`: written aside, flushed,
    /// renamed over whatever is there, the directory flushed.
    pub(crate) fn create(path: &Path, held: &Held) -> std::io::Result<Self> {
        Self::create_after(path, held, 0)
    }

    fn create_after(path: &Path, held: &Held, counter: u64) -> std::io::Result<Self> {
        let counter = counter + 1;
        let slot = encode(counter, held)?;
        let slot_bytes = slot_bytes_for(slot.len() as u64, MAX_MARK_BYTES).ok_or_else(|| {
            std::io::Error::other(format!(
                "the high-water mark would hold {} bytes, more than the {MAX_MARK_BYTES} a start reads back: \
                 serve fewer logs from this witness",
                2 * slot.len()
            ))
        })?;
        // Made where a link at the mark's place points (a mark kept on
        // another disk): renamed over the link, the file linked to would
        // keep the older trees, and be read again once the link is put back
        // (review 46). Writes into the slots go through the link already.
        let path = &through_links(path)?;
        let mut aside = path.as_os_str().to_owned();
        aside.push(".new");
        let aside = PathBuf::from(aside);
        // A link left at the temporary name is removed, never written
        // through: the file is created anew (review 35's note).
        if let Err(err) = std::fs::remove_file(&aside)
            && err.kind() != std::io::ErrorKind::NotFound
        {
            return Err(err);
        }
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&aside)?;
        file.write_all(&slot)?;
        file.set_len(2 * slot_bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&aside, path)?;
        let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::File::open(dir)?.sync_all()?;
        Ok(Self { path: path.to_owned(), slot_bytes, counter, newest: 0 })
    }

    /// Replaces what the mark holds with `held`, durably, in the slot the
    /// newest does not occupy (the file made again when there is none, or
    /// `held` outgrew its slots).
    pub(crate) fn write(&mut self, held: &Held) -> std::io::Result<()> {
        let counter = self.counter + 1;
        let slot = encode(counter, held)?;
        if slot.len() as u64 > self.slot_bytes {
            *self = Self::create_after(&self.path, held, self.counter)?;
            return Ok(());
        }
        let file = match std::fs::OpenOptions::new().write(true).open(&self.path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                *self = Self::create_after(&self.path, held, self.counter)?;
                return Ok(());
            }
            Err(err) => return Err(err),
        };
        // A file shorter than both slots is not ours to write into.
        if file.metadata()?.len() != 2 * self.slot_bytes {
            drop(file);
            *self = Self::create_after(&self.path, held, self.counter)?;
            return Ok(());
        }
        // The slot the newest does not occupy (not the counter's parity: the
        // file is made with its one slot first, whatever its counter).
        let other = 1 - self.newest;
        file.write_all_at(&slot, other * self.slot_bytes)?;
        file.sync_data()?;
        self.counter = counter;
        self.newest = other;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn latest(size: u64) -> Latest {
        Latest { tree: Tree::new(size, RootHash::from_hash_bytes([size as u8; 32])), note: format!("note\n{size}\n") }
    }

    fn held(size: u64) -> Held {
        Held::from([("example.com/log".to_owned(), latest(size))])
    }

    /// R-WIT-6 (review 35's note): a link planted at the mark's temporary
    /// name is never written through when the mark is made.
    #[cfg(unix)]
    #[test]
    fn r_wit_6_a_link_at_the_mark_s_temporary_name_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.highwater");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("state.highwater.new")).unwrap();
        MarkFile::create(&path, &held(5)).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file(), "the mark is a file of its own");
        assert_eq!(read(&path).unwrap().unwrap().0, held(5));
    }

    /// A write torn by a crash damages its slot only: the mark reads as the
    /// write before it, which every answered tree is in.
    #[test]
    fn r_wit_6_a_torn_write_leaves_the_slot_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.highwater");
        let mut mark = MarkFile::create(&path, &held(5)).unwrap();
        mark.write(&held(8)).unwrap();
        mark.write(&held(9)).unwrap();
        assert_eq!(read(&path).unwrap().unwrap().0, held(9));
        // The newest slot (counter 3) torn: one content byte changed.
        let mut bytes = std::fs::read(&path).unwrap();
        let slot_bytes = mark.slot_bytes as usize;
        let at = mark.newest as usize * slot_bytes + HEADER_BYTES + 2;
        bytes[at] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(read(&path).unwrap().unwrap().0, held(8));
        // Both slots damaged: refused, never read as empty.
        bytes[(1 - mark.newest as usize) * slot_bytes + HEADER_BYTES + 2] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(read(&path).unwrap_err().contains("damaged"));
        std::fs::write(&path, b"").unwrap();
        assert!(read(&path).unwrap_err().contains("damaged"));
    }

    /// R-WIT-6, attack: a crash tears the first write after the mark was
    /// made (at the first start, or when it outgrew its slots). The mark was
    /// made with its one slot at the front and the next write went by the
    /// counter's parity to that same slot, overwriting the only slot holding
    /// every checkpoint answered: torn, neither slot read and the witness
    /// refused to start after an honest crash (its remedy, removing the mark,
    /// lets the state it had not flushed be trusted). A write goes to the
    /// slot the newest does not occupy.
    #[test]
    fn r_wit_6_a_torn_first_write_after_the_mark_is_made_leaves_the_slot_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.highwater");
        let many: Held = (0..200u64).map(|n| (format!("example.com/log-{n}"), latest(n))).collect();
        // Made at a first start, and made again when the mark outgrew its slots.
        for made_after in [None, Some(many)] {
            let mut mark = MarkFile::create(&path, &held(5)).unwrap();
            if let Some(many) = &made_after {
                mark.write(&held(6)).unwrap();
                mark.write(many).unwrap();
            }
            let before = read(&path).unwrap().unwrap().0;
            let pristine = std::fs::read(&path).unwrap();
            mark.write(&held(8)).unwrap();
            assert_eq!(read(&path).unwrap().unwrap().0, held(8));
            // The write just made, torn: each byte it changed put back.
            let written = std::fs::read(&path).unwrap();
            let changed: Vec<usize> = (0..written.len()).filter(|&at| written[at] != pristine[at]).collect();
            let mut torn = written.clone();
            torn[changed[0]] = pristine[changed[0]];
            std::fs::write(&path, &torn).unwrap();
            let after_crash = read(&path);
            assert!(
                matches!(&after_crash, Ok(Some((held, _))) if *held == before),
                "made again: {}: {after_crash:?}",
                made_after.is_some()
            );
        }
    }

    /// A mark is never made larger than a start reads back: the slots stop
    /// growing at the limit, and content that would not fit even then is
    /// refused (the write fails, its answers are 500s) rather than written
    /// into a file the next start refuses.
    #[test]
    fn r_wit_6_a_mark_is_never_made_larger_than_a_start_reads() {
        let limit = 64 * PAGE;
        assert_eq!(slot_bytes_for(100, limit), Some(PAGE));
        assert_eq!(slot_bytes_for(10 * PAGE, limit), Some(20 * PAGE));
        assert_eq!(slot_bytes_for(20 * PAGE, limit), Some(32 * PAGE), "capped at half the limit");
        assert_eq!(slot_bytes_for(32 * PAGE, limit), Some(32 * PAGE));
        assert_eq!(slot_bytes_for(32 * PAGE + 1, limit), None);
        assert_eq!(slot_bytes_for(u64::MAX, limit), None);
        let (largest, max) = (slot_bytes_for(MAX_MARK_BYTES / 2, MAX_MARK_BYTES), MAX_MARK_BYTES / 2);
        assert!(largest.is_some_and(|slot| 2 * slot <= MAX_MARK_BYTES) && largest == Some(max));
    }

    /// R-WIT-6 (review 46): a mark kept on another disk through a link at
    /// its place is made again where the link points when its trees outgrow
    /// its slots. Renamed over the link, the mark became a file beside the
    /// state while the file linked to kept the older trees; the link put
    /// back (as configuration management does), the next start read them,
    /// and a state behind after a crash was brought forward to them only.
    #[cfg(unix)]
    #[test]
    fn r_wit_6_a_mark_kept_through_a_link_is_made_again_where_the_link_points() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let target = elsewhere.path().join("state.highwater");
        MarkFile::create(&target, &held(1)).unwrap();
        let path = dir.path().join("state.highwater");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let (_, mut mark) = read(&path).unwrap().unwrap();
        let many: Held = (0..200u64).map(|n| (format!("example.com/log-{n}"), latest(n))).collect();
        mark.write(&many).unwrap();
        assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink(), "the link is still a link");
        assert_eq!(read(&target).unwrap().unwrap().0, many, "the file linked to holds the trees");
        mark.write(&held(2)).unwrap();
        assert_eq!(read(&target).unwrap().unwrap().0, held(2));
    }

    /// Held trees that outgrow the slots make the file again, larger.
    #[test]
    fn r_wit_6_a_mark_that_outgrows_its_slots_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.highwater");
        let mut mark = MarkFile::create(&path, &held(1)).unwrap();
        let many: Held = (0..200u64).map(|n| (format!("example.com/log-{n}"), latest(n))).collect();
        mark.write(&many).unwrap();
        assert!(mark.slot_bytes > PAGE);
        assert_eq!(read(&path).unwrap().unwrap().0, many);
        mark.write(&held(2)).unwrap();
        assert_eq!(read(&path).unwrap().unwrap().0, held(2));
    }
}
