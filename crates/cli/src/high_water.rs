//! The plane's high-water mark: the last tree it signed per origin, kept in
//! a file beside its key file, never in the store (issue 22). A store put
//! back from a backup brings its own record of what the plane signed back
//! with it; this file stays where it is, so signing from an older store is
//! refused ([`journal_core::log::sign_head`]).
//!
//! ```text
//! # agentplane high-water mark: ...
//! <origin> <size> <root hex> <log key>    (the last tree signed for that origin)
//! <origin> never <log key>                (nothing signed yet)
//! ```
//!
//! The log key (its verifier key) is the key the line was kept for: a key
//! file copied beside another plane's mark (every `init` gives the tenant
//! `default` one origin) is held to nothing that key signed, so a line kept
//! for another key signs nothing (review 54). A line written before the key
//! was kept (without it) is read as it is, and gets the key when raised.
//!
//! An origin with no line (or no file at all) is lost: the plane then asks
//! its witnesses before it signs again, and with no witness configured it
//! signs nothing until the operator writes the line back. An origin with two
//! lines is damage, as a line that does not parse is: nothing is signed
//! until one line is left.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use journal_core::Origin;

use crate::keys::PlaneKeys;
use journal_core::log::{HighWater, HighWaterError, HighWaterMark, Raised};
use tlog::{RootHash, Tree};

const HEADER: &str = "# agentplane high-water mark: the last tree this plane signed per origin.\n\
# Keep it beside the key file; never put an older copy back (it is what catches an older store put back).\n";

/// The largest high-water file read: twice the largest key file read (a
/// signed line, naming its origin twice, once in its log key, is at most
/// twice that key's line in the key file), and room for lines of origins
/// no longer in the key file.
const MAX_FILE_BYTES: u64 = 4 * crate::keys::MAX_KEY_FILE_BYTES;

/// The high-water file of the key file at `keys`.
pub fn path_beside(keys: &Path) -> PathBuf {
    keys.with_extension("highwater")
}

/// The mark in a file.
pub struct FileHighWater {
    path: PathBuf,
    lock: Mutex<()>,
    /// The log key that signs each origin here (origin, verifier key):
    /// a line kept for another key is refused.
    keys: Vec<(String, String)>,
}

enum Entry {
    Never,
    Signed(Tree),
}

/// One origin's line: what it says, and the log key it was kept for (none
/// in a line written before the key was kept).
struct Line {
    origin: String,
    entry: Entry,
    key: Option<String>,
}

/// The verifier key of each log key in `keys`, by origin.
fn log_keys(keys: &PlaneKeys) -> Vec<(String, String)> {
    keys.origins()
        .iter()
        .filter_map(|origin| keys.log_for(origin).ok().map(|log| (origin.to_string(), log.verifier_key().to_string())))
        .collect()
}

impl FileHighWater {
    /// The mark kept at `path`.
    pub fn at(path: PathBuf) -> Self {
        Self { path, lock: Mutex::new(()), keys: Vec::new() }
    }

    /// The mark beside the key file at `path`, held to the log keys it
    /// holds (`keys`): a line kept for another key is refused.
    pub fn beside(path: &Path, keys: &PlaneKeys) -> Self {
        Self { keys: log_keys(keys), ..Self::at(path_beside(path)) }
    }

    /// The log key that signs `origin` here, when known.
    fn key_of(&self, origin: &str) -> Option<&str> {
        self.keys.iter().find(|(o, _)| o == origin).map(|(_, key)| key.as_str())
    }

    /// Writes a new mark in which nothing is signed yet for the origins of
    /// `keys`, each line naming its log key (`init`, `keygen`); refuses to
    /// overwrite one.
    pub fn create(path: &Path, keys: &PlaneKeys) -> Result<(), HighWaterError> {
        let path = path_beside(path);
        let mut body = HEADER.to_owned();
        for (origin, key) in log_keys(keys) {
            body.push_str(&format!("{origin} never {key}\n"));
        }
        // Whole or not at all: a half-written mark would read as lost.
        crate::output::write_new(&path, body.as_bytes(), false).map_err(|err| io(&path, &err))
    }

