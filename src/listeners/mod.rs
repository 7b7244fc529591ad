//! Listeners other than HTTP: the SMTP server that takes bounces and complaints from any relay.

pub mod bounces;
