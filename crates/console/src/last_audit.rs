//! The last audit's verdict, as `agentplane audit` and `agentplane verify`
//! leave it in the plane's folder (`audits/<tenant>.json`) for the console's
//! plane page. Written best effort beside the configuration, never into the
//! store: the audit opens the store read-only, and a verdict is a statement
//! about the store, not part of it. The console shows it with what it can
//! check cheaply (whether the current log still has that size and root, or
//! extends it); it never re-runs the audit.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The format line of the file.
pub const LAST_AUDIT_FORMAT: &str = "agentplane-last-audit/v1";

/// The folder, inside the plane's folder, that holds one file per tenant.
pub const LAST_AUDIT_DIR: &str = "audits";

/// The largest file read back (a verdict is a few hundred bytes; the
/// `not_checked` lines are bounded by the writer).
pub const MAX_LAST_AUDIT_BYTES: u64 = 1 << 20;

/// The most `not_checked` lines kept.
const MAX_NOT_CHECKED: usize = 50;

/// One audit's verdict for one tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LastAudit {
    /// [`LAST_AUDIT_FORMAT`].
    pub format: String,
    /// When it ran (UTC, the journal's canonical spelling).
    pub at: String,
    /// `audit` (an auditor's inputs) or `verify` (the plane's own keys and checkpoints).
    pub command: String,
    /// The tenant audited.
    pub tenant: String,
    /// Its log's origin.
    pub origin: String,
    /// `clean`, `incomplete` (no finding, but checks not made) or `findings`.
    pub verdict: String,
    /// How many findings.
    pub findings: usize,
    /// Their classes, by name.
    pub classes: Vec<String>,
    /// What was not checked, and why.
    pub not_checked: Vec<String>,
    /// How many anchors it held the store to.
    pub anchors: usize,
    /// The size of the log it rebuilt.
    pub log_size: u64,
    /// That log's root (hex).
    pub log_root: String,
}

/// The verdict's word for `findings` findings and `not_checked` checks not
/// made: `clean` only with neither.
pub fn verdict_for(findings: usize, not_checked: usize) -> &'static str {
    match (findings, not_checked) {
        (0, 0) => "clean",
        (0, _) => "incomplete",
        _ => "findings",
    }
}

/// Keeps at most this many `not_checked` lines (the file stays small).
pub fn bounded(not_checked: Vec<String>) -> Vec<String> {
    not_checked.into_iter().take(MAX_NOT_CHECKED).collect()
}

/// Why a verdict could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum LastAuditError {
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a regular file (a FIFO, a device): never opened, since opening a
    /// FIFO waits for a writer and a device may never end.
    #[error("{path} is not a regular file: not a verdict this build wrote")]
    NotAFile {
        /// The file.
        path: PathBuf,
    },
    /// The `audits` folder is a link or not a folder: a verdict is written
    /// only into the plane's own folder, never where a link points.
    #[error("{path} is not a folder (a link, or a file): the verdict is written only into a real folder there")]
    NotAFolder {
        /// The path.
        path: PathBuf,
    },
    /// Larger than [`MAX_LAST_AUDIT_BYTES`].
    #[error("{path} is larger than {MAX_LAST_AUDIT_BYTES} bytes: not a verdict this build wrote")]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// Not the format this build writes.
    #[error("{path} is not a verdict this build reads: {reason}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// Where the verdict for `tenant` lives under the plane's folder: one file
/// per tenant, never two tenants' (R-STORE-4). Letters, digits, `-`, `_`
/// and `.` are kept; every other byte (`:`, `/`, `%`) is spelt `%XX`, so
/// no id names a path elsewhere and no two ids name one file (`shop.eu`,
/// `shop:eu` and `shop_eu` shared one when all three were spelt `_`).
/// A name spelt longer than 200 bytes (a 128-character id, half
/// of it `:` or `/`, spelt in 256 bytes and more: past the 255 a file name
/// holds) is named `%sha256-HEX` instead, which no spelling makes (`%` is
/// always followed by two upper-case hex digits there).
pub fn path_for(folder: &Path, tenant: &str) -> PathBuf {
    let mut name = String::with_capacity(tenant.len());
    for byte in tenant.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.') {
            name.push(char::from(byte));
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    if name.len() > MAX_SPELT_NAME {
        name = <sha2::Sha256 as sha2::Digest>::digest(tenant.as_bytes()).iter().fold(
            String::from("%sha256-"),
            |mut hex, byte| {
                hex.push_str(&format!("{byte:02x}"));
                hex
            },
        );
    }
    folder.join(LAST_AUDIT_DIR).join(format!("{name}.json"))
}