    /// Whether the mark at `path` says that nothing was signed (a line
    /// `ORIGIN never` for each origin it names): what `init` and `keygen`
    /// write before the key file, so no key signed anything it marks.
    pub fn says_nothing_signed(path: &Path) -> Result<bool, HighWaterError> {
        let lines = Self::at(path.to_path_buf()).read()?;
        Ok(lines.is_some_and(|lines| lines.iter().all(|line| matches!(line.entry, Entry::Never))))
    }

    fn read(&self) -> Result<Option<Vec<Line>>, HighWaterError> {
        let damaged = |line: usize, reason: &str| HighWaterError::Damaged {
            path: self.path.display().to_string(),
            reason: format!("line {line}: {reason}"),
        };
        let too_large = || damaged(0, "the file is larger than any high-water mark (4 MiB): not the plane's");
        match std::fs::metadata(&self.path) {
            // Opening a FIFO would wait for a writer; a device may never end.
            Ok(meta) if !meta.is_file() => return Err(damaged(0, "not a regular file: not the plane's")),
            Ok(meta) if meta.len() > MAX_FILE_BYTES => return Err(too_large()),
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(io(&self.path, &err)),
        }
        // Bounded again as it is read: the file may have grown since.
        let bytes = match crate::context::read_at_most(&self.path, MAX_FILE_BYTES) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) if err.kind() == std::io::ErrorKind::FileTooLarge => return Err(too_large()),
            Err(err) => return Err(io(&self.path, &err)),
        };
        let text = String::from_utf8(bytes).map_err(|_| damaged(0, "the file is not UTF-8: not the plane's"))?;
        let mut entries = Vec::new();
        let mut origins = std::collections::HashSet::new();
        let own: std::collections::HashSet<&str> = self.keys.iter().map(|(_, key)| key.as_str()).collect();
        for (i, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            // The key column is quoted in an `OtherKey` refusal: one edited
            // by hand to anything but a verifier key is damage, named by its
            // line, never quoted (review 59's note).
            // One of the plane's own log keys is one by construction: only
            // another is parsed (a point decompressed each, every line of
            // every read, three reads a signature; R-LOG-2).
            let key_column = |key: Option<&str>| match key {
                Some(key) if !own.contains(key) && witness::VerifierKey::parse(key).is_err() => {
                    Err(damaged(i, "the log key is not a verifier key NAME+KEYID+BASE64"))
                }
                key => Ok(key.map(str::to_owned)),
            };
            let signed = |origin: &str, size: &str, root: &str, key: Option<&str>| {
                let size = size.parse::<u64>().map_err(|_| damaged(i, "the size is not a number"))?;
                let root = RootHash::from_hex(root).map_err(|_| damaged(i, "the root is not 64 hex digits"))?;
                Ok(Line {
                    origin: origin.to_owned(),
                    entry: Entry::Signed(Tree::new(size, root)),
                    key: key_column(key)?,
                })
            };
            let never = |origin: &str, key: Option<&str>| {
                Ok::<_, HighWaterError>(Line { origin: origin.to_owned(), entry: Entry::Never, key: key_column(key)? })
            };
            let line = match words.as_slice() {
                [origin, "never"] => never(origin, None)?,
                [origin, "never", key] => never(origin, Some(key))?,
                [origin, size, root] => signed(origin, size, root, None)?,
                [origin, size, root, key] => signed(origin, size, root, Some(key))?,
                _ => return Err(damaged(i, "expected `ORIGIN SIZE ROOT LOG_KEY` or `ORIGIN never LOG_KEY`")),
            };
            // The plane writes one line per origin: a second one (two copies
            // joined, a line added by hand) leaves which tree it signed last
            // to the order of the lines, and an older line read first let an
            // older store be signed again (review 28). A set, not a search of
            // the lines before: a hostile file of 100,000 lines is then
            // checked in linear time.
            if !origins.insert(line.origin.clone()) {
                return Err(damaged(
                    i,
                    &format!(
                        "a second line for {}: the plane writes one line per origin; keep only the line of the \
                         newest checkpoint it signed for that origin, then sign again",
                        line.origin
                    ),
                ));
            }
            entries.push(line);
        }
        Ok(Some(entries))
    }

    /// The file the mark's bytes are in: its path, or where a link there
    /// points (followed to the end, whether that file exists or not). A
    /// mark moved elsewhere with a link left in its place, or one file
    /// shared through links by every process and host signing with the key,
    /// is written there: renamed over the link, the new mark was a file of
    /// this process alone, and the file linked to (which the others read)
    /// kept the older tree (review 46).
    fn target(&self) -> Result<PathBuf, HighWaterError> {
        let mut path = self.path.clone();
        // As many links as the system itself follows in one path.
        for _ in 0..40 {
            match std::fs::symlink_metadata(&path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let link = std::fs::read_link(&path).map_err(|err| io(&path, &err))?;
                    // Relative to the link's folder; an absolute link replaces it.
                    path = path.parent().map_or_else(|| link.clone(), |dir| dir.join(&link));
                }
                Ok(_) => return Ok(path),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(path),
                Err(err) => return Err(io(&path, &err)),
            }
        }
        Err(HighWaterError::Damaged {
            path: self.path.display().to_string(),
            reason: "line 0: a loop of links: not the plane's".into(),
        })
    }

    /// An exclusive lock on `<mark>.lock` (beside the file a link at the
    /// mark's place points to, so that every process reaching the mark
    /// through a link takes the one lock), held until the file is dropped.
    fn lock_file(&self) -> Result<std::fs::File, HighWaterError> {
        let mut name = self.target()?.into_os_string();
        name.push(".lock");
        let path = PathBuf::from(name);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|err| io(&path, &err))?;
        file.lock().map_err(|err| io(&path, &err))?;
        Ok(file)
    }

    fn write(&self, entries: &[Line]) -> Result<(), HighWaterError> {
        let mut body = HEADER.to_owned();
        for Line { origin, entry, key } in entries {
            match entry {
                Entry::Never => body.push_str(&format!("{origin} never")),
                Entry::Signed(tree) => body.push_str(&format!("{origin} {} {}", tree.size, tree.root)),
            }
            match key {
                Some(key) => body.push_str(&format!(" {key}\n")),
                None => body.push('\n'),
            }
        }
        let target = self.target()?;
        let mut temporary = target.clone().into_os_string();
        temporary.push(".new");
        let temporary = PathBuf::from(temporary);
        // A link left at the temporary name is removed, never written
        // through: the file is created anew (review 35's note).
        if let Err(err) = std::fs::remove_file(&temporary)
            && err.kind() != std::io::ErrorKind::NotFound
        {
            return Err(io(&temporary, &err));
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .map_err(|err| io(&temporary, &err))?;
        file.write_all(body.as_bytes()).map_err(|err| io(&temporary, &err))?;
        file.sync_all().map_err(|err| io(&temporary, &err))?;
        drop(file);
        std::fs::rename(&temporary, &target).map_err(|err| io(&target, &err))?;
        sync_dir(&target)
    }
}

