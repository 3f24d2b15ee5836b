//! Which addresses `web_fetch` may connect to.
//!
//! A fetch on behalf of a model must never reach the user's own machine or
//! network: loopback, private ranges, link-local (with the cloud metadata
//! address 169.254.169.254), CGNAT, unique-local and site-local IPv6,
//! multicast, unspecified, documentation and reserved ranges — and the
//! IPv6 spellings that carry an IPv4 address inside (mapped `::ffff:a.b.c.d`,
//! compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`), which
//! are judged by the address they carry. [`AddressPolicy`] says yes or no
//! for one address; `allow_private` CIDRs open chosen ranges exactly.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// Why an address is not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonPublic {
    Unspecified,
    Loopback,
    Private,
    LinkLocal,
    SharedCgnat,
    UniqueLocal,
    SiteLocal,
    Multicast,
    Broadcast,
    Documentation,
    Benchmarking,
    Reserved,
}

impl fmt::Display for NonPublic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NonPublic::Unspecified => "unspecified",
            NonPublic::Loopback => "loopback",
            NonPublic::Private => "private",
            NonPublic::LinkLocal => "link-local",
            NonPublic::SharedCgnat => "carrier-grade NAT (100.64.0.0/10)",
            NonPublic::UniqueLocal => "unique-local (fc00::/7)",
            NonPublic::SiteLocal => "site-local (fec0::/10)",
            NonPublic::Multicast => "multicast",
            NonPublic::Broadcast => "broadcast",
            NonPublic::Documentation => "documentation",
            NonPublic::Benchmarking => "benchmarking",
            NonPublic::Reserved => "reserved",
        })
    }
}

/// `None` for a public address, else what it is.
pub fn classify(ip: IpAddr) -> Option<NonPublic> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<NonPublic> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => NonPublic::Unspecified,
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => NonPublic::Private,
        (100, 64..=127, _) => NonPublic::SharedCgnat,
        (127, _, _) => NonPublic::Loopback,
        (169, 254, _) => NonPublic::LinkLocal,
        (192, 0, 0) | (192, 88, 99) => NonPublic::Reserved,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => NonPublic::Documentation,
        (198, 18..=19, _) => NonPublic::Benchmarking,
        (224..=239, _, _) => NonPublic::Multicast,
        (255, 255, 255) if ip == Ipv4Addr::BROADCAST => NonPublic::Broadcast,
        (240..=255, _, _) => NonPublic::Reserved,
        _ => return None,
    })
}

fn classify_v6(ip: Ipv6Addr) -> Option<NonPublic> {
    if let Some(v4) = embedded_v4(ip) {
        // Judged by what it carries; a public IPv4 inside is still not a
        // way to reach it through some translator we do not control.
        return Some(classify_v4(v4).unwrap_or(NonPublic::Reserved));
    }
    let s = ip.segments();
    Some(match s {
        _ if ip.is_unspecified() => NonPublic::Unspecified,
        _ if ip.is_loopback() => NonPublic::Loopback,
        [0, 0, 0, 0, 0, 0, _, _] => NonPublic::Reserved,
        [0x64, 0xff9b, 1, ..] => NonPublic::Reserved,
        [0x100, 0, 0, 0, ..] => NonPublic::Reserved,
        [0x2001, 0x0db8, ..] | [0x3fff, 0..=0x0fff, ..] => NonPublic::Documentation,
        [0x2001, 0, ..] => NonPublic::Reserved, // Teredo
        [0x2001, 0x0002, 0, ..] => NonPublic::Benchmarking,
        [first, ..] if first & 0xfe00 == 0xfc00 => NonPublic::UniqueLocal,
        [first, ..] if first & 0xffc0 == 0xfe80 => NonPublic::LinkLocal,
        [first, ..] if first & 0xffc0 == 0xfec0 => NonPublic::SiteLocal,
        [first, ..] if first & 0xff00 == 0xff00 => NonPublic::Multicast,
        // Only 2000::/3 is handed out as global unicast.
        [first, ..] if first & 0xe000 != 0x2000 => NonPublic::Reserved,
        _ => return None,
    })
}

/// The IPv4 address an IPv6 spelling carries: mapped (`::ffff:a.b.c.d`),
/// compatible (`::a.b.c.d`, but not `::` or `::1`), NAT64 (`64:ff9b::/96`)
/// or 6to4 (`2002:AABB:CCDD::/48`).
pub fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

/// `10.0.0.0/8`, `fd00::/8`; a bare address is a single-address range.
pub(crate) fn parse_cidr(text: &str) -> Option<IpNet> {
    let text = text.trim();
    if let Ok(net) = text.parse::<IpNet>() {
        return Some(net);
    }
    text.parse::<IpAddr>().ok().map(IpNet::from)
}

/// A refused address and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub ip: IpAddr,
    pub class: NonPublic,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is a {} address", self.ip, self.class)
    }
}

/// Public addresses, plus the ranges `allow_private` names.
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    allowed: Vec<IpNet>,
}

impl AddressPolicy {
    /// Public addresses only.
    pub fn public_only() -> Self {
        Self::default()
    }

    /// Public addresses and `ranges`.
    pub fn allowing(ranges: impl IntoIterator<Item = IpNet>) -> Self {
        Self {
            allowed: ranges.into_iter().collect(),
        }
    }

