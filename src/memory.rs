//! Handing memory back to the system after a load peak.
//!
//! glibc's malloc gives busy threads arenas of their own (up to eight per core) and keeps what
//! is freed in them for reuse: after the perf harness's load the server stayed at 88 MiB resident
//! (24 MiB before it), most of it free memory inside those arenas. Limiting the arenas to two
//! brought that to 53 MiB but cost about a twentieth of the throughput, as every thread then
//! shares an arena lock; trimming every two seconds under load cost a tenth of `/v1/track`'s
//! CPU, as the pages given back were faulted in again at once. So the free pages of every arena
//! are given back (`malloc_trim`) once the process has gone quiet after being busy: checked
//! every [`INTERVAL`] from the process's own CPU time.

use std::time::Duration;

use tokio::sync::watch;

/// How often free memory is handed back.
pub const INTERVAL: Duration = Duration::from_secs(2);

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
const TICKS_PER_SECOND: f64 = 100.0;

/// This process's CPU time (user and system) in clock ticks, from `/proc/self/stat`.
fn cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces, so after its closing parenthesis):
    // state is the first, utime the 12th and stime the 13th.
    let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().skip(11);
    Some(fields.next()?.parse::<u64>().ok()? + fields.next()?.parse::<u64>().ok()?)
}

/// Whether a process that used `ticks` of CPU over `over` was quiet.
fn quiet(ticks: u64, over: Duration) -> bool {
    (ticks as f64) < QUIET_SHARE * TICKS_PER_SECOND * over.as_secs_f64()
}

/// Trims once after every busy spell, until `stopped` turns true.
pub async fn keep_trimming(mut stopped: watch::Receiver<bool>) {
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
}
