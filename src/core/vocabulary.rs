//! The typed vocabulary of email: its kind, which decides what is added to it and who may get it,
//! what made it, and its status; and where a campaign stands. Rows keep them as the API's words
//! (`MARKETING`, `QUEUED`, `SENDING`); core names them here, and a row's text compares with them
//! directly (`email.kind == EmailKind::Marketing`).

use crate::db::campaigns::Campaign;

/// What an email is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmailKind {
    /// Sent as asked, with tracking.
    Transactional,
    /// Only to subscribed, unsuppressed contacts, with an unsubscribe link and List-Unsubscribe.
    Marketing,
    /// Sent as written: nothing added, nothing tracked.
    Headless,
}

impl EmailKind {
    pub const ALL: [EmailKind; 3] = [EmailKind::Transactional, EmailKind::Marketing, EmailKind::Headless];

    /// The kind as the API and the rows name it.
    pub const fn as_str(self) -> &'static str {
        match self {
            EmailKind::Transactional => "TRANSACTIONAL",
            EmailKind::Marketing => "MARKETING",
            EmailKind::Headless => "HEADLESS",
        }
    }

    /// The kind named `name`, if any.
    pub fn parse(name: &str) -> Option<EmailKind> {
        EmailKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// What made an email.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmailSource {
    /// `POST /v1/send`.
    Transactional,
    Campaign,
    /// A campaign's test send: outside its counters.
    Test,
    Workflow,
    /// The appliance's own mail (account links, invitations).
    System,
}

impl EmailSource {
    pub const ALL: [EmailSource; 5] = [
        EmailSource::Transactional,
        EmailSource::Campaign,
        EmailSource::Test,
        EmailSource::Workflow,
        EmailSource::System,
    ];

    /// The source as the rows and events name it (`sourceType`).
    pub const fn as_str(self) -> &'static str {
        match self {
            EmailSource::Transactional => "TRANSACTIONAL",
            EmailSource::Campaign => "CAMPAIGN",
            EmailSource::Test => "TEST",
            EmailSource::Workflow => "WORKFLOW",
            EmailSource::System => "SYSTEM",
        }
    }

    /// The source named `name`, if any.
    pub fn parse(name: &str) -> Option<EmailSource> {
        EmailSource::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// Where an email stands; each status after SENT is reached at most once, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmailStatus {
    Queued,
    Sent,
    Delivered,
    Opened,
    Clicked,
    Bounced,
    Complained,
    Failed,
}

impl EmailStatus {
    pub const ALL: [EmailStatus; 8] = [
        EmailStatus::Queued,
        EmailStatus::Sent,
        EmailStatus::Delivered,
        EmailStatus::Opened,
        EmailStatus::Clicked,
        EmailStatus::Bounced,
        EmailStatus::Complained,
        EmailStatus::Failed,
    ];

    /// The status as the API and the rows name it.
    pub const fn as_str(self) -> &'static str {
        match self {
            EmailStatus::Queued => "QUEUED",
            EmailStatus::Sent => "SENT",
            EmailStatus::Delivered => "DELIVERED",
            EmailStatus::Opened => "OPENED",
            EmailStatus::Clicked => "CLICKED",
            EmailStatus::Bounced => "BOUNCED",
            EmailStatus::Complained => "COMPLAINED",
            EmailStatus::Failed => "FAILED",
        }
    }

    /// The status named `name`, if any.
    pub fn parse(name: &str) -> Option<EmailStatus> {
        EmailStatus::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// Where a campaign stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CampaignStatus {
    Draft,
    Scheduled,
    Sending,
    Sent,
    Cancelled,
}

impl CampaignStatus {
    pub const ALL: [CampaignStatus; 5] =
        [Self::Draft, Self::Scheduled, Self::Sending, Self::Sent, Self::Cancelled];

    /// The name stored and shown: `DRAFT`, `SCHEDULED`, ...
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "DRAFT",
            Self::Scheduled => "SCHEDULED",
            Self::Sending => "SENDING",
            Self::Sent => "SENT",
            Self::Cancelled => "CANCELLED",
        }
    }

    pub fn of(c: &Campaign) -> Option<CampaignStatus> {
        Self::ALL.into_iter().find(|s| s.as_str() == c.status)
    }

    /// The status named `name`, if any.
    pub fn parse(name: &str) -> Option<CampaignStatus> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// DRAFT and SCHEDULED campaigns may still change, be sent or be rescheduled.
    pub fn is_editable(self) -> bool {
        matches!(self, Self::Draft | Self::Scheduled)
    }
}

/// A row's text compares with the word it holds.
macro_rules! compares_with_text {
    ($($t:ty),*) => {$(
        impl PartialEq<$t> for String {
            fn eq(&self, other: &$t) -> bool {
                self == other.as_str()
            }
        }

        impl PartialEq<$t> for str {
            fn eq(&self, other: &$t) -> bool {
                self == other.as_str()
            }
        }

        impl PartialEq<$t> for &str {
            fn eq(&self, other: &$t) -> bool {
                *self == other.as_str()
            }
        }

        impl From<$t> for String {
            fn from(value: $t) -> String {
                value.as_str().to_string()
            }
        }
    )*};
}

compares_with_text!(EmailKind, EmailSource, EmailStatus, CampaignStatus);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_compare_with_row_text() {
        for kind in EmailKind::ALL {
            assert_eq!(EmailKind::parse(kind.as_str()), Some(kind));
        }
        for source in EmailSource::ALL {
            assert_eq!(EmailSource::parse(source.as_str()), Some(source));
        }
        for status in EmailStatus::ALL {
            assert_eq!(EmailStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(EmailKind::parse("marketing"), None, "the API's words are capitals");
        let row = String::from("MARKETING");
        assert!(row == EmailKind::Marketing && row != EmailKind::Headless);
        assert!("QUEUED" == EmailStatus::Queued);
        assert_eq!(String::from(EmailStatus::Failed), "FAILED");
        for status in CampaignStatus::ALL {
            assert_eq!(CampaignStatus::parse(status.as_str()), Some(status));
        }
        assert!("SENDING" == CampaignStatus::Sending);
    }
}