fn io(path: &Path, err: &std::io::Error) -> HighWaterError {
    HighWaterError::Io { path: path.display().to_string(), reason: err.to_string() }
}

/// Makes a rename durable: the directory's entry is synced too.
fn sync_dir(path: &Path) -> Result<(), HighWaterError> {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        std::fs::File::open(dir).and_then(|dir| dir.sync_all()).map_err(|err| io(dir, &err))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

impl HighWater for FileHighWater {
    fn last(&self, origin: &Origin) -> Result<HighWaterMark, HighWaterError> {
        let Some(entries) = self.read()? else {
            return Ok(HighWaterMark::Lost { reason: format!("{} is missing", self.path.display()) });
        };
        let Some(line) = entries.into_iter().find(|line| line.origin == origin.as_str()) else {
            return Ok(HighWaterMark::Lost { reason: format!("{} has no line for {origin}", self.path.display()) });
        };
        if let (Some(marked), Some(key)) = (&line.key, self.key_of(origin.as_str()))
            && marked != key
        {
            return Err(HighWaterError::OtherKey {
                path: self.path.display().to_string(),
                origin: origin.to_string(),
                marked: marked.clone(),
                key: key.to_owned(),
            });
        }
        Ok(match line.entry {
            Entry::Never => HighWaterMark::Never,
            Entry::Signed(tree) => HighWaterMark::Signed(tree),
        })
    }

    fn raise(&self, origin: &Origin, seen: &HighWaterMark, tree: Tree) -> Result<Raised, HighWaterError> {
        let _held = self.lock.lock().map_err(|_| HighWaterError::Io {
            path: self.path.display().to_string(),
            reason: "a thread writing it panicked".into(),
        })?;
        // Another process of the plane (its sweep, a second plane process on
        // a shared store, one on a restored copy) may sign at the same
        // moment: the read, the comparison with what the caller checked, the
        // write of `.new` and the rename are one step under a file lock.
        let _across_processes = self.lock_file()?;
        let now = self.last(origin)?;
        if now == HighWaterMark::Signed(tree) {
            return Ok(Raised::Raised);
        }
        // A mark never moves backwards, whatever the caller saw.
        let backwards = matches!(now, HighWaterMark::Signed(old) if old.size > tree.size);
        if backwards || !now.unchanged_since(seen) {
            return Ok(Raised::Moved(now));
        }
        let mut entries = self.read()?.unwrap_or_default();
        let key = self.key_of(origin.as_str()).map(str::to_owned);
        match entries.iter_mut().find(|line| line.origin == origin.as_str()) {
            Some(line) => {
                line.entry = Entry::Signed(tree);
                // A line written before the key was kept gets it now.
                line.key = key.or(line.key.take());
            }
            None => entries.push(Line { origin: origin.to_string(), entry: Entry::Signed(tree), key }),
        }
        self.write(&entries)?;
        Ok(Raised::Raised)
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }
}

/// Asks a witness what it holds through its monitor endpoint (R-WIT-4),
/// its cosignatures verified with the key the plane trusts and the note with
/// the plane's own log keys: a cosigned tree the plane never signed is a
/// lying witness's bad answer, never a tree the plane must extend (else one
/// witness out of the quorum could stop the plane signing, R-PLANE-2).
pub struct ReaderProbe {
    reader: witness::WitnessReader,
    log_keys: Vec<witness::VerifierKey>,
}

impl journal_core::runtime::WitnessProbe for ReaderProbe {
    fn endpoint(&self) -> &str {
        self.reader.endpoint()
    }

    fn latest(&self, origin: &Origin) -> Result<Option<String>, witness::WitnessError> {
        match self.reader.latest_signed_note(origin.as_str(), &self.log_keys) {
            Ok((note, _)) => Ok(Some(note)),
            // Nothing cosigned yet, or no monitor endpoint served.
            Err(witness::WitnessError::NothingCosigned { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }
}

/// A probe per configured witness; `log_keys` are the plane's log keys, with
/// which what a witness holds must be signed.
pub fn probes(
    entries: &[crate::config::WitnessEntry],
    log_keys: &[witness::VerifierKey],
) -> Result<Vec<std::sync::Arc<dyn journal_core::runtime::WitnessProbe>>, crate::failure::Failure> {
    let mut probes: Vec<std::sync::Arc<dyn journal_core::runtime::WitnessProbe>> = Vec::new();
    for entry in entries {
        let trusted = agentplane_cli::plane_config::check_witness_key(&entry.key)
            .map_err(|err| crate::failure::Failure::Usage(format!("witness {}: {err}", entry.url)))?;
        let reader = witness::WitnessReader::new(&entry.url, vec![trusted])
            .map_err(|err| crate::failure::Failure::Usage(format!("witness {}: {err}", entry.url)))?;
        probes.push(std::sync::Arc::new(ReaderProbe { reader, log_keys: log_keys.to_vec() }));
    }
    Ok(probes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn a_high_water_file_larger_than_its_bound_is_refused_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = FileHighWater::at(dir.path().join("agentplane.highwater"));
        // Valid comment lines only: without the bound this would read as "no entries".
        std::fs::write(&file.path, "#\n".repeat(usize::try_from(MAX_FILE_BYTES).unwrap())).unwrap();
        assert!(matches!(file.read(), Err(HighWaterError::Damaged { .. })), "{:?}", file.read().map(|_| ()));
        std::fs::write(&file.path, "# a small file\n").unwrap();
        assert!(matches!(file.read(), Ok(Some(entries)) if entries.is_empty()));
    }

    /// R-LOG-2, multiple tenants per key file: each mark line names its
    /// log key (review 54), so a signed line is about twice a key file's
    /// line. A plane of 10,000 tenants, its key file well under that file's
    /// 1 MiB bound, had every tenant signed a mark past the mark's 1 MiB
    /// bound, read as "not the plane's": the plane signed nothing again.
    #[test]
    fn r_log_2_the_mark_of_every_key_file_read_is_read_once_every_tenant_signed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agentplane.key");
        let origins: Vec<Origin> = (0..10_000).map(|i| Origin::new(&format!("o.example/p/t{i:05}")).unwrap()).collect();
        PlaneKeys::generate(&origins).unwrap().write(&path).unwrap();
        let keys = PlaneKeys::read(&path).unwrap();
        let file = FileHighWater::beside(&path, &keys);
        assert_eq!(file.last(origins.first().unwrap()).unwrap(), HighWaterMark::Never);
        // As the plane leaves it once each tenant has signed a tree.
        let tree = Tree::new(4_000_000, RootHash::from_hash_bytes([7; 32]));
        let entries: Vec<Line> = log_keys(&keys)
            .into_iter()
            .map(|(origin, key)| Line { origin, entry: Entry::Signed(tree), key: Some(key) })
            .collect();
        file.write(&entries).unwrap();
        assert!(std::fs::metadata(&file.path).unwrap().len() > 1 << 20);
        assert_eq!(file.last(origins.last().unwrap()).unwrap(), HighWaterMark::Signed(tree));
    }

    /// Review 59's note: a mark line's key column is quoted in the
    /// `OtherKey` refusal, so one edited by hand to 100,000 characters made
    /// a refusal of 100,000 characters. A key column that is not a verifier
    /// key is damage named by its line, and nothing of it is quoted.
    #[test]
    fn a_key_column_that_is_no_verifier_key_is_damage_not_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agentplane.key");
        let origin = Origin::new("o.example/p/t").unwrap();
        PlaneKeys::generate(std::slice::from_ref(&origin)).unwrap().write(&path).unwrap();
        let keys = PlaneKeys::read(&path).unwrap();
        let file = FileHighWater::beside(&path, &keys);
        let root = RootHash::from_hash_bytes([7; 32]);
        for line in
            [format!("{origin} never {}", "k".repeat(100_000)), format!("{origin} 4 {root} {}", "k".repeat(100_000))]
        {
            std::fs::write(&file.path, format!("{HEADER}{line}\n")).unwrap();
            let refused = file.last(&origin).unwrap_err();
            assert!(matches!(refused, HighWaterError::Damaged { .. }), "{refused:?}");
            assert!(refused.to_string().len() < 1_000, "{}", refused.to_string().len());
        }
    }

    /// R-LOG-2: the file's raise is one step against other processes: it
    /// writes only over what the caller checked, never backwards.
    #[test]
    fn a_raise_over_a_mark_that_moved_meanwhile_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let origin = Origin::new("example.com/plane").unwrap();
        let file = FileHighWater::at(dir.path().join("agentplane.highwater"));
        let tree = |size: u64, byte: u8| Tree::new(size, RootHash::from_hash_bytes([byte; 32]));
        let lost = file.last(&origin).unwrap();
        assert!(matches!(lost, HighWaterMark::Lost { .. }));
        assert_eq!(file.raise(&origin, &lost, tree(5, 1)).unwrap(), Raised::Raised);
        let signed = HighWaterMark::Signed(tree(5, 1));
        // Another process checked the lost mark too, and raises after this one.
        assert_eq!(file.raise(&origin, &lost, tree(4, 2)).unwrap(), Raised::Moved(signed.clone()));
        assert_eq!(file.raise(&origin, &HighWaterMark::Never, tree(9, 3)).unwrap(), Raised::Moved(signed.clone()));
        assert_eq!(file.raise(&origin, &signed, tree(3, 4)).unwrap(), Raised::Moved(signed.clone()), "backwards");
        assert_eq!(file.last(&origin).unwrap(), signed, "nothing was written");
        assert_eq!(file.raise(&origin, &lost, tree(5, 1)).unwrap(), Raised::Raised, "already says it");
        assert_eq!(file.raise(&origin, &signed, tree(7, 5)).unwrap(), Raised::Raised);
        assert_eq!(file.last(&origin).unwrap(), HighWaterMark::Signed(tree(7, 5)));
    }

    /// R-PLANE-2 (review 46): a mark kept elsewhere through a link at its
    /// place (moved to another disk, or one file shared by the processes
    /// and hosts that sign with the key) is raised where the link points.
    /// The write renamed its new file over the link: the link became a file
    /// of this process's own, the file it pointed at kept the older tree,
    /// and every other process reading the mark through it (or the link put
    /// back) was held to that older tree, so a store put back from before
    /// this signature was signed again, a fork.
    #[cfg(unix)]
    #[test]
    fn r_plane_2_a_mark_kept_through_a_link_is_raised_where_the_link_points() {
        let dir = tempfile::tempdir().unwrap();
        let shared = tempfile::tempdir().unwrap();
        let origin = Origin::new("example.com/plane").unwrap();
        let tree = |size: u64, byte: u8| Tree::new(size, RootHash::from_hash_bytes([byte; 32]));
        let kept = FileHighWater::at(shared.path().join("agentplane.highwater"));
        let lost = kept.last(&origin).unwrap();
        assert_eq!(kept.raise(&origin, &lost, tree(5, 1)).unwrap(), Raised::Raised);
        let path = dir.path().join("agentplane.highwater");
        std::os::unix::fs::symlink(shared.path().join("agentplane.highwater"), &path).unwrap();
        let through_the_link = FileHighWater::at(path.clone());
        let seen = through_the_link.last(&origin).unwrap();
        assert_eq!(seen, HighWaterMark::Signed(tree(5, 1)));

        assert_eq!(through_the_link.raise(&origin, &seen, tree(7, 2)).unwrap(), Raised::Raised);
        assert_eq!(kept.last(&origin).unwrap(), HighWaterMark::Signed(tree(7, 2)), "the file linked to holds it");
        assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink(), "the link is still a link");
        assert_eq!(through_the_link.last(&origin).unwrap(), HighWaterMark::Signed(tree(7, 2)));

        // A link whose file is gone (a disk not mounted) is not replaced by a
        // file of its own: the write fails, and nothing is signed.
        let dangling = dir.path().join("dangling.highwater");
        std::os::unix::fs::symlink(shared.path().join("gone").join("agentplane.highwater"), &dangling).unwrap();
        let unmounted = FileHighWater::at(dangling.clone());
        let lost = unmounted.last(&origin).unwrap();
        assert!(matches!(lost, HighWaterMark::Lost { .. }));
        assert!(matches!(unmounted.raise(&origin, &lost, tree(7, 2)), Err(HighWaterError::Io { .. })));
        assert!(std::fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
    }

    /// R-LOG-2 (review 35's note): a link planted at the mark's temporary
    /// name (`agentplane.highwater.new`) is never written through: the file
    /// it points at is untouched, and the mark is a file of its own.
    #[cfg(unix)]
    #[test]
    fn a_link_at_the_mark_s_temporary_name_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let origin = Origin::new("example.com/plane").unwrap();
        let path = dir.path().join("agentplane.highwater");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("agentplane.highwater.new")).unwrap();
        let file = FileHighWater::at(path.clone());
        let tree = Tree::new(5, RootHash::from_hash_bytes([1; 32]));
        let lost = file.last(&origin).unwrap();
        assert_eq!(file.raise(&origin, &lost, tree).unwrap(), Raised::Raised);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file(), "the mark is a file of its own");
        assert_eq!(file.last(&origin).unwrap(), HighWaterMark::Signed(tree));
    }
}
