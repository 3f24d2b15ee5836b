//! `web_fetch`'s SSRF guard: the URLs and addresses a model hands it.
//!
//! Oracles:
//!
//! - the classification of an address agrees with a table of the IANA
//!   special-purpose ranges written separately here (and every IPv6
//!   spelling that carries an IPv4 address is refused, as RFC 0061 says);
//! - a refused IPv4 address never comes back allowed under another
//!   spelling: decimal, hexadecimal or octal numbers, short forms, a
//!   trailing dot, percent-encoding, full-width digits, or an IPv6 address
//!   that carries it (mapped, compatible, NAT64, 6to4) — through the
//!   fetcher's own URL check, and for a host the URL parser leaves as a
//!   name, through the resolver with what the system resolver makes of a
//!   numeric name (`getaddrinfo` with `AI_NUMERICHOST`, no network);
//! - every IPv6 spelling of one address gets that address's verdict;
//! - any text the URL check allows connects only to allowed addresses.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::pin::Pin;
use std::sync::Arc;

use crabtalk_search::{
    AddressPolicy, Fetcher, Lookup, SafeResolver, SearchConfig, Settings, classify, embedded_v4,
};
use ipnet::IpNet;

use crate::runtime;

/// The ranges that are not public, from the IANA special-purpose address
/// registries (plus multicast and everything outside 2000::/3).
const NOT_PUBLIC: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "::/3",
    "4000::/2",
    "8000::/1",
    "64:ff9b::/96",
    "64:ff9b:1::/48",
    "100::/64",
    "2001::/32",
    "2001:2::/48",
    "2001:db8::/32",
    "2002::/16",
    "3fff::/20",
];

fn reference_is_public(ip: IpAddr) -> bool {
    !NOT_PUBLIC
        .iter()
        .any(|net| net.parse::<IpNet>().expect("a range").contains(&ip))
}

/// What the system resolver returns for a numeric name, without asking
/// the network: `getaddrinfo` with `AI_NUMERICHOST`.
struct NumericLookup;

fn numeric_addresses(host: &str) -> Vec<IpAddr> {
    let Ok(name) = std::ffi::CString::new(host) else {
        return Vec::new();
    };
    // SAFETY: `hints` is zeroed as getaddrinfo allows, `name` is a C
    // string, and the list is freed once, after it has been read.
    unsafe {
        let mut hints: libc::addrinfo = std::mem::zeroed();
        hints.ai_flags = libc::AI_NUMERICHOST;
        hints.ai_family = libc::AF_UNSPEC;
        let mut list: *mut libc::addrinfo = std::ptr::null_mut();
        if libc::getaddrinfo(name.as_ptr(), std::ptr::null(), &hints, &mut list) != 0 {
            return Vec::new();
        }
        let mut found = Vec::new();
        let mut at = list;
        while !at.is_null() {
            let info = &*at;
            match info.ai_family {
                libc::AF_INET => {
                    let addr = &*(info.ai_addr as *const libc::sockaddr_in);
                    found.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                        addr.sin_addr.s_addr,
                    ))));
                }
                libc::AF_INET6 => {
                    let addr = &*(info.ai_addr as *const libc::sockaddr_in6);
                    found.push(IpAddr::V6(Ipv6Addr::from(addr.sin6_addr.s6_addr)));
                }
                _ => {}
            }
            at = info.ai_next;
        }
        libc::freeaddrinfo(list);
        found
    }
}

impl Lookup for NumericLookup {
    fn lookup(
        &self,
        host: &str,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
        let found = numeric_addresses(host);
        Box::pin(async move {
            if found.is_empty() {
                Err(std::io::Error::other("not a numeric name"))
            } else {
                Ok(found)
            }
        })
    }
}

/// The fetcher's verdict on `url`, as far as it can be known without a
/// network: `Some(addresses)` it would connect to, `None` refused or not
/// reachable.
fn connects_to(fetcher: &Fetcher, resolver: &SafeResolver, url: &str) -> Option<Vec<IpAddr>> {
    let parsed = fetcher.check_url(url).ok()?;
    match parsed.host()? {
        url::Host::Ipv4(ip) => Some(vec![IpAddr::V4(ip)]),
        url::Host::Ipv6(ip) => Some(vec![IpAddr::V6(ip)]),
        url::Host::Domain(name) => runtime().block_on(resolver.resolve_checked(name)).ok(),
    }
}

