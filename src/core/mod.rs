//! HTTP-free logic, unit-tested here and shared by the API, the CLI and the scheduler.

pub mod accounts;
pub mod email;
pub mod keys;
pub mod projects;
pub mod session;
