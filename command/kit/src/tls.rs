//! The rustls crypto provider, installed once per process.
//!
//! Across the workspace reqwest (under rmcp's HTTP client and the LLM
//! providers) is built without a TLS backend of its own, so every process
//! that makes HTTPS requests must install one before its first client:
//! `ring`, which needs no C toolchain beyond `cc`. Call [`install_ring`]
//! before building a client. The kit's `main` does not: a component that
//! makes no HTTPS request (cron reaches other components through
//! [`crate::loopback`]) then links no TLS stack at all (RFC 0018).

/// Installs `ring` as the process-wide rustls provider (a no-op when one
/// is installed already).
pub fn install_ring() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    #[test]
    fn installing_twice_is_harmless() {
        super::install_ring();
        super::install_ring();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