fn v4_spellings(ip: Ipv4Addr) -> Vec<String> {
    let [a, b, c, d] = ip.octets();
    let n = u32::from(ip);
    let dotted = ip.to_string();
    let fullwidth: String = dotted
        .chars()
        .map(|ch| match ch {
            '0'..='9' => char::from_u32(0xff10 + (ch as u32 - '0' as u32)).expect("a digit"),
            _ => '\u{ff0e}',
        })
        .collect();
    let [h0, h1, h2, h3] = [a, b, c, d].map(u16::from);
    vec![
        dotted.clone(),
        format!("{dotted}."),
        n.to_string(),
        format!("0x{n:x}"),
        format!("0X{n:X}"),
        format!("0{n:o}"),
        format!("0x{a:x}.0x{b:x}.0x{c:x}.0x{d:x}"),
        format!("0{a:o}.0{b:o}.0{c:o}.0{d:o}"),
        format!("{a}.{b}.{}", (h2 << 8) | h3),
        format!(
            "{a}.{}",
            (u32::from(b) << 16) | (u32::from(c) << 8) | u32::from(d)
        ),
        format!(
            "{a}.0x{:x}",
            (u32::from(b) << 16) | (u32::from(c) << 8) | u32::from(d)
        ),
        dotted.bytes().map(|byte| format!("%{byte:02X}")).collect(),
        fullwidth,
        dotted.replace('.', "\u{3002}"),
        format!("[::ffff:{dotted}]"),
        format!("[::FFFF:{:x}:{:x}]", (h0 << 8) | h1, (h2 << 8) | h3),
        format!("[0:0:0:0:0:ffff:{dotted}]"),
        format!("[::{dotted}]"),
        format!("[64:ff9b::{dotted}]"),
        format!("[2002:{:x}:{:x}::1]", (h0 << 8) | h1, (h2 << 8) | h3),
        format!("user@{dotted}:80"),
    ]
}

fn v6_spellings(ip: Ipv6Addr) -> Vec<String> {
    let s = ip.segments();
    let [a, b, c, d] = [s[6] >> 8, s[6] & 0xff, s[7] >> 8, s[7] & 0xff];
    vec![
        format!("[{ip}]"),
        format!("[{}]", ip.to_string().to_uppercase()),
        format!("[{}]", s.map(|x| format!("{x:04x}")).join(":")),
        format!(
            "[{}:{a}.{b}.{c}.{d}]",
            s[..6]
                .iter()
                .map(|x| format!("{x:x}"))
                .collect::<Vec<_>>()
                .join(":")
        ),
    ]
}

pub fn ssrf_address(data: &[u8]) {
    let byte = |i: usize| data.get(i).copied().unwrap_or(0);
    let policy = match byte(0) % 4 {
        0 => {
            let prefix = byte(5) % 33;
            let net = IpNet::new(
                IpAddr::V4(Ipv4Addr::new(byte(1), byte(2), byte(3), byte(4))),
                prefix,
            )
            .expect("a prefix of at most 32");
            AddressPolicy::allowing([net.trunc()])
        }
        _ => AddressPolicy::public_only(),
    };
    let mut settings = Settings::resolve(&SearchConfig::default(), |_| None).fetch;
    settings.policy = policy.clone();
    let resolver = SafeResolver::new(Arc::new(NumericLookup), policy.clone());
    let fetcher = Fetcher::with_resolver(settings, resolver.clone());

    let v4 = Ipv4Addr::new(byte(6), byte(7), byte(8), byte(9));
    let mut v6_bytes = [0u8; 16];
    for (i, slot) in v6_bytes.iter_mut().enumerate() {
        *slot = byte(10 + i);
    }
    let v6 = Ipv6Addr::from(v6_bytes);

    for ip in [IpAddr::V4(v4), IpAddr::V6(v6)] {
        assert_eq!(
            classify(ip).is_none(),
            reference_is_public(ip),
            "{ip}: classified {:?}, the IANA table says otherwise",
            classify(ip)
        );
    }
    if let Some(carried) = embedded_v4(v6) {
        assert!(
            classify(IpAddr::V6(v6)).is_some(),
            "{v6} carries {carried} and passes"
        );
        if policy.check(IpAddr::V4(carried)).is_err() {
            assert!(
                policy.check(IpAddr::V6(v6)).is_err(),
                "{v6} lets refused {carried} through"
            );
        }
    }

    let v4_allowed = policy.check(IpAddr::V4(v4)).is_ok();
    for spelling in v4_spellings(v4) {
        let url = format!("http://{spelling}/");
        if let Some(addresses) = connects_to(&fetcher, &resolver, &url) {
            for ip in &addresses {
                assert!(policy.check(*ip).is_ok(), "{url} connects to refused {ip}");
            }
            assert!(
                v4_allowed,
                "{v4} is refused, but {url} is allowed (to {addresses:?})"
            );
        }
    }
    let v6_verdict = policy.check(IpAddr::V6(v6)).is_ok();
    for spelling in v6_spellings(v6) {
        let url = format!("https://{spelling}/");
        let parsed = url::Url::parse(&url).expect("an IPv6 URL");
        assert_eq!(
            parsed.host(),
            Some(url::Host::Ipv6(v6)),
            "{url} is another address"
        );
        let allowed = fetcher.check_url(&url).is_ok();
        assert_eq!(allowed, v6_verdict, "{url} judged unlike {v6}");
    }

    // The input itself as a URL (the part after the bytes read above).
    let text = String::from_utf8_lossy(data.get(26..).unwrap_or_default());
    let url = if text.contains("://") {
        text.into_owned()
    } else {
        format!("http://{text}")
    };
    if let Some(addresses) = connects_to(&fetcher, &resolver, &url) {
        for ip in addresses {
            assert!(policy.check(ip).is_ok(), "{url:?} connects to refused {ip}");
        }
    }
}
