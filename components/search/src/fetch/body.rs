//! A fetched body: which content types are read, and in which charset.
//!
//! Accepted: HTML, XHTML, plain text, JSON (and `+json` types), XML (and
//! `+xml`: RSS, Atom) and Markdown. Anything else (images, PDFs, archives)
//! is refused naming its type. The charset is the `Content-Type`'s, else a
//! byte-order mark, else (HTML) a `<meta charset>` or `http-equiv` in the
//! first 1024 bytes, read with the HTML parser; else UTF-8 — or
//! windows-1252 for HTML that is not valid UTF-8, as browsers do.

use encoding_rs::Encoding;
use scraper::Html;

use crate::engine::page::selector;

/// What a body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    Text,
    Markdown,
    Json,
    Xml,
}

/// The media type and its charset parameter, lowercase.
pub fn media_type(header: &str) -> (String, Option<String>) {
    let mut parts = header.split(';');
    let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let charset = parts.find_map(|param| {
        let (name, value) = param.split_once('=')?;
        (name.trim().eq_ignore_ascii_case("charset"))
            .then(|| value.trim().trim_matches('"').to_ascii_lowercase())
    });
    (media, charset)
}

/// The kind of `media`, or `None` for a type `web_fetch` does not read.
pub fn kind_of(media: &str) -> Option<Kind> {
    Some(match media {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        "text/plain" => Kind::Text,
        "text/markdown" | "text/x-markdown" => Kind::Markdown,
        "application/json" | "text/json" => Kind::Json,
        "application/xml" | "text/xml" => Kind::Xml,
        _ if media.ends_with("+json") => Kind::Json,
        _ if media.ends_with("+xml") => Kind::Xml,
        _ => return None,
    })
}

/// A body without a `Content-Type`: HTML if it looks like it, text if it
/// is text, else nothing.
pub fn sniff(bytes: &[u8]) -> Option<Kind> {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).to_ascii_lowercase();
    let head = head.trim_start();
    if head.starts_with("<!doctype html") || head.starts_with("<html") || head.contains("<body") {
        return Some(Kind::Html);
    }
    if bytes.iter().take(4096).any(|&b| b == 0) {
        return None;
    }
    Some(Kind::Text)
}

/// `bytes` as text, in the charset the headers or the document declare.
pub fn decode(bytes: &[u8], charset: Option<&str>, kind: Kind) -> String {
    if let Some(encoding) = charset.and_then(|label| Encoding::for_label(label.as_bytes())) {
        return encoding.decode_with_bom_removal(bytes).0.into_owned();
    }
    if let Some((encoding, _)) = Encoding::for_bom(bytes) {
        return encoding.decode_with_bom_removal(bytes).0.into_owned();
    }
    if kind == Kind::Html
        && let Some(encoding) = meta_charset(bytes)
    {
        return encoding.decode_without_bom_handling(bytes).0.into_owned();
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) if kind == Kind::Html => encoding_rs::WINDOWS_1252
            .decode_without_bom_handling(bytes)
            .0
            .into_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// The charset an HTML document declares in its first 1024 bytes.
fn meta_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    // Windows-1252 maps every byte, and the declaration is ASCII.
    let head = encoding_rs::WINDOWS_1252
        .decode_without_bom_handling(&bytes[..bytes.len().min(1024)])
        .0;
    let document = Html::parse_document(&head);
    for meta in document.select(&selector("meta[charset], meta[http-equiv][content]")) {
        let element = meta.value();
        let label = match element.attr("charset") {
            Some(label) => label.to_owned(),
            None => {
                if !element
                    .attr("http-equiv")?
                    .eq_ignore_ascii_case("content-type")
                {
                    continue;
                }
                media_type(element.attr("content")?).1?
            }
        };
        let encoding = Encoding::for_label(label.trim().as_bytes())?;
        // A page that says UTF-16 in ASCII bytes is not UTF-16.
        return Some(
            if encoding == encoding_rs::UTF_16LE || encoding == encoding_rs::UTF_16BE {
                encoding_rs::UTF_8
            } else {
                encoding
            },
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_and_refused_types() {
        for (header, kind) in [
            ("text/html; charset=utf-8", Some(Kind::Html)),
            ("application/xhtml+xml", Some(Kind::Html)),
            ("text/plain", Some(Kind::Text)),
            ("text/markdown", Some(Kind::Markdown)),
            ("application/json", Some(Kind::Json)),
            ("application/ld+json", Some(Kind::Json)),
            ("application/xml", Some(Kind::Xml)),
            ("application/rss+xml", Some(Kind::Xml)),
            ("TEXT/HTML", Some(Kind::Html)),
            ("application/pdf", None),
            ("image/png", None),
            ("application/octet-stream", None),
        ] {
            assert_eq!(kind_of(&media_type(header).0), kind, "{header}");
        }
        assert_eq!(
            media_type("text/html; Charset=\"ISO-8859-1\"").1.as_deref(),
            Some("iso-8859-1")
        );
    }

    #[test]
    fn charsets_come_from_the_header_the_bom_or_the_meta_tag() {
        let latin1 = b"caf\xe9";
        assert_eq!(decode(latin1, Some("iso-8859-1"), Kind::Text), "café");
        assert_eq!(decode("café".as_bytes(), None, Kind::Text), "café");
        assert_eq!(decode(b"\xef\xbb\xbfhi", None, Kind::Text), "hi");
        let page = b"<html><head><meta charset=\"windows-1251\"></head><body>\xcf\xf0\xe8\xe2\xe5\xf2</body></html>";
        assert!(decode(page, None, Kind::Html).contains("Привет"));
        let equiv = b"<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-1\"></head><body>caf\xe9</body></html>";
        assert!(decode(equiv, None, Kind::Html).contains("café"));
        // Not UTF-8 and nothing declared: windows-1252 for HTML.
        assert!(decode(b"<p>caf\xe9</p>", None, Kind::Html).contains("café"));
    }

    #[test]
    fn bodies_without_a_type_are_sniffed() {
        assert_eq!(sniff(b"<!DOCTYPE html><html>"), Some(Kind::Html));
        assert_eq!(sniff(b"just words"), Some(Kind::Text));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0"), None);
    }
}
