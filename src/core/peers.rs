//! Telling clients apart by their address: an IPv4 address is one client, and so is an IPv6
//! /64 (what one site or one customer is given, so a client cannot dodge a per-client limit by
//! walking its own block). An IPv4 address mapped into IPv6 counts as the IPv4 one.

use std::net::IpAddr;

/// The client `ip` belongs to, as a key for per-client limits.
pub fn client_of(ip: IpAddr) -> String {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
        IpAddr::V4(v4) => v4.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv6_64_is_one_client_and_mapped_ipv4_is_ipv4() {
        let client = |s: &str| client_of(s.parse().unwrap());
        assert_eq!(client("2001:db8:1:2:3:4:5:6"), client("2001:db8:1:2:ffff::1"));
        assert_ne!(client("2001:db8:1:2::1"), client("2001:db8:1:3::1"));
        assert_eq!(client("::ffff:203.0.113.7"), "203.0.113.7");
        assert_eq!(client("203.0.113.7"), "203.0.113.7");
    }
}