/// The longest spelt tenant id a verdict file is named by: with `.json.tmp`
/// (the temporary file it is written through), within the 255 bytes most
/// file systems allow a name.
const MAX_SPELT_NAME: usize = 200;

/// Writes `verdict` under `folder`, replacing the one before in one rename
/// (a reader sees the old file or the new one, never half of one). A link
/// left in the folder is never written through: `audits` must be a folder,
/// and the temporary file is created anew.
pub fn record(folder: &Path, verdict: &LastAudit) -> Result<PathBuf, LastAuditError> {
    let path = path_for(folder, &verdict.tenant);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LastAuditError::Io { path, source }
    };
    let dir = folder.join(LAST_AUDIT_DIR);
    // Whoever wrote the plane's folder may not be who audits it: a link
    // there is never followed, to a folder or to a file.
    match std::fs::symlink_metadata(&dir) {
        Ok(meta) if !meta.is_dir() => return Err(LastAuditError::NotAFolder { path: dir }),
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(&dir).map_err(io(&dir))?,
        Err(err) => return Err(io(&dir)(err)),
    }
    let text = serde_json::to_string_pretty(verdict)
        .map_err(|err| LastAuditError::Unreadable { path: path.clone(), reason: err.to_string() })?;
    let temporary = path.with_extension("json.tmp");
    // Removing a link removes the link; the file is then created anew
    // (create_new follows no link), never opened through one.
    if let Err(err) = std::fs::remove_file(&temporary)
        && err.kind() != std::io::ErrorKind::NotFound
    {
        return Err(io(&temporary)(err));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temporary)
        .and_then(|mut file| std::io::Write::write_all(&mut file, text.as_bytes()))
        .map_err(io(&temporary))?;
    std::fs::rename(&temporary, &path).map_err(io(&path))?;
    Ok(path)
}

