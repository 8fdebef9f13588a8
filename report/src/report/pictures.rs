//! `--emulate --pictures DIR`: the pictures of what the counters count,
//! drawn from the emulator's own trace ([`coalesce::emu::picture`]), one
//! folder per op: for each kernel drawn, `<kernel>.svg` (every line's
//! sectors or wavefronts per request) and `<kernel>-<access>-<n>.svg` (one
//! warp's request at each line that accesses memory).
//!
//! Drawn: the copy and every transpose step; softmax's register path (a
//! block per row, `block8`) and its shared-memory stash (`online_stash`),
//! at 1024 columns; GEMM steps 2-7 (shared-memory staging and fragment
//! loads). The launches are
//! those of `--counters` ([`super::counters::collect`]).

use super::counters::collect_where;
use anyhow::{Context as _, Result};
use coalesce::emu::picture;
use std::path::{Path, PathBuf};

/// Whether the kernel is drawn (see the module docs).
fn drawn(op: &str, kernel: &str, shape: &str) -> bool {
    match op {
        "copy" | "transpose" => true,
        "softmax" => shape.ends_with("x1024") && matches!(kernel, "block8" | "online_stash"),
        "gemm" => coalesce::gemm::Variant::ALL
            .iter()
            .find(|v| v.name() == kernel)
            .and_then(|v| v.step().parse::<u32>().ok())
            .is_some_and(|step| (2..=7).contains(&step)),
        _ => false,
    }
}

/// Counts the kernels drawn, the copy and the transposes at `rows x cols`,
/// and writes their pictures under `dir`; returns the files written.
pub fn draw(dir: &Path, rows: usize, cols: usize) -> Result<Vec<PathBuf>> {
    // The folder first: minutes of emulation before a path that cannot be
    // a folder fails would be wasted.
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    let mut save = |path: PathBuf, svg: String| -> Result<()> {
        std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
        Ok(())
    };
    // `drawn` picks one shape per kernel, so each kernel is counted once.
    for c in collect_where(rows, cols, drawn)? {
        let folder = dir.join(c.op);
        std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
        let title = format!("{} {} ({})", c.op, c.kernel, c.shape);
        save(folder.join(format!("{}.svg", c.kernel)), picture::summary(&title, &c.report))?;
        for line in &c.report.counters.sites {
            let stem = picture::file_stem(&c.report, line);
            save(folder.join(format!("{}-{stem}.svg", c.kernel)), picture::request(&title, line))?;
        }
    }
    Ok(written)
}
