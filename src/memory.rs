//! Handing memory back to the system after a load peak.
//!
//! glibc's malloc gives busy threads arenas of their own (up to eight per core) and keeps what
//! is freed in them for reuse: after the perf harness's load the server stayed at 88 MiB resident
//! (24 MiB before it), most of it free memory inside those arenas. Limiting the arenas to two
//! brought that to 53 MiB but cost about a twentieth of the throughput, as every thread then
//! shares an arena lock; trimming every two seconds under load cost a tenth of `/v1/track`'s
//! CPU, as the pages given back were faulted in again at once. So the free pages of every arena
//! are given back (`malloc_trim`) once the process has gone quiet after being busy: checked
//! every [`INTERVAL`] from the process's own CPU time, after SQLite's connections have
//! released their page caches and prepared statements. Large blocks are kept out of the arenas
//! altogether ([`configure`]).

use std::time::Duration;

use tokio::sync::watch;

/// How often free memory is handed back.
pub const INTERVAL: Duration = Duration::from_secs(2);

/// Allocations at least this large get pages of their own, given back when freed.
const MMAP_THRESHOLD: i32 = 256 * 1024;

/// Fixes the size from which malloc maps memory of its own instead of carving it from an arena.
/// glibc raises that threshold to the size of every mapped block freed, up to 32 MiB: after a
/// 5 MiB CSV upload, every buffer under 5 MiB came from the arenas, where a later burst of sends
/// left them spread over pages `malloc_trim` cannot give back (42 MiB resident after the
/// harness's import and delivery steps, 33 MiB after delivery alone).
#[allow(unsafe_code)]
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes two integers and only changes glibc's own tuning; it is called once
    // at start-up, before the runtime's threads exist.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Gives the free pages of every malloc arena back to the system.
#[allow(unsafe_code)]
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it locks and walks glibc's own arenas and may be
    // called from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A process that used less than this share of one core over an [`INTERVAL`] is quiet.
const QUIET_SHARE: f64 = 0.1;
/// Clock ticks a second in `/proc`'s CPU times (Linux's fixed `USER_HZ`).
pub const TICKS_PER_SECOND: f64 = 100.0;

/// This process's CPU time in clock ticks, in user space and in the kernel, from
/// `/proc/self/stat` (the benchmarks split a step's cost with it).
pub fn cpu_times() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces, so after its closing parenthesis):
    // state is the first, utime the 12th and stime the 13th.
    let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().skip(11);
    Some((fields.next()?.parse::<u64>().ok()?, fields.next()?.parse::<u64>().ok()?))
}

/// This process's CPU time (user and system) in clock ticks.
fn cpu_ticks() -> Option<u64> {
    cpu_times().map(|(user, system)| user + system)
}

/// Whether a process that used `ticks` of CPU over `over` was quiet.
fn quiet(ticks: u64, over: Duration) -> bool {
    (ticks as f64) < QUIET_SHARE * TICKS_PER_SECOND * over.as_secs_f64()
}

/// Trims once after every busy spell, until `stopped` turns true; SQLite's caches on `db` are
/// released first, so that their pages are free to give back.
pub async fn keep_trimming(db: crate::db::Db, mut stopped: watch::Receiver<bool>) {
    let mut last = cpu_ticks();
    let mut busy_since_trim = true;
    while !*stopped.borrow() {
        tokio::select! {
            _ = tokio::time::sleep(INTERVAL) => {}
            _ = stopped.changed() => continue,
        }
        let now = cpu_ticks();
        let Some(used) = now.zip(last).map(|(now, last)| now.saturating_sub(last)) else { break };
        last = now;
        if !quiet(used, INTERVAL) {
            busy_since_trim = true;
        } else if busy_since_trim {
            busy_since_trim = false;
            if let Err(e) = db.release_memory().await {
                tracing::warn!("could not release SQLite's caches: {e}");
            }
            let _ = tokio::task::spawn_blocking(trim).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_and_grows_with_work() {
        let before = cpu_ticks().expect("/proc/self/stat is readable");
        let started = std::time::Instant::now();
        let mut x = 0u64;
        while started.elapsed() < Duration::from_millis(150) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        assert!(cpu_ticks().unwrap() > before, "150 ms of spinning shows in the CPU time");
        assert!(quiet(19, INTERVAL) && !quiet(20, INTERVAL), "a tenth of a core over two seconds");
    }

    /// Bytes in blocks malloc mapped on their own, across the process.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    fn mapped_bytes() -> usize {
        // SAFETY: mallinfo2 only reads glibc's counters and returns them by value.
        unsafe { libc::mallinfo2().hblkhd }
    }

    /// Set in the child process that [`large_blocks_stay_mapped_after_a_larger_one_was_freed`]
    /// runs itself in.
    const CHILD: &str = "TIDINGS_MALLOC_TEST_CHILD";

    /// A block at least the threshold is served from an arena anyway when the arena has room, so
    /// the check runs in a process of its own, whose arenas are new.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn large_blocks_stay_mapped_after_a_larger_one_was_freed() {
        if std::env::var_os(CHILD).is_none() {
            let name = "memory::tests::large_blocks_stay_mapped_after_a_larger_one_was_freed";
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--test-threads=1"])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let output = String::from_utf8_lossy(&child.stdout);
            assert!(child.status.success() && output.contains("1 passed"), "{output}");
            return;
        }
        configure();
        // Left to itself, glibc would now serve everything under 8 MiB from an arena.
        drop(std::hint::black_box(vec![1u8; 8 << 20]));
        let before = mapped_bytes();
        let block = std::hint::black_box(vec![1u8; 1 << 20]);
        assert!(mapped_bytes() >= before + (1 << 20), "a 1 MiB block got pages of its own");
        drop(block);
    }
}