/// Reads the verdict for `tenant` under `folder`; `Ok(None)` when no audit
/// left one.
pub fn read(folder: &Path, tenant: &str) -> Result<Option<LastAudit>, LastAuditError> {
    let path = path_for(folder, tenant);
    let io = |source| LastAuditError::Io { path: path.clone(), source };
    // Opened without waiting (a FIFO would wait for a writer), then what
    // was opened is checked, not the path: a file swapped in between is the
    // one refused.
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = match options.open(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io(err)),
    };
    match file.metadata() {
        // A FIFO never ends while a writer writes; a device may never end.
        Ok(meta) if !meta.is_file() => return Err(LastAuditError::NotAFile { path }),
        Ok(meta) if meta.len() > MAX_LAST_AUDIT_BYTES => return Err(LastAuditError::TooLarge { path }),
        Ok(_) => {}
        Err(err) => return Err(io(err)),
    }
    // Bounded again as it is read: the file may have grown since.
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_LAST_AUDIT_BYTES + 1), &mut text).map_err(io)?;
    if text.len() as u64 > MAX_LAST_AUDIT_BYTES {
        return Err(LastAuditError::TooLarge { path });
    }
    let verdict: LastAudit = serde_json::from_slice(&text)
        .map_err(|err| LastAuditError::Unreadable { path: path.clone(), reason: err.to_string() })?;
    if verdict.format != LAST_AUDIT_FORMAT {
        return Err(LastAuditError::Unreadable { path, reason: format!("its format is {:?}", verdict.format) });
    }
    // Another tenant's verdict is never shown as this one's (R-STORE-4).
    if verdict.tenant != tenant {
        return Err(LastAuditError::Unreadable {
            path,
            reason: format!(
                "it is the verdict of tenant {:?}, not of {tenant:?}: run the audit of {tenant:?} again",
                verdict.tenant
            ),
        });
    }
    Ok(Some(verdict))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_verdict_is_clean_only_with_no_finding_and_nothing_unchecked() {
        assert_eq!(verdict_for(0, 0), "clean");
        assert_eq!(verdict_for(0, 2), "incomplete");
        assert_eq!(verdict_for(1, 0), "findings");
        assert_eq!(verdict_for(3, 1), "findings");
        assert_eq!(bounded(vec!["x".to_owned(); 80]).len(), MAX_NOT_CHECKED);
    }

    #[test]
    fn a_verdict_round_trips_and_a_strange_tenant_never_names_another_path() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path(), "shop").unwrap().is_none(), "no audit yet");
        let verdict = LastAudit {
            format: LAST_AUDIT_FORMAT.to_owned(),
            at: "2026-12-02T15:00:00.000Z".to_owned(),
            command: "verify".to_owned(),
            tenant: "../shop".to_owned(),
            origin: "example.test/plane/shop".to_owned(),
            verdict: verdict_for(2, 0).to_owned(),
            findings: 2,
            classes: vec!["tamper".to_owned()],
            not_checked: Vec::new(),
            anchors: 0,
            log_size: 7,
            log_root: "ab".repeat(32),
        };
        let path = record(dir.path(), &verdict).unwrap();
        assert_eq!(path, dir.path().join(LAST_AUDIT_DIR).join("..%2Fshop.json"));
        assert_eq!(read(dir.path(), "../shop").unwrap(), Some(verdict.clone()));
        let newer = LastAudit { format: "agentplane-last-audit/v9".to_owned(), ..verdict };
        std::fs::write(&path, serde_json::to_vec(&newer).unwrap()).unwrap();
        let refused = read(dir.path(), "../shop");
        assert!(
            matches!(&refused, Err(LastAuditError::Unreadable { reason, .. }) if reason.contains("v9")),
            "{refused:?}"
        );
        std::fs::write(&path, vec![b' '; usize::try_from(MAX_LAST_AUDIT_BYTES).unwrap() + 1]).unwrap();
        assert!(matches!(read(dir.path(), "../shop"), Err(LastAuditError::TooLarge { .. })));
        std::fs::write(&path, br#"{"format":"agentplane-last-audit/v1"}"#).unwrap();
        assert!(matches!(read(dir.path(), "../shop"), Err(LastAuditError::Unreadable { .. })));
    }

    /// R-STORE-4 (review 69): tenant ids may hold `.` and `:`, which the
    /// file name spelt as `_`: `shop.eu`, `shop:eu` and `shop_eu` shared one
    /// file, so an audit of one tenant replaced the verdict the console
    /// shows as another's (a clean verdict hiding that tenant's findings).
    /// Each tenant has a file of its own, and a verdict of another tenant
    /// is never read as this one's.
    #[test]
    fn r_store_4_one_tenants_verdict_is_never_another_tenants() {
        let dir = tempfile::tempdir().unwrap();
        let verdict = |tenant: &str, findings: usize| LastAudit {
            format: LAST_AUDIT_FORMAT.to_owned(),
            at: "2026-12-02T15:00:00.000Z".to_owned(),
            command: "audit".to_owned(),
            tenant: tenant.to_owned(),
            origin: format!("example.test/plane/{tenant}"),
            verdict: verdict_for(findings, 0).to_owned(),
            findings,
            classes: Vec::new(),
            not_checked: Vec::new(),
            anchors: 0,
            log_size: 0,
            log_root: "ab".repeat(32),
        };
        let tenants = ["shop_eu", "shop.eu", "shop:eu", "shop/eu", "shop_2eeu", "shop%2Eeu"];
        for (i, tenant) in tenants.iter().enumerate() {
            record(dir.path(), &verdict(tenant, i)).unwrap();
        }
        for (i, tenant) in tenants.iter().enumerate() {
            assert_eq!(read(dir.path(), tenant).unwrap(), Some(verdict(tenant, i)), "tenant {tenant}");
        }
        // A file that holds another tenant's verdict (written by an older
        // build, or put there by hand) is refused, not shown as this one's.
        std::fs::copy(path_for(dir.path(), "shop.eu"), path_for(dir.path(), "shop_eu")).unwrap();
        let refused = read(dir.path(), "shop_eu");
        assert!(
            matches!(&refused, Err(LastAuditError::Unreadable { reason, .. }) if reason.contains("shop.eu")),
            "{refused:?}"
        );
    }

    /// R-STORE-4: a tenant id may be 128 characters of which every other
    /// is `:` or `/` (`a:b:c:...`), each spelt `%XX` in the file name: 256
    /// bytes and more, past the 255 a file name may hold, so the audit never
    /// kept that tenant's verdict ("File name too long") and the console
    /// could never read one. Every valid tenant id has a file of its own.
    #[test]
    fn r_store_4_every_valid_tenant_id_has_a_verdict_file() {
        let dir = tempfile::tempdir().unwrap();
        let tenants = ["a:".repeat(64), "b/".repeat(64), ":".repeat(128), format!("{}x", ":".repeat(127))];
        for (i, tenant) in tenants.iter().enumerate() {
            journal_core::TenantId::new(tenant).unwrap();
            let verdict = LastAudit {
                format: LAST_AUDIT_FORMAT.to_owned(),
                at: "2026-12-02T15:00:00.000Z".to_owned(),
                command: "audit".to_owned(),
                tenant: tenant.clone(),
                origin: format!("example.test/plane/{i}"),
                verdict: verdict_for(i, 0).to_owned(),
                findings: i,
                classes: Vec::new(),
                not_checked: Vec::new(),
                anchors: 0,
                log_size: 0,
                log_root: "ab".repeat(32),
            };
            let path = record(dir.path(), &verdict).unwrap();
            assert!(path.file_name().unwrap().len() < 255, "{path:?}");
            assert_eq!(read(dir.path(), tenant).unwrap(), Some(verdict), "tenant {tenant}");
        }
        let names: std::collections::BTreeSet<_> = tenants.iter().map(|t| path_for(dir.path(), t)).collect();
        assert_eq!(names.len(), tenants.len(), "one file per tenant");
    }

    /// R-UX-3, R-OPS-1 (review 36): whoever can write the plane's folder
    /// put a FIFO or a link to `/dev/zero` where the verdict goes. The size
    /// was asked of the path (0 for both) and the file then read whole: the
    /// plane page waited for a writer forever, or read `/dev/zero` until
    /// memory ran out. Only a regular file is read, and only to the bound.
    #[cfg(unix)]
    #[test]
    fn r_ux_3_a_verdict_that_is_no_regular_file_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "shop");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let made = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
        assert!(made.success());
        // A writer that fills the FIFO past the bound: a read that waits for
        // it and takes it all, as before, is no refusal.
        let fifo = path.clone();
        std::thread::spawn(move || {
            let mut writer = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            let _ = std::io::Write::write_all(&mut writer, &vec![b' '; 2 << 20]);
        });
        let refused = read(dir.path(), "shop");
        assert!(matches!(&refused, Err(LastAuditError::NotAFile { .. })), "{refused:?}");

        // A FIFO no writer ever opens (swapped in after any check of the
        // path): the opening itself must not wait. Guarded by a deadline,
        // which only a read that waits forever reaches.
        std::fs::remove_file(&path).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        let (answer, answered) = std::sync::mpsc::channel();
        let folder = dir.path().to_owned();
        std::thread::spawn(move || answer.send(read(&folder, "shop")).unwrap());
        let refused = answered.recv_timeout(std::time::Duration::from_secs(60)).unwrap();
        assert!(matches!(&refused, Err(LastAuditError::NotAFile { .. })), "{refused:?}");

        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        let refused = read(dir.path(), "shop");
        assert!(matches!(&refused, Err(LastAuditError::NotAFile { .. })), "{refused:?}");
    }

    /// R-UX-3 (review 36): an auditor runs `agentplane audit` in a folder
    /// the operator wrote. A link the operator left at the temporary name
    /// (`audits/TENANT.json.tmp`) was followed, so the audit overwrote the
    /// file it pointed at (the auditor's saved checkpoint, say) with its
    /// verdict; a linked `audits` folder put the verdict, under a name the
    /// operator's configuration chooses, in any folder. The verdict is
    /// written only into a real `audits` folder, through a file it creates.
    #[cfg(unix)]
    #[test]
    fn r_ux_3_a_verdict_is_never_written_through_a_link_left_in_the_plane_s_folder() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let victim = elsewhere.path().join("saved.note");
        std::fs::write(&victim, b"the auditor's anchor\n").unwrap();
        let verdict = LastAudit {
            format: LAST_AUDIT_FORMAT.to_owned(),
            at: "2026-12-02T15:00:00.000Z".to_owned(),
            command: "audit".to_owned(),
            tenant: "saved".to_owned(),
            origin: "example.test/plane/saved".to_owned(),
            verdict: verdict_for(0, 0).to_owned(),
            findings: 0,
            classes: Vec::new(),
            not_checked: Vec::new(),
            anchors: 1,
            log_size: 7,
            log_root: "ab".repeat(32),
        };

        let path = path_for(dir.path(), "saved");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&victim, path.with_extension("json.tmp")).unwrap();
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let written = record(dir.path(), &verdict);
        assert!(written.is_ok(), "{written:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the auditor's anchor\n", "the linked file is untouched");
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file(), "the verdict is a file of its own");
        assert_eq!(read(dir.path(), "saved").unwrap(), Some(verdict.clone()));

        let linked = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), linked.path().join(LAST_AUDIT_DIR)).unwrap();
        let refused = record(linked.path(), &verdict);
        assert!(matches!(&refused, Err(LastAuditError::NotAFolder { .. })), "{refused:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the auditor's anchor\n", "the linked file is untouched");
        assert!(!elsewhere.path().join("saved.json").exists(), "nothing written in the folder linked");
    }
}
