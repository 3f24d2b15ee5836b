//! The key two engines' URLs must share to be one result.
//!
//! `http://www.Example.org/a/?utm_source=x#top` and `https://example.org/a`
//! are the same page: the key drops the scheme, a leading `www.`, the
//! default port, a trailing slash, the fragment and the tracking
//! parameters (`utm_*`, `fbclid`, `gclid`, in any case); the host is
//! lowercase (the URL parser does that), and a percent-encoded unreserved
//! character in the path is the character itself (`/enc/%61` is `/enc/a`,
//! RFC 3986 §6.2.2.2) while other escapes get upper-case hex. Other query
//! parameters keep their order: they may choose the page.
//!
//! The URL a result is *shown* with is [`clean`]ed the same way of its
//! tracking parameters (and nothing else: scheme, host, path, the other
//! parameters and the fragment stay as the engine gave them), so neither
//! the model nor a person passes `?utm_source=…` on.

/// The de-duplication key of `url`, or `None` for anything that is not an
/// http(s) URL.
pub fn normalize(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return None;
    }
    let host = parsed.host_str()?;
    let host = host.strip_prefix("www.").unwrap_or(host);
    let mut key = host.to_owned();
    if let Some(port) = parsed.port() {
        // `port()` is None for the scheme's default; http's 443 and
        // https's 80 differ only by scheme, which the key ignores.
        if !matches!(port, 80 | 443) {
            key.push(':');
            key.push_str(&port.to_string());
        }
    }
    key.push_str(path_key(parsed.path()).trim_end_matches('/'));
    let kept: Vec<(String, String)> = parsed
        .query_pairs()
        .filter(|(name, _)| !is_tracking(name))
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect();
    if !kept.is_empty() {
        let query = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(kept)
            .finish();
        key.push('?');
        key.push_str(&query);
    }
    Some(key)
}

/// `url` without its tracking parameters (`utm_*`, `fbclid`, `gclid`);
/// anything else is kept as it is. A URL that does not parse, or has no
/// tracking parameter, comes back unchanged.
pub(crate) fn clean(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url.trim()) else {
        return url.to_owned();
    };
    if !parsed.query_pairs().any(|(name, _)| is_tracking(&name)) {
        return url.to_owned();
    }
    let kept: Vec<(String, String)> = parsed
        .query_pairs()
        .filter(|(name, _)| !is_tracking(name))
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect();
    if kept.is_empty() {
        parsed.set_query(None);
    } else {
        parsed.query_pairs_mut().clear().extend_pairs(kept);
    }
    parsed.into()
}

fn is_tracking(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.starts_with("utm_") || name == "fbclid" || name == "gclid"
}

/// `path` with escapes of unreserved characters decoded and the hex of
/// every other escape in upper case: one spelling per path.
fn path_key(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%'
            && let Some(byte) = bytes
                .get(at + 1..at + 3)
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                out.push(byte as char);
            } else {
                out.push_str(&format!("%{byte:02X}"));
            }
            at += 3;
            continue;
        }
        // The URL parser leaves only ASCII in a path.
        out.push(bytes[at] as char);
        at += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{clean, normalize};

    #[test]
    fn the_shown_url_loses_only_its_tracking_parameters() {
        for (url, shown) in [
            (
                "http://www.example.org/a/?utm_source=bing&utm_medium=x",
                "http://www.example.org/a/",
            ),
            (
                "https://example.org/a?id=3&fbclid=abc#top",
                "https://example.org/a?id=3#top",
            ),
            (
                "https://example.org/a?gclid=1&q=rust",
                "https://example.org/a?q=rust",
            ),
            (
                "https://example.org/a?q=rust",
                "https://example.org/a?q=rust",
            ),
            ("https://Example.org/A?x=%20", "https://Example.org/A?x=%20"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(clean(url), shown, "{url}");
        }
    }

    #[test]
    fn the_normalisation_table() {
        for (url, key) in [
            ("https://example.org/", "example.org"),
            ("http://example.org", "example.org"),
            ("https://www.example.org/a/", "example.org/a"),
            ("https://WWW.Example.ORG/a", "example.org/a"),
            ("https://example.org/a#section", "example.org/a"),
            (
                "https://example.org/a?utm_source=x&utm_medium=y",
                "example.org/a",
            ),
            (
                "https://example.org/a?id=3&fbclid=abc",
                "example.org/a?id=3",
            ),
            (
                "https://example.org/a?gclid=1&q=rust",
                "example.org/a?q=rust",
            ),
            ("https://example.org/a?b=2&a=1", "example.org/a?b=2&a=1"),
            ("https://example.org:443/a", "example.org/a"),
            ("http://example.org:80/a", "example.org/a"),
            ("https://example.org:8443/a", "example.org:8443/a"),
            ("https://example.org/A/B", "example.org/A/B"),
            ("https://example.org/enc/%61", "example.org/enc/a"),
            ("https://example.org/enc/%7e%2D", "example.org/enc/~-"),
            ("https://example.org/a%2fb", "example.org/a%2Fb"),
            ("https://example.org/a%2Fb", "example.org/a%2Fb"),
            ("https://example.org/caf%c3%a9", "example.org/caf%C3%A9"),
            (
                "https://example.org/a?UTM_SOURCE=x&Fbclid=y&id=1",
                "example.org/a?id=1",
            ),
            ("https://sub.www.example.org/", "sub.www.example.org"),
            (
                "https://example.org/search?q=a%20b",
                "example.org/search?q=a+b",
            ),
            (
                "https://example.org/search?q=a+b",
                "example.org/search?q=a+b",
            ),
        ] {
            assert_eq!(normalize(url).as_deref(), Some(key), "{url}");
        }
        for bad in [
            "ftp://example.org/",
            "not a url",
            "mailto:x@example.org",
            "/relative",
        ] {
            assert_eq!(normalize(bad), None, "{bad}");
        }
    }

    #[test]
    fn spellings_of_one_page_share_a_key() {
        let variants = [
            "http://www.example.org/guide/?utm_campaign=z#intro",
            "https://example.org/guide",
            "https://example.org/guide/",
            "HTTPS://EXAMPLE.ORG/guide?fbclid=1",
        ];
        let keys: Vec<_> = variants.iter().map(|u| normalize(u).unwrap()).collect();
        assert!(keys.windows(2).all(|pair| pair[0] == pair[1]), "{keys:?}");
    }
}
