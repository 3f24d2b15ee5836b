//! `web_fetch` end to end against pages served on loopback addresses:
//! every refused spelling of a non-public address (and nothing sent),
//! names that resolve to loopback, redirect hops checked one by one,
//! `allow_private` honoured exactly, content types and charsets.

use crate::support;

use std::path::Path;

use crabtalk_search::{FetchError, Format, Settings, Web};
use support::{Fixture, Reply, TestHome};

fn web(home: &TestHome, toml: &str) -> Web {
    let config = crabtalk_search::parse_config(Path::new("search.toml"), toml).unwrap();
    Web::new(&home.home(), Settings::resolve(&config, |_| None))
}

const PAGE: &str = "<!doctype html><html><head><title>Crab facts</title></head><body><nav>Home · About</nav><article><h1>Crab facts</h1><p>Crabs walk sideways because of the way their legs bend. Most crabs live in the sea, but some live in fresh water and on land, and a few even climb trees to find food.</p><h2>Shells</h2><p>A crab's shell does not grow, so crabs moult: they shed the old shell and grow a larger one. While the new shell hardens, the crab hides from everything that would eat it.</p></article><footer>© crabs</footer></body></html>";

#[tokio::test]
async fn every_spelling_of_a_non_public_address_is_refused_before_anything_is_sent() {
    let server = Fixture::start().await;
    server.fallback(Reply::html(PAGE));
    let port = server.port();
    let home = TestHome::new("");
    let web = web(&home, "");
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://2130706433:{port}/"),
        format!("http://0x7f.1:{port}/"),
        format!("http://0x7f000001:{port}/"),
        format!("http://127.1:{port}/"),
        format!("http://017700000001:{port}/"),
        format!("http://0177.0.0.1:{port}/"),
        format!("http://127.000.000.001:{port}/"),
        format!("http://0:{port}/"),
        format!("http://0.0.0.0:{port}/"),
        format!("http://[::1]:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        format!("http://[::ffff:7f00:1]:{port}/"),
        format!("http://[0:0:0:0:0:ffff:7f00:1]:{port}/"),
        format!("http://[::]:{port}/"),
        format!("http://user:pass@127.0.0.1:{port}/"),
        format!("http://example.org@127.0.0.1:{port}/"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://[::ffff:169.254.169.254]/".to_owned(),
        "http://100.64.0.1/".to_owned(),
        "http://10.0.0.1/".to_owned(),
        "http://172.16.5.4/".to_owned(),
        "http://192.168.1.1/".to_owned(),
        "http://[fd00::1]/".to_owned(),
        "http://[fc00::1]/".to_owned(),
        "http://[fe80::1]/".to_owned(),
        "http://224.0.0.1/".to_owned(),
        "http://[ff02::1]/".to_owned(),
        "http://255.255.255.255/".to_owned(),
    ] {
        let err = web.fetch(&url, Format::Markdown, None).await.unwrap_err();
        assert!(matches!(err, FetchError::Refused { .. }), "{url}: {err}");
        let text = err.to_string();
        assert!(
            text.contains("refused") && text.contains("allow_private"),
            "{url}: {text}"
        );
    }
    assert_eq!(server.hits(), 0, "nothing reached the server");
}

#[tokio::test]
async fn names_that_resolve_to_loopback_are_refused() {
    let server = Fixture::start().await;
    server.fallback(Reply::html(PAGE));
    let port = server.port();
    let home = TestHome::new("");
    let web = web(&home, "");
    for host in ["localhost", "LOCALHOST", "LocalHost"] {
        let url = format!("http://{host}:{port}/");
        let err = web
            .fetch(&url, Format::Markdown, None)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("resolves to 127.0.0.1, a loopback address")
                || err.contains("resolves to ::1, a loopback address"),
            "{url}: {err}"
        );
    }
    // A name that does not resolve is refused too (whatever the system
    // resolver makes of `localhost.`, it never reaches the server).
    let err = web
        .fetch("http://no-such-host.invalid/", Format::Markdown, None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot resolve no-such-host.invalid") && err.contains("nothing was sent"),
        "{err}"
    );
    let err = web
        .fetch(
            &format!("http://localhost.:{port}/"),
            Format::Markdown,
            None,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            FetchError::Refused { .. } | FetchError::Unresolved { .. }
        ),
        "{err}"
    );
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn other_schemes_and_non_urls_are_refused() {
    let home = TestHome::new("");
    let web = web(&home, "");
    for (url, says) in [
        ("file:///etc/passwd", "only http and https"),
        ("ftp://example.org/x", "only http and https"),
        ("gopher://example.org/", "only http and https"),
        ("data:text/html,hi", "only http and https"),
        ("not a url", "is not a URL"),
    ] {
        let err = web
            .fetch(url, Format::Markdown, None)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{url}: {err}");
    }
}

