//! The high-water mark beside the state (R-WIT-6): a small text file,
//! `<state>.highwater`, holding the size and root of the latest checkpoint
//! cosigned for each origin, replaced atomically (written aside, fsynced,
//! renamed, the directory fsynced) after every commit and before any answer
//! of that commit leaves. At start the state must hold, for every origin the
//! mark names, the same tree or a larger one: a state file replaced by an
//! older copy of itself (a backup restored, a file copied back) or lost
//! would otherwise let the witness cosign a fork of what it last cosigned,
//! since the state is all it remembers. What the mark cannot see: the state
//! and the mark restored together.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use tlog::{RootHash, Tree};

/// Origin -> the latest tree cosigned for it.
pub(crate) type Held = BTreeMap<String, Tree>;

/// The largest mark read: a line per log, each under 1.2 kB.
const MAX_MARK_BYTES: u64 = 16 << 20;

/// The mark's path: the state's, with `.highwater` added.
pub(crate) fn path_for(state: &Path) -> PathBuf {
    let mut path = state.as_os_str().to_owned();
    path.push(".highwater");
    PathBuf::from(path)
}

/// Reads the mark, `None` when there is none. Lines: `<size> <root hex> <origin>`.
pub(crate) fn read(path: &Path) -> Result<Option<Held>, String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("reading the high-water mark {}: {err}", path.display())),
    };
    let mut text = String::new();
    file.take(MAX_MARK_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|err| format!("reading the high-water mark {}: {err}", path.display()))?;
    if text.len() as u64 > MAX_MARK_BYTES {
        return Err(format!("the high-water mark {} is larger than {MAX_MARK_BYTES} bytes", path.display()));
    }
    let mut held = Held::new();
    for (number, line) in text.lines().enumerate() {
        let malformed = || format!("the high-water mark {} is damaged at line {}", path.display(), number + 1);
        let mut fields = line.splitn(3, ' ');
        let (Some(size), Some(root), Some(origin)) = (fields.next(), fields.next(), fields.next()) else {
            return Err(malformed());
        };
        let size: u64 = size.parse().map_err(|_| malformed())?;
        let root = RootHash::from_hex(root).map_err(|_| malformed())?;
        held.insert(origin.to_owned(), Tree::new(size, root));
    }
    Ok(Some(held))
}

/// Replaces the mark with `held`, durably: written aside, fsynced, renamed
/// over the mark, the directory fsynced.
pub(crate) fn write(path: &Path, held: &Held) -> std::io::Result<()> {
    let mut text = String::new();
    for (origin, tree) in held {
        text.push_str(&format!("{} {} {origin}\n", tree.size, tree.root));
    }
    let mut aside = path.as_os_str().to_owned();
    aside.push(".new");
    let aside = PathBuf::from(aside);
    let mut file = std::fs::File::create(&aside)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&aside, path)?;
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::File::open(dir)?.sync_all()
}

/// The first origin whose tree in `state` is older than the mark's, with
/// what the mark and the state hold: a state rolled back or lost. A state
/// ahead of the mark is not (the witness stopped between its commit and the
/// mark's write, before answering).
pub(crate) fn behind<'a>(mark: &'a Held, state: &Held) -> Option<(&'a str, Tree, Option<Tree>)> {
    mark.iter().find_map(|(origin, marked)| match state.get(origin) {
        None => Some((origin.as_str(), *marked, None)),
        Some(held) if held.size < marked.size || (held.size == marked.size && held.root != marked.root) => {
            Some((origin.as_str(), *marked, Some(*held)))
        }
        Some(_) => None,
    })
}