    /// Whether a connection to `ip` is allowed.
    pub fn check(&self, ip: IpAddr) -> Result<(), Refusal> {
        let Some(class) = classify(ip) else {
            return Ok(());
        };
        let carried = match ip {
            IpAddr::V6(v6) => embedded_v4(v6).map(IpAddr::V4),
            IpAddr::V4(_) => None,
        };
        let opened = self
            .allowed
            .iter()
            .any(|net| net.contains(&ip) || carried.is_some_and(|v4| net.contains(&v4)));
        if opened {
            return Ok(());
        }
        Err(Refusal { ip, class })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn every_non_public_range_is_refused_with_its_name() {
        for (text, class) in [
            ("0.0.0.0", NonPublic::Unspecified),
            ("0.1.2.3", NonPublic::Unspecified),
            ("127.0.0.1", NonPublic::Loopback),
            ("127.255.255.254", NonPublic::Loopback),
            ("10.0.0.1", NonPublic::Private),
            ("172.16.0.1", NonPublic::Private),
            ("172.31.255.255", NonPublic::Private),
            ("192.168.1.1", NonPublic::Private),
            ("169.254.169.254", NonPublic::LinkLocal),
            ("100.64.0.1", NonPublic::SharedCgnat),
            ("100.127.255.255", NonPublic::SharedCgnat),
            ("224.0.0.1", NonPublic::Multicast),
            ("239.255.255.250", NonPublic::Multicast),
            ("255.255.255.255", NonPublic::Broadcast),
            ("240.0.0.1", NonPublic::Reserved),
            ("192.0.2.1", NonPublic::Documentation),
            ("198.18.0.1", NonPublic::Benchmarking),
            ("::", NonPublic::Unspecified),
            ("::1", NonPublic::Loopback),
            ("fc00::1", NonPublic::UniqueLocal),
            ("fd12:3456::1", NonPublic::UniqueLocal),
            ("fe80::1", NonPublic::LinkLocal),
            ("febf::1", NonPublic::LinkLocal),
            ("fec0::1", NonPublic::SiteLocal),
            ("ff02::1", NonPublic::Multicast),
            ("2001:db8::1", NonPublic::Documentation),
            ("::ffff:127.0.0.1", NonPublic::Loopback),
            ("::ffff:7f00:1", NonPublic::Loopback),
            ("::ffff:10.1.2.3", NonPublic::Private),
            ("::ffff:169.254.169.254", NonPublic::LinkLocal),
            ("::ffff:0.0.0.0", NonPublic::Unspecified),
            ("::127.0.0.1", NonPublic::Loopback),
            ("64:ff9b::a9fe:a9fe", NonPublic::LinkLocal),
            ("2002:7f00:1::", NonPublic::Loopback),
            ("2002:c0a8:101::1", NonPublic::Private),
            ("2001::1", NonPublic::Reserved),
        ] {
            assert_eq!(classify(ip(text)), Some(class), "{text}");
            let refused = AddressPolicy::public_only().check(ip(text)).unwrap_err();
            assert_eq!(refused.class, class, "{text}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for text in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "169.253.1.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
        ] {
            assert_eq!(classify(ip(text)), None, "{text}");
            assert!(
                AddressPolicy::public_only().check(ip(text)).is_ok(),
                "{text}"
            );
        }
        // A public IPv4 inside an IPv6 spelling is still refused.
        assert!(
            AddressPolicy::public_only()
                .check(ip("::ffff:1.1.1.1"))
                .is_err()
        );
    }

    #[test]
    fn allow_private_opens_exactly_its_ranges() {
        let policy = AddressPolicy::allowing([
            parse_cidr("127.0.0.2/32").unwrap(),
            parse_cidr("fd00::/8").unwrap(),
            parse_cidr("10.1.0.0/16").unwrap(),
        ]);
        assert!(policy.check(ip("127.0.0.2")).is_ok());
        assert!(policy.check(ip("::ffff:127.0.0.2")).is_ok());
        assert!(policy.check(ip("127.0.0.1")).is_err());
        assert!(policy.check(ip("127.0.0.3")).is_err());
        assert!(policy.check(ip("fd00::5")).is_ok());
        assert!(policy.check(ip("fc00::5")).is_err());
        assert!(policy.check(ip("10.1.255.255")).is_ok());
        assert!(policy.check(ip("10.2.0.0")).is_err());
        assert!(policy.check(ip("169.254.169.254")).is_err());
    }

    #[test]
    fn cidrs_and_bare_addresses_parse() {
        assert_eq!(parse_cidr("127.0.0.2").unwrap().to_string(), "127.0.0.2/32");
        assert_eq!(
            parse_cidr(" 10.0.0.0/8 ").unwrap().to_string(),
            "10.0.0.0/8"
        );
        assert!(parse_cidr("10.0.0.0/33").is_none());
        assert!(parse_cidr("intranet").is_none());
    }

    #[test]
    fn refusals_say_what_the_address_is_and_how_to_open_it() {
        let text = AddressPolicy::public_only()
            .check(ip("169.254.169.254"))
            .unwrap_err()
            .to_string();
        assert_eq!(text, "169.254.169.254 is a link-local address");
    }
}
