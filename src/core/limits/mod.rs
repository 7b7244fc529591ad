//! What keeps one client or one project from taking more than its share of the server, in
//! memory: request and sending rates ([`ratelimit`]), sign-in failures ([`attempts`]), the
//! memory of request bodies being read ([`bodies`]), and the API keys already looked up
//! ([`key_cache`]), which spare the database a query per request.

pub mod attempts;
pub mod bodies;
pub mod key_cache;
pub mod provider_gate;
pub mod ratelimit;
