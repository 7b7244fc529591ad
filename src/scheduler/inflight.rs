//! The poison-message quarantine (issue 29): work a process died doing is not done again for
//! ever.
//!
//! Before a worker starts on an email, a job, a workflow execution or a webhook delivery, it
//! writes a line `+<kind> <id>` to a journal beside the database, and `-<kind> <id>` when it is
//! done. A line is one `write(2)`: it is in the kernel's hands at once, so it outlives any death
//! of the process (an abort, the OOM killer, `kill -9`); only the machine losing power loses it,
//! and that is no fault of the item's. At start, the server that holds the database's lock
//! ([`crate::lock`]) reads what the previous process left: an item it started and did not finish
//! counts once; an item counted by two processes in a row is failed with the reason "stopped
//! the process twice" and never claimed again, so one input can crash the server twice at most,
//! never in a loop. An item a process finished loses its count.
//!
//! The journal is compacted once it passes [`COMPACT_AT`]: rewritten with the items open at that
//! moment, and renamed over the old one.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What the journal tracks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Email,
    Job,
    Execution,
    Delivery,
}

impl Kind {
    /// The name the interruption counts are kept under.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Email => "email",
            Kind::Job => "job",
            Kind::Execution => "execution",
            Kind::Delivery => "delivery",
        }
    }

    fn parse(name: &str) -> Option<Kind> {
        [Kind::Email, Kind::Job, Kind::Execution, Kind::Delivery].into_iter().find(|k| k.name() == name)
    }
}

/// An item of work: its kind and id.
pub type Item = (Kind, String);

/// What a previous process left in the journal.
#[derive(Debug, Default, PartialEq)]
pub struct Previous {
    /// Started and not finished.
    pub open: Vec<Item>,
    /// Finished.
    pub done: Vec<Item>,
}

/// Journal size past which it is rewritten with only the open items.
pub const COMPACT_AT: u64 = 1 << 20;
/// What a quarantined item fails with.
pub const REASON: &str = "stopped the process twice: quarantined, it will not be tried again";

/// The journal of a server's work in progress.
pub struct Journal {
    path: PathBuf,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    file: Option<File>,
    written: u64,
    open: HashSet<Item>,
}

/// The journal's file beside the database at `database`.
pub fn journal_path(database: &Path) -> PathBuf {
    let name = database.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    database.with_file_name(format!("{name}.inflight"))
}

fn open_file(path: &Path, truncate: bool) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(!truncate)
        .write(true)
        .truncate(truncate)
        .mode(crate::db::files::FILE_MODE)
        .open(path)
}

impl Journal {
    /// A journal at `path`, opened when the first item starts (commands that run no workers
    /// never touch it).
    pub fn new(path: PathBuf) -> Arc<Journal> {
        Arc::new(Journal { path, inner: Mutex::default() })
    }

