//! What search engines and web pages send back: the engines' result
//! pages (HTML and JSON) and any page `web_fetch` reads.
//!
//! Oracles for an engine's answer (the first byte picks the engine): no
//! panic; every hit is a link a person can open — an absolute `http(s)`
//! URL — and its de-duplication key can be made. For a page: no panic;
//! decoding and reading it end; what is written is bounded by the page (a
//! page cannot make the reader write many times its own size) and, as
//! Markdown or text, has no NUL characters.

use crabtalk_search::{
    Bing, Brave, Budget, DuckDuckGo, Engine, Format, Kind, Mojeek, Query, Searxng, Wikipedia,
    decode_text, normalize, readable as read_page,
};

pub fn engine_pages(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let body = String::from_utf8_lossy(body);
    let engine: Box<dyn Engine> = match pick % 6 {
        0 => Box::new(DuckDuckGo::new("https://html.duckduckgo.com".into())),
        1 => Box::new(Bing::new("https://www.bing.com".into())),
        2 => Box::new(Mojeek::new("https://www.mojeek.com".into())),
        3 => Box::new(Wikipedia::new("https://wikipedia.org".into(), "en".into())),
        4 => Box::new(Brave::new(
            "https://api.search.brave.com".into(),
            "key".into(),
        )),
        _ => Box::new(Searxng::new("https://searx.example.org".into())),
    };
    let query = Query {
        text: "rust".into(),
        count: 10,
        lang: None,
        region: None,
    };
    let Ok(hits) = engine.parse(&query, &body) else {
        return;
    };
    for hit in hits {
        let url = url::Url::parse(&hit.url).unwrap_or_else(|err| {
            panic!("{:?}: hit {:?} is not a URL: {err}", engine.id(), hit.url)
        });
        assert!(
            matches!(url.scheme(), "http" | "https"),
            "{:?}: hit {:?} is not a web page",
            engine.id(),
            hit.url
        );
        let _ = normalize(&hit.url);
    }
}

pub fn readable(data: &[u8]) {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let format = if pick & 1 == 0 {
        Format::Markdown
    } else {
        Format::Text
    };
    let kind = if pick & 2 == 0 {
        Kind::Html
    } else {
        Kind::Text
    };
    let charset = match (pick >> 2) % 4 {
        0 => None,
        1 => Some("utf-8"),
        2 => Some("windows-1252"),
        _ => Some("shift_jis"),
    };
    let text = decode_text(bytes, charset, kind);
    let Ok(page) = read_page(
        &text,
        "https://example.org/dir/page.html",
        format,
        &Budget::unlimited(),
    ) else {
        return;
    };
    let bound = 16 * text.len() + 4096;
    assert!(
        page.content.len() <= bound,
        "a page of {} bytes was written as {} bytes",
        text.len(),
        page.content.len()
    );
    assert!(!page.content.contains('\0'), "NUL in the content");
    if let Some(title) = &page.title {
        assert!(title.len() <= bound);
    }
}
