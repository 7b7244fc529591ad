//! Fair shares of a shared queue (appliance.md §13): every queue of background work (emails to
//! deliver, webhook deliveries, workflow executions, jobs) is claimed through [`claim`], which
//! takes due rows round-robin across the projects that have any, each project within what it
//! may hold at once. So one project's huge or slow work delays only that project: another's due
//! row is in the next claim whatever the first has queued, and a project that holds its whole
//! share is passed over until some of it is done.
//!
//! A queue says how to find the projects with pending rows ([`Queue::owners`], in id order
//! from a point, using an index led by the project) and how to read one project's next due
//! rows in its own order ([`Queue::due`]); [`claim`] does the turns. A claim reads at most
//! [`MAX_OWNERS`] projects, from the one after where the last claim started, so its cost does
//! not grow with the number of projects and each one comes first in its turn.

use super::error::Result;
use std::collections::HashMap;

use rusqlite::Connection;

/// Whose work a row is: a project's, or (`None`) the service's own.
pub type Owner = Option<String>;

/// Projects one claim looks at, at most.
pub const MAX_OWNERS: usize = 256;

/// What a worker holds of one queue, per project; how much one project may hold at once; and
/// where the next claim starts.
#[derive(Debug, Clone)]
pub struct Turns {
    held: HashMap<Owner, usize>,
    cap: usize,
    /// The project served first by the last claim: the next one starts after it.
    after: Option<Owner>,
}

impl Turns {
    /// A project may hold at most `cap` (at least 1) of this queue's rows at once.
    pub fn new(cap: usize) -> Turns {
        Turns { held: HashMap::new(), cap: cap.max(1), after: None }
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// How many more rows `owner` may take now.
    pub fn room(&self, owner: &Owner) -> usize {
        self.cap.saturating_sub(self.held(owner))
    }

    pub fn held(&self, owner: &Owner) -> usize {
        self.held.get(owner).copied().unwrap_or(0)
    }

    /// What the worker holds now, per project, in place of what was counted.
    pub fn hold<'a>(&mut self, held: impl Iterator<Item = (&'a Owner, usize)>) {
        self.held.clear();
        for (owner, n) in held {
            *self.held.entry(owner.clone()).or_default() += n;
        }
        self.held.retain(|_, n| *n > 0);
    }

    /// The worker took a row of `owner`'s.
    pub fn take(&mut self, owner: &Owner) {
        *self.held.entry(owner.clone()).or_default() += 1;
    }

    /// The worker is done with a row of `owner`'s.
    pub fn give_back(&mut self, owner: &Owner) {
        if let Some(n) = self.held.get_mut(owner) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.held.remove(owner);
            }
        }
    }

    /// Rows held of every project.
    /// Whether some project holds all it may: its due rows, if any, wait for it to finish some.
    pub fn any_full(&self) -> bool {
        self.held.values().any(|n| *n >= self.cap)
    }

    pub fn total(&self) -> usize {
        self.held.values().sum()
    }
}

/// One queue's rows, as [`claim`] reads them.
pub trait Queue {
    type Row;

    /// Up to `limit` projects with pending rows, in id order, from the first after `after`
    /// (from the first of all when `after` is `None`); the service's own rows, where a queue
    /// has them, come first as `None`.
    fn owners(&self, conn: &Connection, after: Option<&Owner>, limit: usize) -> Result<Vec<Owner>>;

    /// `owner`'s due rows not in hand, in the queue's order, `limit` of them from `offset`.
    fn due(
        &self,
        conn: &Connection,
        owner: &Owner,
        limit: usize,
        offset: usize,
    ) -> super::error::Result<Vec<Self::Row>>;
}