    fn write(&self, line: &str, change: impl FnOnce(&mut HashSet<Item>)) {
        let Ok(mut inner) = self.inner.lock() else { return };
        change(&mut inner.open);
        if inner.file.is_none() {
            match open_file(&self.path, false) {
                Ok(file) => inner.file = Some(file),
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), "could not open the work journal: {e}");
                    return;
                }
            }
        }
        let written = inner.file.as_mut().map(|f| f.write_all(line.as_bytes()));
        if let Some(Err(e)) = written {
            tracing::warn!(path = %self.path.display(), "could not write the work journal: {e}");
        }
        inner.written += line.len() as u64;
        if inner.written > COMPACT_AT {
            self.compact(&mut inner);
        }
    }

    /// Rewrites the journal with only the open items, renamed over the old one.
    fn compact(&self, inner: &mut Inner) {
        let fresh = self.path.with_extension("inflight.new");
        let lines: String = inner.open.iter().map(|(kind, id)| format!("+{} {id}\n", kind.name())).collect();
        let rewritten = open_file(&fresh, true)
            .and_then(|mut f| f.write_all(lines.as_bytes()).map(|()| f))
            .and_then(|f| std::fs::rename(&fresh, &self.path).map(|()| f));
        match rewritten {
            Ok(file) => {
                inner.file = Some(file);
                inner.written = lines.len() as u64;
            }
            Err(e) => tracing::warn!(path = %self.path.display(), "could not compact the work journal: {e}"),
        }
    }

    /// Marks `id` started; the mark ends (the item is done) when the guard is dropped, unless
    /// the thread is panicking: a panic leaves the item started, as a crash would.
    pub fn start(self: &Arc<Self>, kind: Kind, id: &str) -> Mark {
        let id = id.to_string();
        let line = format!("+{} {id}\n", kind.name());
        self.write(&line, |open| {
            open.insert((kind, id.clone()));
        });
        Mark { journal: self.clone(), kind, id }
    }

    fn end(&self, kind: Kind, id: String) {
        let line = format!("-{} {id}\n", kind.name());
        self.write(&line, |open| {
            open.remove(&(kind, id));
        });
    }

    /// What the previous process left in the journal: the items it started and did not finish,
    /// and those it finished. The journal is emptied.
    pub fn take_previous(&self) -> std::io::Result<Previous> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        let (mut open, mut done) = (Vec::<Item>::new(), HashSet::new());
        for line in text.lines() {
            let (sign, rest) = line.split_at(line.len().min(1));
            let Some((kind, id)) =
                rest.split_once(' ').and_then(|(k, id)| Some((Kind::parse(k)?, id.to_string())))
            else {
                continue;
            };
            match sign {
                "+" if !open.contains(&(kind, id.clone())) => open.push((kind, id)),
                "-" => {
                    open.retain(|o| o != &(kind, id.clone()));
                    done.insert((kind, id));
                }
                _ => {}
            }
        }
        open_file(&self.path, true)?;
        let done = done.into_iter().filter(|d| !open.contains(d)).collect();
        Ok(Previous { open, done })
    }
}

/// An item started; dropping it marks it done.
pub struct Mark {
    journal: Arc<Journal>,
    kind: Kind,
    id: String,
}

impl Drop for Mark {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.journal.end(self.kind, std::mem::take(&mut self.id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_journal_keeps_what_was_started_and_not_finished() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("t.db.inflight");
        let journal = Journal::new(path.clone());
        let a = journal.start(Kind::Email, "a");
        let b = journal.start(Kind::Job, "7");
        drop(a);
        let _c = journal.start(Kind::Execution, "x y");
        std::mem::forget(b); // the process "dies" holding b and c
        let next = Journal::new(path.clone());
        let Previous { open, done } = next.take_previous().unwrap();
        assert_eq!(open, [(Kind::Job, "7".to_string()), (Kind::Execution, "x y".to_string())]);
        assert_eq!(done, [(Kind::Email, "a".to_string())]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "", "emptied once read");
    }

    #[test]
    fn a_panic_leaves_the_item_started() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("t.db.inflight");
        let journal = Journal::new(path.clone());
        let j = journal.clone();
        let _ = std::thread::spawn(move || {
            let _mark = j.start(Kind::Delivery, "d1");
            panic!("a poison input");
        })
        .join();
        let open = Journal::new(path).take_previous().unwrap().open;
        assert_eq!(open, [(Kind::Delivery, "d1".to_string())]);
    }

    #[test]
    fn compaction_keeps_only_the_open_items() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("t.db.inflight");
        let journal = Journal::new(path.clone());
        let kept = journal.start(Kind::Email, "kept");
        for n in 0..40_000 {
            drop(journal.start(Kind::Email, &format!("item-{n:08}")));
        }
        assert!(std::fs::metadata(&path).unwrap().len() < COMPACT_AT + 1024);
        std::mem::forget(kept);
        let open = Journal::new(path).take_previous().unwrap().open;
        assert_eq!(open, [(Kind::Email, "kept".to_string())]);
    }
}
