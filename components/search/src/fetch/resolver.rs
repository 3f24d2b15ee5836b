//! [`SafeResolver`]: name resolution that refuses non-public addresses,
//! plugged into reqwest as its resolver.
//!
//! The addresses reqwest connects to are exactly the ones this returns, so
//! the address checked is the address connected to: a name that resolves
//! to a public address when checked and to 127.0.0.1 a moment later (DNS
//! rebinding) cannot slip through, because there is no second lookup. A
//! name with any non-public address is refused whole, as is a name that
//! does not resolve. IP literals never reach a resolver; the fetcher
//! checks those itself (see [`super::Fetcher`]).
//!
//! The lookup itself is a seam ([`Lookup`]) so tests can make any name
//! resolve to any address.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

use crate::address::{AddressPolicy, Refusal};

/// The addresses of a host name.
pub trait Lookup: Send + Sync {
    fn lookup(
        &self,
        host: &str,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>;
}

/// The system's resolver (getaddrinfo, through tokio).
pub(crate) struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(
        &self,
        host: &str,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
        let host = host.to_owned();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|addr| addr.ip()).collect())
        })
    }
}

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveRefused {
    #[error("{host} resolves to {}, a {} address", refusal.ip, refusal.class)]
    NonPublic { host: String, refusal: Refusal },
    #[error("cannot resolve {host}: {reason}")]
    Unresolved { host: String, reason: String },
}

/// Resolves through a [`Lookup`] and lets only allowed addresses through.
#[derive(Clone)]
pub struct SafeResolver {
    lookup: Arc<dyn Lookup>,
    policy: AddressPolicy,
}

impl SafeResolver {
    pub fn new(lookup: Arc<dyn Lookup>, policy: AddressPolicy) -> Self {
        Self { lookup, policy }
    }

    pub fn system(policy: AddressPolicy) -> Self {
        Self::new(Arc::new(SystemLookup), policy)
    }

    pub fn policy(&self) -> &AddressPolicy {
        &self.policy
    }

    /// The addresses of `host`, all allowed, or why not.
    pub async fn resolve_checked(&self, host: &str) -> Result<Vec<IpAddr>, ResolveRefused> {
        let addrs = self
            .lookup
            .lookup(host)
            .await
            .map_err(|err| ResolveRefused::Unresolved {
                host: host.to_owned(),
                reason: err.to_string(),
            })?;
        if addrs.is_empty() {
            return Err(ResolveRefused::Unresolved {
                host: host.to_owned(),
                reason: "no addresses".into(),
            });
        }
        for ip in &addrs {
            if let Err(refusal) = self.policy.check(*ip) {
                return Err(ResolveRefused::NonPublic {
                    host: host.to_owned(),
                    refusal,
                });
            }
        }
        Ok(addrs)
    }
}

impl reqwest::dns::Resolve for SafeResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let resolver = self.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = resolver.resolve_checked(&host).await?;
            let addrs: reqwest::dns::Addrs = Box::new(
                addrs
                    .into_iter()
                    .map(|ip| SocketAddr::new(ip, 0))
                    .collect::<Vec<_>>()
                    .into_iter(),
            );
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// Names → addresses, as a test wants them.
    struct Table(HashMap<&'static str, Vec<IpAddr>>);

    impl Lookup for Table {
        fn lookup(
            &self,
            host: &str,
        ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
            let found = self.0.get(host).cloned();
            Box::pin(async move { found.ok_or_else(|| std::io::Error::other("no such host")) })
        }
    }

    fn resolver(policy: AddressPolicy) -> SafeResolver {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        SafeResolver::new(
            Arc::new(Table(HashMap::from([
                ("public.test", vec![ip("93.184.216.34")]),
                ("localhost", vec![ip("127.0.0.1"), ip("::1")]),
                ("loopback.test", vec![ip("127.0.0.1")]),
                ("metadata.test", vec![ip("169.254.169.254")]),
                ("mixed.test", vec![ip("93.184.216.34"), ip("10.0.0.5")]),
                ("mapped.test", vec![ip("::ffff:192.168.0.1")]),
                ("ula.test", vec![ip("fd00::1")]),
                ("empty.test", vec![]),
                ("intranet.test", vec![ip("10.1.2.3")]),
            ]))),
            policy,
        )
    }

    #[tokio::test]
    async fn names_that_resolve_to_non_public_addresses_are_refused() {
        let resolver = resolver(AddressPolicy::public_only());
        assert_eq!(
            resolver.resolve_checked("public.test").await.unwrap().len(),
            1
        );
        for (host, says) in [
            (
                "localhost",
                "localhost resolves to 127.0.0.1, a loopback address",
            ),
            ("loopback.test", "loopback"),
            ("metadata.test", "169.254.169.254, a link-local address"),
            ("mixed.test", "10.0.0.5, a private address"),
            ("mapped.test", "::ffff:192.168.0.1, a private address"),
            ("ula.test", "unique-local"),
            ("empty.test", "cannot resolve empty.test: no addresses"),
            ("nowhere.test", "cannot resolve nowhere.test"),
        ] {
            let err = resolver
                .resolve_checked(host)
                .await
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{host}: {err}");
        }
    }

    #[tokio::test]
    async fn allow_private_opens_its_range_and_nothing_else() {
        let policy = AddressPolicy::allowing([crate::address::parse_cidr("10.1.0.0/16").unwrap()]);
        let resolver = resolver(policy);
        assert!(resolver.resolve_checked("intranet.test").await.is_ok());
        assert!(resolver.resolve_checked("mixed.test").await.is_err());
        assert!(resolver.resolve_checked("localhost").await.is_err());
    }
}
