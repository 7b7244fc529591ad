//! The bundled domain lists (`assets/lists/`), parsed once into sets.

use std::collections::HashSet;
use std::sync::LazyLock;

/// The lists, loaded on first use (the server touches them at start-up).
pub struct Lists {
    pub disposable: HashSet<&'static str>,
    pub personal: HashSet<&'static str>,
    pub aliases: HashSet<&'static str>,
    /// Most used first.
    pub popular: Vec<&'static str>,
}

fn entries(text: &'static str) -> impl Iterator<Item = &'static str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
}

static LISTS: LazyLock<Lists> = LazyLock::new(|| Lists {
    disposable: entries(include_str!("../../assets/lists/disposable.txt")).collect(),
    personal: entries(include_str!("../../assets/lists/personal.txt")).collect(),
    aliases: entries(include_str!("../../assets/lists/aliases.txt")).collect(),
    popular: entries(include_str!("../../assets/lists/popular.txt")).collect(),
});

pub fn lists() -> &'static Lists {
    &LISTS
}

/// Whether `domain` or one of its parents is in `set`.
pub fn contains_with_parents(set: &HashSet<&'static str>, domain: &str) -> bool {
    let mut rest = domain;
    loop {
        if set.contains(rest) {
            return true;
        }
        match rest.split_once('.') {
            Some((_, parent)) if parent.contains('.') => rest = parent,
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_load_and_are_sizeable() {
        let lists = lists();
        assert!(lists.disposable.len() > 5000, "{}", lists.disposable.len());
        assert!(lists.personal.len() > 1000);
        assert!(lists.disposable.contains("mailinator.com"));
        assert!(lists.personal.contains("gmail.com"));
        assert!(!lists.personal.contains("mailinator.com"), "personal excludes disposable");
        assert!(lists.aliases.contains("duck.com"));
        assert_eq!(lists.popular[0], "gmail.com");
        assert!(contains_with_parents(&lists.disposable, "x.mailinator.com"));
        assert!(!contains_with_parents(&lists.disposable, "example.com"));
    }
}
