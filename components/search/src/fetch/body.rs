//! A fetched body: which content types are read, and in which charset.
//!
//! Accepted: HTML, XHTML, plain text, JSON (and `+json` types), XML (and
//! `+xml`: RSS, Atom) and Markdown. Anything else (images, PDFs, archives)
//! is refused naming its type. The charset is the `Content-Type`'s, else a
//! byte-order mark, else (HTML) a `<meta charset>` or `http-equiv` in the
//! first 1024 bytes, read with the HTML parser; else UTF-8 — or
//! windows-1252 for HTML that is not valid UTF-8, as browsers do.
//!
//! Whatever the label says, a body that is an image, an archive or other
//! binary data ([`binary`]) is refused: a PNG served as `text/html` is
//! not text. A body compressed with gzip or deflate although nothing asked
//! for it is decoded, up to the byte cap ([`Compression`]); other
//! encodings are refused by name.

use std::io::Read;

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
pub(crate) fn media_type(header: &str) -> (String, Option<String>) {
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
pub(crate) fn kind_of(media: &str) -> Option<Kind> {
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
pub(crate) fn sniff(bytes: &[u8]) -> Option<Kind> {
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

/// What binary data `bytes` start with, if they are binary: a known
/// signature, or control bytes no text has. `charset` is the declared one
/// (UTF-16 text has zero bytes).
pub(crate) fn binary(bytes: &[u8], charset: Option<&str>) -> Option<&'static str> {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF87a", "a GIF image"),
        (b"GIF89a", "a GIF image"),
        (b"%PDF-", "a PDF document"),
        (b"PK\x03\x04", "a ZIP archive"),
        (b"\x1f\x8b", "gzip-compressed data"),
        (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
        (b"BZh", "bzip2-compressed data"),
        (b"\xfd7zXZ\x00", "xz-compressed data"),
        (b"7z\xbc\xaf\x27\x1c", "a 7z archive"),
        (b"\x7fELF", "an executable"),
        (b"\x00asm", "WebAssembly"),
        (b"wOFF", "a web font"),
        (b"wOF2", "a web font"),
        (b"OggS", "Ogg audio or video"),
        (b"ID3", "MP3 audio"),
        (b"\x00\x00\x01\x00", "an icon"),
    ];
    for (magic, what) in SIGNATURES {
        if bytes.starts_with(magic) {
            return Some(what);
        }
    }
    if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return Some("a WebP image");
    }
    if bytes.len() >= 12 && &bytes[4..8] == b"ftyp" {
        return Some("an MP4 video");
    }
    let utf16 = charset.is_some_and(|c| c.starts_with("utf-16"))
        || Encoding::for_bom(bytes).is_some_and(|(e, _)| e != encoding_rs::UTF_8);
    if utf16 {
        return None;
    }
    // Text has no NUL and few other control bytes (tab, newlines, form
    // feed and escape aside).
    let head = &bytes[..bytes.len().min(4096)];
    let control = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b))
        .count();
    (head.contains(&0) || control * 20 > head.len().max(1)).then_some("binary data")
}

/// A `Content-Encoding` the body arrived in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    Gzip,
    Deflate,
}

/// A `Content-Encoding` that is not read: its name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Content-Encoding {0} is not read (gzip and deflate are)")]
pub(crate) struct UnknownEncoding(pub String);

/// A body that is not in the encoding it is labelled with.
#[derive(Debug, thiserror::Error)]
#[error("the body is not {} data ({source})", encoding.name())]
pub(crate) struct NotEncoded {
    pub encoding: Compression,
    pub source: std::io::Error,
}

