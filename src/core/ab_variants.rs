//! Which variant of a campaign's A/B test each contact gets, and what an email of each shows
//! (issue 34, item 1; the test's settings and decision are `core::ab_tests`').
//!
//! Who is in the test share, and with which variant, is a hash of the campaign and the contact:
//! the split is random across contacts, the same on every run of an expansion batch, and needs
//! no stored draw.

use sha2::{Digest, Sha256};

use super::error::Result;
use super::jobs;
use crate::db::Tx;
use crate::db::ab_tests;
use crate::db::campaigns::Campaign;
use crate::db::jobs as queue;

/// Where a contact's email of the campaign stands in its test.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    /// The variant it carries (the test share's), `None` for the campaign's own content or the
    /// winner's.
    pub variant: Option<i64>,
    /// The sender name, when the variant changes it.
    pub from_name: Option<String>,
}

/// How an expansion batch of a campaign splits its contacts.
#[derive(Debug, Clone)]
pub enum Split {
    /// No test: everyone gets the campaign.
    Plain,
    /// The test share is being queued: only its contacts, each with a variant.
    Test { share: i64, from_names: Vec<Option<String>> },
    /// The test share is queued and the wait runs: nothing to queue.
    Waiting,
    /// The winner is known: everyone left gets it.
    Rest { from_name: Option<String> },
}

impl Split {
    /// How campaign `c`'s expansion splits now; a READY test starts (TESTING).
    pub fn of(tx: &Tx, c: &Campaign) -> Result<Split> {
        let Some(test) = &c.ab else { return Ok(Split::Plain) };
        let variants = ab_tests::variants(tx, &c.id)?;
        match (test.phase.as_str(), test.winner) {
            ("DECIDED", Some(winner)) => Ok(Split::Rest {
                from_name: variants.into_iter().find(|v| v.position == winner).and_then(|v| v.from_name),
            }),
            _ if test.decide_at.is_some() => Ok(Split::Waiting),
            _ => {
                ab_tests::begin(tx, &c.id)?;
                Ok(Split::Test {
                    share: test.share,
                    from_names: variants.into_iter().map(|v| v.from_name).collect(),
                })
            }
        }
    }

    /// Where contact `contact`'s email goes; `None` when it is not queued in this phase.
    pub fn place(&self, campaign: &str, contact: &str) -> Option<Place> {
        match self {
            Split::Plain => Some(Place { variant: None, from_name: None }),
            Split::Waiting => None,
            Split::Rest { from_name } => Some(Place { variant: None, from_name: from_name.clone() }),
            Split::Test { share, from_names } => {
                let n = from_names.len().max(1) as u64;
                let draw = draw(campaign, contact);
                // 10,000 buckets: a share in percent is a whole number of them.
                if (draw % 10_000) as i64 >= share * 100 {
                    return None;
                }
                let variant = ((draw / 10_000) % n) as usize;
                Some(Place { variant: Some(variant as i64), from_name: from_names[variant].clone() })
            }
        }
    }

    /// Whether the audience's end closes the test share (the wait then starts), not the
    /// campaign's expansion.
    pub fn ends_in_wait(&self) -> bool {
        matches!(self, Split::Test { .. })
    }
}

/// A uniform draw for a contact of a campaign, the same every time.
fn draw(campaign: &str, contact: &str) -> u64 {
    let digest = Sha256::new().chain_update(campaign).chain_update([0]).chain_update(contact).finalize();
    u64::from_be_bytes(digest[..8].try_into().expect("a SHA-256 digest has 8 bytes"))
}

/// The whole test share of campaign `c` is queued (`added` more in the last batch): the wait
/// starts, and the job that decides at its end is enqueued.
pub fn start_wait(tx: &Tx, c: &Campaign, added: i64, now: i64) -> Result<()> {
    let Some(test) = &c.ab else { return Ok(()) };
    let at = now + test.wait_hours * 3_600_000;
    ab_tests::wait(tx, &c.id, added, at)?;
    queue::enqueue_soonest(tx, &jobs::campaign_decide(&c.project_id, &c.id, at))?;
    Ok(())
}

/// Campaign `c` as one of its emails shows it: with the content of variant `variant` (an email
/// of the test share's), or of the winner (the rest's), over its own. `None` when no variant
/// applies (no test, or none decided).
pub fn as_sent(tx: &Tx, c: &Campaign, variant: Option<i64>) -> crate::db::Result<Option<Campaign>> {
    let Some(position) = variant.or(c.ab.as_ref().and_then(|t| t.winner)) else { return Ok(None) };
    let Some(v) = ab_tests::variant(tx, &c.id, position)? else { return Ok(None) };
    let mut shown = c.clone();
    if let Some(subject) = v.subject {
        shown.subject = subject;
    }
    if let Some(body) = v.body {
        shown.body = body;
    }
    Ok(Some(shown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_is_the_share_and_even_across_variants() {
        let split = Split::Test { share: 20, from_names: vec![None, None, Some("B".into())] };
        let mut per_variant = [0; 3];
        let n = 30_000;
        for i in 0..n {
            if let Some(place) = split.place("campaign-1", &format!("contact-{i}")) {
                per_variant[place.variant.unwrap() as usize] += 1;
                if place.variant == Some(2) {
                    assert_eq!(place.from_name.as_deref(), Some("B"));
                }
            }
        }
        let tested: i32 = per_variant.iter().sum();
        assert!((5_700..=6_300).contains(&tested), "{tested} of {n} at 20 %");
        for count in per_variant {
            assert!((1_800..=2_200).contains(&count), "{per_variant:?}");
        }
        // The same contact lands in the same place every time.
        assert_eq!(split.place("campaign-1", "contact-7"), split.place("campaign-1", "contact-7"));
        let all = Split::Test { share: 100, from_names: vec![None, None] };
        assert!((0..1000).all(|i| all.place("c", &i.to_string()).is_some()));
    }
}
