//! Deleting (or rewriting) rows a batch at a time within a time budget: what a project's wipe
//! and the retention pruning share, so that neither holds the writer long whatever a row costs.

use std::time::{Duration, Instant};

/// Most rows one statement touches.
pub const CHUNK: i64 = 200;
/// Fewest rows one statement touches.
const MIN_CHUNK: i64 = 10;

/// The statements of one step: how many rows the next touches, and whether the step's budget
/// is spent. A full statement over a quarter of the budget (rows with many index entries, pages
/// not in memory) halves the batch; one under a sixteenth doubles it, up to [`CHUNK`].
pub struct Batches {
    started: Instant,
    budget: Duration,
    chunk: i64,
}

impl Batches {
    /// A step of `budget`, starting with batches of `chunk` rows (what the last step ended with).
    pub fn new(budget: Duration, chunk: i64) -> Batches {
        Batches { started: Instant::now(), budget, chunk: chunk.clamp(MIN_CHUNK, CHUNK) }
    }

    /// Rows the next statement touches.
    pub fn chunk(&self) -> i64 {
        self.chunk
    }

    /// Runs one statement of at most [`Self::chunk`] rows; `run` returns the rows it touched.
    /// Whether the statement was full (more rows may be left).
    pub fn run(
        &mut self,
        run: impl FnOnce(i64) -> rusqlite::Result<usize>,
    ) -> rusqlite::Result<(usize, bool)> {
        let statement = Instant::now();
        let n = run(self.chunk)?;
        let full = n as i64 >= self.chunk;
        // A statement that came up short found the end of its rows: its time says nothing of
        // what the next table's rows cost.
        if !full {
            return Ok((n, false));
        }
        let took = statement.elapsed();
        if took > self.budget / 4 {
            self.chunk = (self.chunk / 2).max(MIN_CHUNK);
        } else if took < self.budget / 16 {
            self.chunk = (self.chunk * 2).min(CHUNK);
        }
        Ok((n, full))
    }

    /// Whether the step's time is up.
    pub fn spent(&self) -> bool {
        self.started.elapsed() >= self.budget
    }
}

/// Whether the rows `sql` selects are found through an index, in the order asked: no step of
/// its query plan scans a table or sorts. Named parameters up to the last the statement uses are bound from `args`
/// (for the tests of the batched deletions).
#[cfg(test)]
pub fn searches_an_index(sql: &str, args: &[&dyn rusqlite::ToSql]) -> Result<(), Vec<String>> {
    let mut conn = rusqlite::Connection::open_in_memory().unwrap();
    super::migrate::run(&mut conn).unwrap();
    let mut explain = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let used = explain.parameter_count();
    let plan: Vec<String> =
        explain.query_map(&args[..used], |r| r.get(3)).unwrap().collect::<Result<_, _>>().unwrap();
    if plan.iter().any(|step| step.starts_with("SCAN") || step.starts_with("USE TEMP B-TREE")) {
        Err(plan)
    } else {
        Ok(())
    }
}
