//! Listeners other than HTTP: the SMTP server, whose bounce listener takes bounces and
//! complaints from any relay.

pub mod smtp;