/// Up to `limit` projects with rows of `table` matching `pending`, in id order after `after`:
/// one seek each in an index on `table(project_id, …) WHERE pending` (a loose index scan, which
/// SQLite does not make by itself). For tables whose rows all belong to a project.
pub fn projects_with(
    conn: &Connection,
    table: &str,
    pending: &str,
    after: Option<&Owner>,
    limit: usize,
) -> Result<Vec<Owner>> {
    // '' sorts before every id.
    let start = after.and_then(|a| a.as_deref()).unwrap_or("");
    let next = format!(
        "SELECT project_id FROM {table} WHERE {pending} AND project_id > owners.id ORDER BY project_id LIMIT 1"
    );
    let first = next.replace("owners.id", "?1");
    Ok(conn
        .prepare_cached(&format!(
            "WITH RECURSIVE owners(id, n) AS (
             SELECT ({first}), 1
             UNION ALL
             SELECT ({next}), n + 1 FROM owners WHERE owners.id IS NOT NULL AND n < ?2
         )
         SELECT id FROM owners WHERE id IS NOT NULL"
        ))?
        .query_map(rusqlite::params![start, limit as i64], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Up to `free` due rows of `queue`, round-robin across the projects that have any, from the
/// one after where the last claim started, none past its room in `turns`; each with its owner.
/// They are counted in `turns` as held (the worker gives each back, [`Turns::give_back`], when
/// done with it) and the next claim's starting point is set; leasing them is the caller's, in
/// the same transaction.
pub fn claim<Q: Queue>(
    conn: &Connection,
    queue: &Q,
    turns: &mut Turns,
    free: usize,
) -> Result<Vec<(Owner, Q::Row)>> {
    if free == 0 {
        return Ok(Vec::new());
    }
    let mut owners = queue.owners(conn, turns.after.as_ref(), MAX_OWNERS)?;
    if owners.len() < MAX_OWNERS && turns.after.is_some() {
        // Round again from the first, up to where this turn started.
        for owner in queue.owners(conn, None, MAX_OWNERS - owners.len())? {
            if owners.contains(&owner) {
                break;
            }
            owners.push(owner);
        }
    }
    owners.retain(|owner| turns.room(owner) > 0);
    let picked = take_turns(
        owners,
        |o| turns.room(o),
        free,
        |owner, limit, offset| queue.due(conn, owner, limit, offset),
    )?;
    if let Some((first, _)) = picked.first() {
        turns.after = Some(first.clone());
    }
    for (owner, _) in &picked {
        turns.take(owner);
    }
    Ok(picked)
}

/// The turns themselves: each owner's rows read a fair quota at a time (more from those that
/// have more, while the claim is not full), then taken one per owner per round.
fn take_turns<T>(
    owners: Vec<Owner>,
    room: impl Fn(&Owner) -> usize,
    free: usize,
    mut due: impl FnMut(&Owner, usize, usize) -> Result<Vec<T>>,
) -> Result<Vec<(Owner, T)>> {
    if owners.is_empty() {
        return Ok(Vec::new());
    }
    let quota = free.div_ceil(owners.len());
    // (owner, rows read, whether it may have more)
    let mut lists: Vec<(Owner, Vec<T>, bool)> = Vec::with_capacity(owners.len());
    let mut read = 0;
    for owner in owners {
        let want = quota.min(room(&owner));
        let rows = due(&owner, want, 0)?;
        read += rows.len();
        let more = rows.len() == want && want < room(&owner);
        lists.push((owner, rows, more));
    }
    for (owner, rows, more) in lists.iter_mut() {
        if read >= free {
            break;
        }
        if !*more {
            continue;
        }
        let want = (free - read).min(room(owner) - rows.len());
        let extra = due(owner, want, rows.len())?;
        read += extra.len();
        rows.extend(extra);
    }
    let mut iters: Vec<(Owner, std::vec::IntoIter<T>)> =
        lists.into_iter().map(|(owner, rows, _)| (owner, rows.into_iter())).collect();
    let mut picked = Vec::with_capacity(free.min(read));
    while picked.len() < free {
        let before = picked.len();
        for (owner, rows) in iters.iter_mut() {
            if picked.len() == free {
                break;
            }
            if let Some(row) = rows.next() {
                picked.push((owner.clone(), row));
            }
        }
        if picked.len() == before {
            break;
        }
    }
    Ok(picked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(name: &str) -> Owner {
        Some(name.to_string())
    }

    /// Owners with `counts` due rows each, named "a", "b", …; rows are (owner, index).
    fn turns_of(counts: &[usize], room: usize, free: usize) -> Vec<(String, usize)> {
        let names: Vec<Owner> =
            (0..counts.len()).map(|i| owner(&((b'a' + i as u8) as char).to_string())).collect();
        let picked = take_turns(
            names.clone(),
            |_| room,
            free,
            |o, limit, offset| {
                let i = names.iter().position(|n| n == o).unwrap();
                Ok((offset..counts[i].min(offset + limit)).map(|k| (o.clone().unwrap(), k)).collect())
            },
        )
        .unwrap();
        picked.into_iter().map(|(_, row)| row).collect()
    }

    #[test]
    fn each_owner_takes_a_turn_before_any_takes_a_second() {
        let picked = turns_of(&[1000, 1, 3], 100, 5);
        let owners: Vec<&str> = picked.iter().map(|(o, _)| o.as_str()).collect();
        assert_eq!(owners, ["a", "b", "c", "a", "c"]);
    }

    #[test]
    fn a_lone_owner_fills_the_claim_and_the_rest_of_a_claim_goes_to_those_with_more() {
        assert_eq!(turns_of(&[1000], 100, 64).len(), 64);
        let picked = turns_of(&[1000, 1], 100, 64);
        assert_eq!(picked.len(), 64, "b's one row, and a's rows fill the rest");
        assert_eq!(picked.iter().filter(|(o, _)| o == "b").count(), 1);
        let rows: Vec<usize> = picked.iter().filter(|(o, _)| o == "a").map(|(_, k)| *k).collect();
        assert_eq!(rows, (0..63).collect::<Vec<_>>(), "in its own order, none twice");
    }

    #[test]
    fn no_owner_takes_past_its_room() {
        let picked = turns_of(&[1000, 1000], 3, 64);
        assert_eq!(picked.len(), 6);
    }

    /// The class defence: a table with a lease column (`locked_until`) is a shared queue, and
    /// every one is read through a [`Queue`] and claimed with [`claim`], in turns. A new queue
    /// claimed some other way fails here.
    #[test]
    fn every_leased_table_is_claimed_in_turns() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut queues = Vec::new();
        for entry in std::fs::read_dir(root.join("migrations")).unwrap() {
            let sql = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            let sql: String =
                sql.lines().map(|l| l.split("--").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
            for statement in sql.split(';') {
                let words: Vec<&str> = statement.split_whitespace().collect();
                let table = match words.as_slice() {
                    ["CREATE", "TABLE", table, ..] | ["ALTER", "TABLE", table, ..] => {
                        table.trim_end_matches('(')
                    }
                    _ => continue,
                };
                if words.contains(&"locked_until") && !statement.contains("INDEX") {
                    queues.push(table.to_string());
                }
            }
        }
        queues.sort();
        queues.dedup();
        assert!(queues.len() >= 4, "{queues:?}");
        let sources: Vec<String> = std::fs::read_dir(root.join("src/db"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|path| path.is_file())
            .map(|path| std::fs::read_to_string(path).unwrap())
            .collect();
        for table in &queues {
            let claimed_in_turns = sources.iter().any(|source| {
                source.contains("fair::claim(")
                    && source
                        .split("impl fair::Queue for")
                        .skip(1)
                        .any(|q| q.contains(&format!("FROM {table}")))
            });
            assert!(claimed_in_turns, "{table} has a lease but is not claimed through fair::claim");
        }
    }

    #[test]
    fn held_rows_count_against_the_room_until_given_back() {
        let mut turns = Turns::new(2);
        let a = owner("a");
        turns.take(&a);
        turns.take(&a);
        assert_eq!((turns.room(&a), turns.room(&owner("b")), turns.total()), (0, 2, 2));
        turns.give_back(&a);
        assert_eq!(turns.room(&a), 1);
        turns.give_back(&a);
        turns.give_back(&a);
        assert_eq!((turns.room(&a), turns.total()), (2, 0), "never below nothing");
        assert_eq!(Turns::new(0).cap(), 1, "every project may hold one");
    }
}
