//! Mail: building the MIME message, DKIM signing, the transports, and reading messages back.

pub mod dkim;
pub mod message;
pub mod read;
pub mod text;
mod text_layouts;
pub mod tracked;
pub mod transport;
