//! `cargo xtask bless`: writes the golden corpus deliberately (R-GOLD-3) and
//! prints every line that changed. Tests only ever read it.
//!
//! The record corpus is what this build writes and is rewritten. Exports are
//! frozen: blessing adds the file of a new export format beside the ones
//! before it and refuses to rewrite one (R-GOLD-2: every build verifies every
//! export ever blessed).

use anyhow::{Context, Result, bail};
use journal_core::golden;

use crate::workspace_root;

pub fn run() -> Result<()> {
    let records = golden::records_corpus().context("building the record corpus")?;
    write_changed(golden::RECORDS_PATH, &records)?;

    let sealed = golden::export_corpus().context("building the export corpus")?;
    freeze_export(&golden::export_file_name(), &sealed)?;
    let open = golden::open_export_corpus().context("building the open-run export corpus")?;
    freeze_export(&golden::open_export_file_name(), &open)?;
    Ok(())
}

/// Writes a frozen export file the first time; refuses to rewrite it.
fn freeze_export(name: &str, export: &str) -> Result<()> {
    let path = format!("{}/{name}", golden::EXPORTS_DIR);
    let full = workspace_root().join(&path);
    match std::fs::read_to_string(&full) {
        Ok(frozen) if frozen == export => eprintln!("xtask: {path} unchanged"),
        Ok(_) => bail!(
            "{path} is frozen and this build writes its format differently: name a new format \
             (journal_core::export::EXPORT_FORMAT) so that blessing adds its file, and keep {path} verifying"
        ),
        Err(_) => write_changed(&path, export)?,
    }
    Ok(())
}

fn write_changed(path: &str, fresh: &str) -> Result<()> {
    let full = workspace_root().join(path);
    let old = std::fs::read_to_string(&full).unwrap_or_default();
    if old == fresh {
        eprintln!("xtask: {path} unchanged");
        return Ok(());
    }
    eprintln!("xtask: {path} changes:");
    let (old_lines, new_lines): (Vec<&str>, Vec<&str>) = (old.lines().collect(), fresh.lines().collect());
    for i in 0..old_lines.len().max(new_lines.len()) {
        match (old_lines.get(i), new_lines.get(i)) {
            (Some(a), Some(b)) if a == b => {}
            (a, b) => {
                if let Some(a) = a {
                    eprintln!("  line {}: - {a}", i + 1);
                }
                if let Some(b) = b {
                    eprintln!("  line {}: + {b}", i + 1);
                }
            }
        }
    }
    if let Some(dir) = full.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&full, fresh).with_context(|| format!("writing {path}"))?;
    eprintln!("xtask: wrote {path}; commit it with the reason for the change");
    Ok(())
}
