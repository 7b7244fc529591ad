//! Counted places, per key: the sessions a client has open (keyed by [`crate::core::peers`]'s
//! client), and the signed-in sessions of a project on the submission listener. Past the cap a
//! key gets no place; a place is given back when its [`Slot`] is dropped, however the session
//! ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How many places each key holds, at most `cap`.
pub struct Slots {
    open: Mutex<HashMap<String, u32>>,
    cap: u32,
}

/// A place taken, counted until dropped.
pub struct Slot {
    slots: Arc<Slots>,
    key: String,
}

impl Slots {
    pub fn new(cap: u32) -> Arc<Slots> {
        Arc::new(Slots { open: Mutex::new(HashMap::new()), cap: cap.max(1) })
    }

    /// A place for `key`, or none when it holds `cap` already.
    pub fn enter(self: &Arc<Self>, key: String) -> Option<Slot> {
        let mut open = self.open.lock().ok()?;
        let count = open.entry(key.clone()).or_default();
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        drop(open);
        Some(Slot { slots: self.clone(), key })
    }

    /// The places `key` holds.
    pub fn held(&self, key: &str) -> u32 {
        self.open.lock().map_or(0, |open| open.get(key).copied().unwrap_or(0))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.slots.open.lock()
            && let Some(count) = open.get_mut(&self.key)
        {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_at_most_cap_places_and_gets_them_back_on_drop() {
        let slots = Slots::new(2);
        let a = slots.enter("a".into()).unwrap();
        let _b = slots.enter("a".into()).unwrap();
        assert!(slots.enter("a".into()).is_none());
        let _other = slots.enter("b".into()).expect("another key has places of its own");
        drop(a);
        assert_eq!(slots.held("a"), 1);
        let _again = slots.enter("a".into()).expect("a place given back is free again");
        drop(_again);
        drop(_b);
        assert_eq!(slots.held("a"), 0);
        assert!(slots.open.lock().unwrap().get("a").is_none(), "no key is kept with nothing open");
    }
}