#[tokio::test]
async fn allow_private_is_honoured_exactly_and_every_redirect_hop_is_checked() {
    let inside = Fixture::start_on("127.0.0.2").await;
    let outside = Fixture::start_on("127.0.0.1").await;
    outside.fallback(Reply::html("<p>secret</p>"));
    inside.route("/page", Reply::html(PAGE));
    inside.route(
        "/to-loopback",
        Reply::Redirect {
            status: 302,
            location: format!("http://127.0.0.1:{}/secret", outside.port()),
        },
    );
    inside.route(
        "/to-localhost",
        Reply::Redirect {
            status: 301,
            location: format!("http://localhost:{}/secret", outside.port()),
        },
    );
    inside.route(
        "/to-decimal",
        Reply::Redirect {
            status: 307,
            location: format!("http://2130706433:{}/secret", outside.port()),
        },
    );
    inside.route(
        "/to-page",
        Reply::Redirect {
            status: 308,
            location: "/page".into(),
        },
    );
    inside.route(
        "/to-file",
        Reply::Redirect {
            status: 302,
            location: "file:///etc/passwd".into(),
        },
    );
    let home = TestHome::new("");
    let web = web(&home, "[fetch]\nallow_private = [\"127.0.0.2/32\"]\n");
    let base = inside.base_url();

    let page = web
        .fetch(&format!("{base}/page"), Format::Markdown, None)
        .await
        .unwrap();
    assert_eq!(page.title.as_deref(), Some("Crab facts"));
    assert!(page.content.contains("## Shells"), "{}", page.content);
    assert!(!page.content.contains("Home · About"), "{}", page.content);

    let hopped = web
        .fetch(&format!("{base}/to-page"), Format::Markdown, None)
        .await
        .unwrap();
    assert_eq!(hopped.final_url, format!("{base}/page"));
    assert_eq!(hopped.url, format!("{base}/to-page"));

    for path in ["/to-loopback", "/to-localhost", "/to-decimal"] {
        let err = web
            .fetch(&format!("{base}{path}"), Format::Markdown, None)
            .await
            .unwrap_err();
        assert!(matches!(err, FetchError::Refused { .. }), "{path}: {err}");
        assert!(err.to_string().contains("127.0.0.1"), "{path}: {err}");
    }
    let err = web
        .fetch(&format!("{base}/to-file"), Format::Markdown, None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("only http and https"), "{err}");
    assert_eq!(outside.hits(), 0, "the refused hop was never sent");

    // 127.0.0.2/32 opens 127.0.0.2 only.
    let third = Fixture::start_on("127.0.0.3").await;
    third.fallback(Reply::html(PAGE));
    let err = web
        .fetch(&format!("{}/", third.base_url()), Format::Markdown, None)
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Refused { .. }), "{err}");
    assert_eq!(third.hits(), 0);
}

