//! Adapters to services outside the appliance that are not mail: the DNS resolver, Amazon SNS
//! notifications, Stripe, and the guarded HTTP client outbound webhooks and sign-in use.

pub mod dns;
pub mod outbound_http;
pub mod sns;
pub mod stripe;
