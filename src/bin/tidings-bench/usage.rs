//! Where a step's time went: this process's wall time, its CPU time in user space and in the
//! kernel (every thread's, the checkpointer's among them), and the bytes it had the kernel read
//! from and write to storage (`/proc/self/io`; a write counts when the page is dirtied, whether
//! the kernel writes it back during the step or after).

use std::time::{Duration, Instant};

use tidings::memory::{TICKS_PER_SECOND, cpu_times};

/// The counters at one moment.
#[derive(Clone, Copy)]
pub struct Usage {
    at: Instant,
    user: u64,
    system: u64,
    read: u64,
    written: u64,
}

/// What was spent between two moments.
#[derive(Clone, Copy, Default)]
pub struct Spent {
    wall: Duration,
    user: u64,
    system: u64,
    read: u64,
    written: u64,
}

impl Usage {
    pub fn now() -> Usage {
        let (user, system) = cpu_times().unwrap_or_default();
        let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
        let field = |name: &str| {
            io.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
        };
        Usage { at: Instant::now(), user, system, read: field("read_bytes:"), written: field("write_bytes:") }
    }

    pub fn since(&self) -> Spent {
        let now = Usage::now();
        Spent {
            wall: now.at - self.at,
            user: now.user - self.user,
            system: now.system - self.system,
            read: now.read - self.read,
            written: now.written - self.written,
        }
    }
}

impl std::ops::AddAssign for Spent {
    fn add_assign(&mut self, other: Spent) {
        self.wall += other.wall;
        self.user += other.user;
        self.system += other.system;
        self.read += other.read;
        self.written += other.written;
    }
}

impl Spent {
    /// Items a second of wall time.
    pub fn rate(&self, items: usize) -> f64 {
        items as f64 / self.wall.as_secs_f64()
    }

    /// Per item: wall, user and system time in µs, and bytes read and written.
    pub fn per_item(&self, items: usize) -> [f64; 5] {
        let n = items.max(1) as f64;
        let ticks_us = 1e6 / TICKS_PER_SECOND;
        [
            self.wall.as_secs_f64() * 1e6 / n,
            self.user as f64 * ticks_us / n,
            self.system as f64 * ticks_us / n,
            self.read as f64 / n,
            self.written as f64 / n,
        ]
    }

    /// One line: the rate, then the cost of an item.
    pub fn describe(&self, items: usize, unit: &str) -> String {
        let [wall, user, system, read, written] = self.per_item(items);
        format!(
            "{:.0} {unit}s/s; per {unit}: {wall:.1} µs, CPU user {user:.1} + system {system:.1} µs, \
             disk read {read:.0} B, written {written:.0} B",
            self.rate(items)
        )
    }
}
