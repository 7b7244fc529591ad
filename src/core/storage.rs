//! How much room the data takes (issue 35, item 4): the data directory (the database, its log,
//! the uploads, the backups kept there), measured every ten seconds by a task of the server's and
//! compared with `[database] disk_budget_bytes`, so `/metrics` and the dashboard warn at 90 %
//! before writes start failing with a full disk.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The data's size as last measured, and its budget (0: none).
#[derive(Debug, Default)]
pub struct Usage {
    used: AtomicU64,
    budget: u64,
}

impl Usage {
    pub fn new(budget: u64) -> Usage {
        Usage { used: AtomicU64::new(0), budget }
    }

    pub fn set(&self, bytes: u64) {
        self.used.store(bytes, Ordering::Relaxed);
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Whether the data takes 90 % of its budget or more.
    pub fn warning(&self) -> bool {
        self.budget > 0 && u128::from(self.used()) * 10 >= u128::from(self.budget) * 9
    }
}

/// The bytes of the files under `dir` and of `files` outside it (the database and its log when
/// kept elsewhere); what cannot be read counts nothing. Symbolic links are not followed.
pub fn measure(dir: &Path, files: &[&Path]) -> u64 {
    let mut total = 0u64;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else { continue };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.is_file() {
                total = total.saturating_add(meta.len());
            }
        }
    }
    for file in files.iter().filter(|f| !f.starts_with(dir)) {
        total = total.saturating_add(std::fs::metadata(file).map(|m| m.len()).unwrap_or(0));
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_is_measured_and_warns_at_ninety_percent() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::create_dir_all(dir.path().join("uploads/p")).unwrap();
        std::fs::write(dir.path().join("tidings.db"), vec![0; 600]).unwrap();
        std::fs::write(dir.path().join("uploads/p/a.png"), vec![0; 300]).unwrap();
        let elsewhere = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(elsewhere.path(), vec![0; 100]).unwrap();
        let used = measure(dir.path(), &[elsewhere.path(), &dir.path().join("tidings.db")]);
        assert_eq!(used, 1_000);
        let usage = Usage::new(1_200);
        usage.set(used);
        assert!(!usage.warning(), "90 % of 1,200 is 1,080");
        usage.set(1_080);
        assert!(usage.warning());
        assert!(!Usage::new(0).warning(), "no budget, no warning");
    }
}
