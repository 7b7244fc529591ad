//! Outgoing mail: building the MIME message, DKIM signing, and the transports.

pub mod dkim;
pub mod message;
pub mod text;
pub mod tracked;
pub mod transport;