impl Compression {
    /// The encoding `header` names: `Ok(None)` for none (or `identity`),
    /// an error with the name for one that is not read.
    pub(crate) fn of(header: Option<&str>) -> Result<Option<Self>, UnknownEncoding> {
        let Some(header) = header else {
            return Ok(None);
        };
        let mut found = None;
        for part in header.split(',').map(|p| p.trim().to_ascii_lowercase()) {
            match part.as_str() {
                "" | "identity" => {}
                "gzip" | "x-gzip" if found.is_none() => found = Some(Self::Gzip),
                "deflate" if found.is_none() => found = Some(Self::Deflate),
                _ => return Err(UnknownEncoding(part)),
            }
        }
        Ok(found)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Gzip => "gzip",
            Self::Deflate => "deflate",
        }
    }

    /// `raw` decoded, at most `max` bytes of it; whether more was there.
    /// A stream cut short (the raw body was over the cap) gives what it
    /// had; one that is not this encoding at all is an error.
    pub(crate) fn decode(self, raw: &[u8], max: usize) -> Result<(Vec<u8>, bool), NotEncoded> {
        let mut out = Vec::new();
        let limit = max as u64 + 1;
        let read = match self {
            Self::Gzip => flate2::read::MultiGzDecoder::new(raw)
                .take(limit)
                .read_to_end(&mut out),
            Self::Deflate => {
                // HTTP's deflate is zlib-wrapped; some servers send it raw.
                let wrapped = flate2::read::ZlibDecoder::new(raw)
                    .take(limit)
                    .read_to_end(&mut out);
                if wrapped.is_err() && out.is_empty() {
                    flate2::read::DeflateDecoder::new(raw)
                        .take(limit)
                        .read_to_end(&mut out)
                } else {
                    wrapped
                }
            }
        };
        if let Err(source) = read
            && out.is_empty()
        {
            return Err(NotEncoded {
                encoding: self,
                source,
            });
        }
        let cut = out.len() > max;
        out.truncate(max);
        Ok((out, cut))
    }
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
    fn binary_bodies_are_told_from_text_whatever_their_label() {
        assert_eq!(
            binary(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", None),
            Some("a PNG image")
        );
        assert_eq!(
            binary(b"\x1f\x8b\x08\0\0", None),
            Some("gzip-compressed data")
        );
        assert_eq!(binary(b"%PDF-1.7\n", None), Some("a PDF document"));
        assert_eq!(binary(b"abc\0def", None), Some("binary data"));
        assert_eq!(binary(b"<p>caf\xe9</p>\n\t", None), None);
        assert_eq!(binary("héllo, wörld".as_bytes(), None), None);
        // UTF-16 text has zero bytes.
        assert_eq!(binary(b"\xff\xfeh\0i\0", None), None);
        assert_eq!(binary(b"h\0i\0", Some("utf-16le")), None);
    }

    #[test]
    fn compressed_bodies_are_decoded_up_to_the_cap() {
        use std::io::Write;
        let text = "crab ".repeat(10_000);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(text.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(
            Compression::Gzip.decode(&gz, 1 << 20).unwrap(),
            (text.clone().into_bytes(), false)
        );
        let (cut, more) = Compression::Gzip.decode(&gz, 1000).unwrap();
        assert!(more && cut.len() == 1000);
        // A stream cut short gives what it had.
        let (start, _) = Compression::Gzip
            .decode(&gz[..gz.len() / 2], 1 << 20)
            .unwrap();
        assert!(!start.is_empty() && text.starts_with(std::str::from_utf8(&start).unwrap()));
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zlib.write_all(b"deflated").unwrap();
        assert_eq!(
            Compression::Deflate
                .decode(&zlib.finish().unwrap(), 100)
                .unwrap()
                .0,
            b"deflated"
        );
        let err = Compression::Gzip.decode(b"plain text", 100).unwrap_err();
        assert_eq!(err.encoding, Compression::Gzip);
        assert!(
            err.to_string().starts_with("the body is not gzip data ("),
            "{err}"
        );
        assert_eq!(Compression::of(Some("gzip")), Ok(Some(Compression::Gzip)));
        assert_eq!(Compression::of(Some("identity")), Ok(None));
        assert_eq!(
            Compression::of(Some("br")),
            Err(UnknownEncoding("br".to_owned()))
        );
        assert_eq!(
            Compression::of(Some("gzip, zstd")),
            Err(UnknownEncoding("zstd".to_owned()))
        );
    }

    #[test]
    fn bodies_without_a_type_are_sniffed() {
        assert_eq!(sniff(b"<!DOCTYPE html><html>"), Some(Kind::Html));
        assert_eq!(sniff(b"just words"), Some(Kind::Text));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0"), None);
    }
}
