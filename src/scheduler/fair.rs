//! Work a worker has claimed and not finished, started fairly: [`FairQueue`] keeps each
//! project's claimed items in a queue of its own and starts them round-robin across projects,
//! none past its cap on items running at once. With [`crate::db::fair`]'s claims it makes the
//! fair shares of every queue: claimed in turns, started in turns, so one project's slow work
//! (a webhook that never answers, a relay slow with its large messages) holds at most its own
//! share of the slots and never another project's.

use std::collections::{HashMap, VecDeque};

use crate::db::fair::{Owner, Turns};

/// Claimed items waiting to start, per project, and how many of each project's are running.
pub struct FairQueue<T> {
    /// Projects with items waiting, in the order of their next turn.
    waiting: VecDeque<(Owner, VecDeque<T>)>,
    running: HashMap<Owner, usize>,
    /// Most items of one project running at once.
    cap: usize,
    /// Whether a project may run past its cap while no other project's item could start.
    lends: bool,
    len: usize,
}

impl<T> FairQueue<T> {
    /// A queue that runs at most `cap` (at least 1) items of one project at once.
    pub fn new(cap: usize) -> FairQueue<T> {
        FairQueue { waiting: VecDeque::new(), running: HashMap::new(), cap: cap.max(1), lends: false, len: 0 }
    }

    /// A queue whose cap holds only while another project's item could start: alone, a project
    /// uses every slot. For short work (a send to a relay), where a slot comes free soon; work
    /// that can hold a slot for long (a webhook that never answers) keeps the hard cap of
    /// [`FairQueue::new`].
    pub fn lending(cap: usize) -> FairQueue<T> {
        FairQueue { lends: true, ..FairQueue::new(cap) }
    }

    /// Adds a claimed item of `owner`'s, to start in its turn.
    pub fn push(&mut self, owner: Owner, item: T) {
        self.len += 1;
        match self.waiting.iter_mut().find(|(o, _)| *o == owner) {
            Some((_, items)) => items.push_back(item),
            None => self.waiting.push_back((owner, VecDeque::from([item]))),
        }
    }

    /// The next item to start: the first waiting of the next project in turn that runs fewer
    /// than its cap, counted as running until [`FairQueue::finished`]. `None` when every
    /// project with items waiting is at its cap, or none waits.
    pub fn start(&mut self) -> Option<(Owner, T)> {
        for _ in 0..self.waiting.len() {
            let (owner, mut items) = self.waiting.pop_front()?;
            let running = self.running.get(&owner).copied().unwrap_or(0);
            if running >= self.cap && (!self.lends || self.any_under_cap()) {
                self.waiting.push_back((owner, items));
                continue;
            }
            let item = items.pop_front()?;
            self.len -= 1;
            *self.running.entry(owner.clone()).or_default() += 1;
            if !items.is_empty() {
                self.waiting.push_back((owner.clone(), items));
            }
            return Some((owner, item));
        }
        None
    }

    /// An item of `owner`'s that was started is done.
    pub fn finished(&mut self, owner: &Owner) {
        if let Some(n) = self.running.get_mut(owner) {
            *n -= 1;
            if *n == 0 {
                self.running.remove(owner);
            }
        }
    }

    /// Whether [`FairQueue::start`] would start an item now.
    pub fn can_start(&self) -> bool {
        if self.lends { !self.waiting.is_empty() } else { self.any_under_cap() }
    }

    /// Whether an item waits whose project runs fewer than its cap.
    fn any_under_cap(&self) -> bool {
        self.waiting.iter().any(|(owner, _)| self.running.get(owner).copied().unwrap_or(0) < self.cap)
    }

    /// Items waiting to start.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Items running.
    pub fn running(&self) -> usize {
        self.running.values().sum()
    }

    /// The items waiting, in no set order.
    pub fn waiting(&self) -> impl Iterator<Item = &T> {
        self.waiting.iter().flat_map(|(_, items)| items.iter())
    }

    /// Takes every item waiting (on shutdown).
    pub fn drain(&mut self) -> Vec<T> {
        self.len = 0;
        self.waiting.drain(..).flat_map(|(_, items)| items).collect()
    }

    /// What each project holds, waiting or running, for the next claim's `turns`.
    pub fn held(&self, turns: &mut Turns) {
        let waiting = self.waiting.iter().map(|(owner, items)| (owner, items.len()));
        turns.hold(waiting.chain(self.running.iter().map(|(owner, n)| (owner, *n))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(name: &str) -> Owner {
        Some(name.to_string())
    }

    #[test]
    fn projects_start_in_turns_and_none_past_its_cap() {
        let mut queue = FairQueue::new(2);
        for i in 0..5 {
            queue.push(owner("a"), format!("a{i}"));
        }
        queue.push(owner("b"), "b0".to_string());
        let started: Vec<String> = std::iter::from_fn(|| queue.start().map(|(_, item)| item)).collect();
        assert_eq!(started, ["a0", "b0", "a1"], "a's third waits for one of its two to finish");
        assert_eq!((queue.len(), queue.running()), (3, 3));
        queue.finished(&owner("a"));
        assert_eq!(queue.start().map(|(_, item)| item).as_deref(), Some("a2"));
        assert!(queue.start().is_none());
    }

    #[test]
    fn a_lending_queue_runs_a_project_alone_past_its_cap_until_another_could_start() {
        let mut queue = FairQueue::lending(2);
        for i in 0..4 {
            queue.push(owner("a"), format!("a{i}"));
        }
        let started: Vec<String> = std::iter::from_fn(|| queue.start().map(|(_, item)| item)).collect();
        assert_eq!(started, ["a0", "a1", "a2", "a3"], "alone, a uses every slot");
        queue.push(owner("a"), "a4".into());
        queue.push(owner("b"), "b0".into());
        assert_eq!(queue.start().map(|(_, item)| item).as_deref(), Some("b0"), "b goes first");
        assert_eq!(
            queue.start().map(|(_, item)| item).as_deref(),
            Some("a4"),
            "then a, b having nothing left"
        );
    }

    #[test]
    fn what_is_held_counts_waiting_and_running_items() {
        let mut queue = FairQueue::new(1);
        queue.push(owner("a"), 1);
        queue.push(owner("a"), 2);
        queue.push(None, 3);
        queue.start();
        let mut turns = Turns::new(3);
        queue.held(&mut turns);
        assert_eq!((turns.held(&owner("a")), turns.held(&None), turns.total()), (2, 1, 3));
        assert_eq!(queue.drain().len(), 2);
        assert!(queue.is_empty());
    }
}
