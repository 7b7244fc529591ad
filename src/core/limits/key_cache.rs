//! API keys already looked up, so the key guard of a busy `/v1/track` or `/v1/send` does not
//! read the database on every request (that read, on a blocking thread, was a tenth of the
//! server's time under load).
//!
//! Only keys found are kept, by the digest the database stores (never the key itself), so guessed
//! keys always reach the database and cannot fill the cache. Anything that changes what a key
//! resolves to (new keys for a project, a project renamed, disabled or deleted) calls
//! [`KeyCache::forget_all`] once it has committed; a lookup that started before then does not
//! store what it read. Entries also expire after [`TTL`], a bound on staleness should a change
//! ever bypass the API (the CLI only creates projects, whose new keys are not cached yet).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::db::keys::KeyKind;
use crate::db::projects::Project;

/// How long an entry is trusted without reading the database again.
pub const TTL: Duration = Duration::from_secs(5);
/// Most entries; two per project, so reached only by very many projects. Full means cleared.
const MAX_ENTRIES: usize = 8192;

#[derive(Default)]
pub struct KeyCache {
    inner: Mutex<Inner>,
    /// Raised by writes that change what keys resolve to (a suspension, deep in a bounce's
    /// transaction), through the writer's after-commit effects (`db::effects::Wake::Keys`).
    changed: Arc<AtomicU64>,
}

#[derive(Default)]
struct Inner {
    /// The value of `changed` the entries were read under.
    seen: u64,
    /// Raised by every [`KeyCache::forget_all`].
    generation: u64,
    entries: HashMap<String, (Project, KeyKind, Instant)>,
}

impl KeyCache {
    /// A cache that also forgets everything whenever `changed` is raised.
    pub fn watching(changed: Arc<AtomicU64>) -> KeyCache {
        KeyCache { inner: Mutex::default(), changed }
    }

    /// The project and kind of the key with this digest, when known and fresh.
    pub fn get(&self, digest: &str) -> Option<(Project, KeyKind)> {
        let inner = self.current();
        let (project, kind, at) = inner.entries.get(digest)?;
        (at.elapsed() < TTL).then(|| (project.clone(), *kind))
    }

    /// Taken before reading the database; [`KeyCache::put`] compares it.
    pub fn generation(&self) -> u64 {
        self.current().generation
    }

    /// The entries, emptied (and the generation raised) first when `changed` was raised since
    /// they were read.
    fn current(&self) -> std::sync::MutexGuard<'_, Inner> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let changed = self.changed.load(Ordering::Acquire);
        if inner.seen != changed {
            inner.seen = changed;
            inner.generation += 1;
            inner.entries.clear();
        }
        inner
    }

    /// Keeps what a lookup read, unless keys or projects changed since `generation`.
    pub fn put(&self, generation: u64, digest: String, project: Project, kind: KeyKind) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.generation != generation {
            return;
        }
        if inner.entries.len() >= MAX_ENTRIES {
            inner.entries.clear();
        }
        inner.entries.insert(digest, (project, kind, Instant::now()));
    }

    /// Drops every entry: call after a change to keys or projects has committed.
    pub fn forget_all(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.generation += 1;
        inner.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(disabled: bool) -> Project {
        Project { id: "p".into(), name: "P".into(), disabled, wiping: None, created_at: 0, updated_at: 0 }
    }

    #[test]
    fn a_lookup_that_raced_a_change_is_not_kept() {
        let cache = KeyCache::default();
        let before = cache.generation();
        cache.forget_all();
        cache.put(before, "d".into(), project(false), KeyKind::Public);
        assert!(cache.get("d").is_none(), "read before the change, stored after it");
        cache.put(cache.generation(), "d".into(), project(true), KeyKind::Public);
        let (found, kind) = cache.get("d").unwrap();
        assert!(found.disabled && kind == KeyKind::Public);
        cache.forget_all();
        assert!(cache.get("d").is_none());
    }

    #[test]
    fn a_raised_change_forgets_everything() {
        let changed = Arc::new(AtomicU64::new(0));
        let cache = KeyCache::watching(changed.clone());
        cache.put(cache.generation(), "d".into(), project(false), KeyKind::Secret);
        assert!(cache.get("d").is_some());
        let before = cache.generation();
        changed.fetch_add(1, Ordering::Release);
        assert!(cache.get("d").is_none(), "the project may be disabled now");
        cache.put(before, "d".into(), project(false), KeyKind::Secret);
        assert!(cache.get("d").is_none(), "a lookup from before the change is not kept");
    }
}
