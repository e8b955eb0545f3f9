//! `cargo xtask bless`: rewrites the golden corpus deliberately (R-GOLD-3)
//! and prints every line that changed. Tests only ever read it.

use anyhow::{Context, Result};
use journal_core::golden;

use crate::workspace_root;

pub fn run() -> Result<()> {
    let corpora = [
        (golden::RECORDS_PATH, golden::records_corpus().context("building the record corpus")?),
        (golden::EXPORT_PATH, golden::export_corpus().context("building the export corpus")?),
    ];
    for (path, fresh) in corpora {
        let full = workspace_root().join(path);
        let old = std::fs::read_to_string(&full).unwrap_or_default();
        if old == fresh {
            eprintln!("xtask: {path} unchanged");
            continue;
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
    }
    Ok(())
}