#[tokio::test]
async fn more_than_five_redirects_are_refused() {
    let server = Fixture::start().await;
    for hop in 0..10 {
        server.route(
            &format!("/r{hop}"),
            Reply::Redirect {
                status: 302,
                location: format!("/r{}", hop + 1),
            },
        );
    }
    server.route("/r5", Reply::html(PAGE));
    let home = TestHome::new("");
    let web = web(&home, "[fetch]\nallow_private = [\"127.0.0.1/32\"]\n");
    let base = server.base_url();
    // Five hops are followed…
    let five = web
        .fetch(&format!("{base}/r0"), Format::Text, None)
        .await
        .unwrap();
    assert_eq!(five.final_url, format!("{base}/r5"));
    // …six are not.
    server.route(
        "/r5",
        Reply::Redirect {
            status: 302,
            location: "/r6".into(),
        },
    );
    server.route("/r6", Reply::html(PAGE));
    let err = web
        .fetch(&format!("{base}/r0?again"), Format::Text, None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than 5 redirects"), "{err}");
}

#[tokio::test]
async fn content_types_and_charsets() {
    let server = Fixture::start().await;
    server.route(
        "/pdf",
        Reply::bytes(200, Some("application/pdf"), b"%PDF-1.7".to_vec()),
    );
    server.route(
        "/image",
        Reply::bytes(200, Some("image/png"), vec![0x89, b'P', b'N', b'G']),
    );
    server.route(
        "/plain",
        Reply::with_status(200, "text/plain; charset=utf-8", "just text\nsecond line"),
    );
    server.route(
        "/json",
        Reply::with_status(200, "application/json", r#"{"crab": true}"#),
    );
    server.route(
        "/xml",
        Reply::with_status(
            200,
            "application/rss+xml",
            "<rss><channel><title>Crabs</title></channel></rss>",
        ),
    );
    server.route(
        "/md",
        Reply::with_status(200, "text/markdown", "# Crabs\n\n*sideways*"),
    );
    server.route(
        "/latin1",
        Reply::bytes(
            200,
            Some("text/plain; charset=iso-8859-1"),
            b"caf\xe9 cr\xe8me".to_vec(),
        ),
    );
    server.route("/meta", Reply::bytes(200, Some("text/html"), b"<html><head><meta charset=\"windows-1251\"><title>\xcf\xf0\xe8\xe2\xe5\xf2</title></head><body><p>\xcf\xf0\xe8\xe2\xe5\xf2, \xec\xe8\xf0</p></body></html>".to_vec()));
    server.route("/untyped", Reply::bytes(200, None, b"<!doctype html><html><head><title>T</title></head><body><p>hello there</p></body></html>".to_vec()));
    server.route("/missing", Reply::with_status(404, "text/html", "nope"));
    let home = TestHome::new("");
    let web = web(&home, "[fetch]\nallow_private = [\"127.0.0.1/32\"]\n");
    let base = server.base_url();
    for (path, says) in [
        ("/pdf", "the content type is application/pdf"),
        ("/image", "the content type is image/png"),
        ("/missing", "HTTP 404 Not Found"),
    ] {
        let err = web
            .fetch(&format!("{base}{path}"), Format::Markdown, None)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{path}: {err}");
    }
    let plain = web
        .fetch(&format!("{base}/plain"), Format::Markdown, None)
        .await
        .unwrap();
    assert_eq!(plain.content, "just text\nsecond line");
    assert_eq!(plain.content_type, "text/plain");
    assert_eq!(
        web.fetch(&format!("{base}/json"), Format::Markdown, None)
            .await
            .unwrap()
            .content,
        r#"{"crab": true}"#
    );
    assert!(
        web.fetch(&format!("{base}/xml"), Format::Markdown, None)
            .await
            .unwrap()
            .content
            .contains("<title>Crabs</title>")
    );
    assert_eq!(
        web.fetch(&format!("{base}/md"), Format::Markdown, None)
            .await
            .unwrap()
            .content,
        "# Crabs\n\n*sideways*"
    );
    assert_eq!(
        web.fetch(&format!("{base}/latin1"), Format::Text, None)
            .await
            .unwrap()
            .content,
        "café crème"
    );
    let meta = web
        .fetch(&format!("{base}/meta"), Format::Text, None)
        .await
        .unwrap();
    assert_eq!(meta.title.as_deref(), Some("Привет"));
    assert!(meta.content.contains("Привет, мир"), "{}", meta.content);
    let untyped = web
        .fetch(&format!("{base}/untyped"), Format::Text, None)
        .await
        .unwrap();
    assert!(untyped.content.contains("hello there"), "{untyped:?}");
}

#[tokio::test]
async fn max_chars_cuts_and_says_so_and_pages_are_cached() {
    let server = Fixture::start().await;
    server.route("/page", Reply::html(PAGE));
    let home = TestHome::new("");
    let web = web(&home, "[fetch]\nallow_private = [\"127.0.0.1/32\"]\n");
    let url = format!("{}/page", server.base_url());
    let cut = web.fetch(&url, Format::Markdown, Some(40)).await.unwrap();
    assert_eq!(cut.content.chars().count(), 40);
    assert!(cut.truncated && cut.total_chars > 40);
    assert!(
        cut.note
            .as_deref()
            .unwrap()
            .contains(&format!("cut at 40 of {} characters", cut.total_chars)),
        "{cut:?}"
    );
    let whole = web.fetch(&url, Format::Markdown, None).await.unwrap();
    assert!(!whole.truncated && whole.note.is_none());
    assert!(
        whole.cached,
        "the second fetch of a page comes from the cache"
    );
    assert_eq!(server.hits(), 1);
    // Failures are not cached.
    server.route("/flaky", Reply::with_status(503, "text/plain", "later"));
    let flaky = format!("{}/flaky", server.base_url());
    assert!(web.fetch(&flaky, Format::Markdown, None).await.is_err());
    server.route("/flaky", Reply::html(PAGE));
    assert!(web.fetch(&flaky, Format::Markdown, None).await.is_ok());
}

/// A `Web` reading pages on 127.0.0.1, with `extra` in `[fetch]`.
fn loopback_web(home: &TestHome, extra: &str) -> Web {
    web(
        home,
        &format!("[fetch]\nallow_private = [\"127.0.0.1/32\"]\n{extra}\n[cache]\nttl_secs = 0\n"),
    )
}

#[tokio::test]
async fn links_keep_their_query_strings_and_compressed_or_binary_bodies_are_handled() {
    use std::io::Write;
    let server = Fixture::start().await;
    let linked = "<html><head><title>Links</title></head><body><h1>Links</h1><p>Read <a href=\"https://d.example/p?a=1&amp;b=2\">one</a> or <a href=\"/two?x=1&amp;y=2\">two</a>.</p></body></html>";
    server.route("/links", Reply::html(linked));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(PAGE.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    server.route(
        "/gzip",
        Reply::Encoded {
            content_type: "text/html; charset=utf-8".into(),
            encoding: "gzip".into(),
            body: gz.into(),
        },
    );
    server.route(
        "/brotli",
        Reply::Encoded {
            content_type: "text/html".into(),
            encoding: "br".into(),
            body: vec![0x1b, 0x03, 0x00].into(),
        },
    );
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend(std::iter::repeat_n(0x42, 2_000));
    server.route(
        "/png",
        Reply::bytes(200, Some("text/html; charset=utf-8"), png),
    );
    let home = TestHome::new("");
    let web = loopback_web(&home, "");
    let base = server.base_url();

    let page = web
        .fetch(&format!("{base}/links"), Format::Markdown, None)
        .await
        .unwrap();
    assert!(
        page.content.contains("[one](https://d.example/p?a=1&b=2)"),
        "{}",
        page.content
    );
    assert!(
        page.content.contains(&format!("[two]({base}/two?x=1&y=2)")),
        "{}",
        page.content
    );
    assert!(!page.content.contains("&amp;"), "{}", page.content);

    let page = web
        .fetch(&format!("{base}/gzip"), Format::Markdown, None)
        .await
        .unwrap();
    assert_eq!(page.title.as_deref(), Some("Crab facts"));
    assert!(page.content.contains("## Shells"), "{}", page.content);

    let err = web
        .fetch(&format!("{base}/brotli"), Format::Markdown, None)
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Encoding { .. }), "{err}");
    assert!(err.to_string().contains("encoded as br"), "{err}");

    let err = web
        .fetch(&format!("{base}/png"), Format::Markdown, None)
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Binary { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("the body is a PNG image, although it is labelled text/html"),
        "{err}"
    );
}

#[tokio::test]
async fn a_gzip_bomb_is_read_only_up_to_the_byte_cap() {
    use std::io::Write;
    let server = Fixture::start().await;
    // 64 MiB of spaces and a word: ~64 KiB compressed.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let block = vec![b' '; 1 << 20];
    gz.write_all(b"bomb").unwrap();
    for _ in 0..64 {
        gz.write_all(&block).unwrap();
    }
    let gz = gz.finish().unwrap();
    assert!(gz.len() < 1 << 20);
    server.route(
        "/bomb",
        Reply::Encoded {
            content_type: "text/plain".into(),
            encoding: "gzip".into(),
            body: gz.into(),
        },
    );
    let home = TestHome::new("");
    let web = loopback_web(&home, "max_bytes = 1048576");
    let page = web
        .fetch(&format!("{}/bomb", server.base_url()), Format::Text, None)
        .await
        .unwrap();
    assert!(page.body_cut, "{:?}", page.note);
    assert_eq!(page.total_chars, 1 << 20);
    assert!(page.content.starts_with("bomb"));
}

#[tokio::test]
async fn page_processing_has_its_own_deadline() {
    // Within the shape limits, but more than 100 ms of work even in an
    // optimised build: 90,000 elements, 3 MB.
    let server = Fixture::start().await;
    let items: String = (0..30_000)
        .map(|i| format!("<div class=c{i}><p>item {i} <b>bold</b> <a href=\"/i{i}?a=1&amp;b=2\">link</a></p></div>"))
        .collect();
    server.route(
        "/heavy",
        Reply::html(format!("<html><body>{items}</body></html>")),
    );
    let home = TestHome::new("");
    let web = loopback_web(&home, "process_ms = 100");
    let err = web
        .fetch(
            &format!("{}/heavy", server.base_url()),
            Format::Markdown,
            None,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::TooSlow { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("took longer than 100 ms and was stopped ([fetch] process_ms"),
        "{err}"
    );
}

#[tokio::test]
async fn fetches_over_max_concurrent_wait_for_a_free_one() {
    let slow = Fixture::start().await;
    slow.route(
        "/slow",
        Reply::Trickle {
            content_type: "text/html".into(),
        },
    );
    let fast = Fixture::start_on("127.0.0.1").await;
    fast.route("/fast", Reply::html(PAGE));
    let home = TestHome::new("");
    let web = std::sync::Arc::new(loopback_web(&home, "max_concurrent = 1\ntimeout_ms = 3000"));
    let first = {
        let web = web.clone();
        let url = format!("{}/slow", slow.base_url());
        tokio::spawn(async move { web.fetch(&url, Format::Markdown, None).await })
    };
    crabtalk_testkit::eventually("the slow page asked for", || slow.hits() == 1).await;
    let second = {
        let web = web.clone();
        let url = format!("{}/fast", fast.base_url());
        tokio::spawn(async move { web.fetch(&url, Format::Markdown, None).await })
    };
    let err = first.await.unwrap().unwrap_err();
    assert!(matches!(err, FetchError::Timeout { .. }), "{err}");
    // One test thread: the waiting fetch has not run since the slot came
    // free, so whatever reached the fast server came while the slow one
    // held the only slot.
    assert_eq!(fast.hits(), 0, "the second fetch waited for the slot");
    let page = second.await.unwrap().unwrap();
    assert_eq!(page.title.as_deref(), Some("Crab facts"));
}
