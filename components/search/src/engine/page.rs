//! What every HTML engine page needs: selectors, text in one line, and
//! telling a CAPTCHA or anomaly page from a results page.

use scraper::{ElementRef, Html, Selector};

/// A selector written in this crate (a bad one is a bug, caught by tests).
pub(crate) fn selector(css: &str) -> Selector {
    Selector::parse(css).unwrap_or_else(|err| panic!("bad selector {css:?}: {err}"))
}

/// The element's text with runs of whitespace made one space.
pub(crate) fn text(element: ElementRef<'_>) -> String {
    squash(&element.text().collect::<String>())
}

/// [`text`], leaving out what is inside elements of class `skip` (labels
/// engines put into snippets, like Bing's "Web" icon).
pub(crate) fn text_skipping(element: ElementRef<'_>, skip: &str) -> String {
    let mut out = String::new();
    for node in element.descendants() {
        let Some(text) = node.value().as_text() else {
            continue;
        };
        let skipped = node
            .ancestors()
            .take_while(|a| a.id() != element.id())
            .any(|a| {
                a.value()
                    .as_element()
                    .is_some_and(|e| e.classes().any(|c| c == skip))
            });
        if !skipped {
            out.push_str(text);
        }
    }
    squash(&out)
}

/// `text` with runs of whitespace made one space, trimmed.
pub(crate) fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text of an HTML fragment (the snippets APIs send with `<b>` and
/// `<span class="searchmatch">` in them), entities decoded.
pub(crate) fn fragment_text(html: &str) -> String {
    if !html.contains(['<', '&']) {
        return squash(html);
    }
    let fragment = Html::parse_fragment(html);
    squash(&fragment.root_element().text().collect::<String>())
}

/// The first match of `css` under `element`.
pub(crate) fn first<'a>(element: ElementRef<'a>, css: &str) -> Option<ElementRef<'a>> {
    element.select(&selector(css)).next()
}

/// What bot checks put on a page instead of results: CAPTCHA widgets and
/// forms, and DuckDuckGo's "anomaly" modal.
const CHALLENGE: &str = "#captcha, .captcha, [id*=captcha], [class*=captcha], \
    form[action*=captcha], iframe[src*=recaptcha], iframe[src*=hcaptcha], \
    .g-recaptcha, .h-captcha, #challenge-form, .anomaly-modal, [class*=anomaly-modal], \
    #cf-challenge-running, .cf-turnstile";

/// Whether `document` is a bot check rather than an answer.
pub(crate) fn is_challenge(document: &Html) -> bool {
    document.select(&selector(CHALLENGE)).next().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_lose_their_tags_and_keep_their_words() {
        assert_eq!(
            fragment_text("The <span class=\"searchmatch\">Rust</span>  &amp; <b>Cargo</b>\n book"),
            "The Rust & Cargo book"
        );
        assert_eq!(fragment_text("  plain   words "), "plain words");
    }

    #[test]
    fn challenge_pages_are_told_from_results_pages() {
        for page in [
            "<html><body><form id=\"challenge-form\" action=\"/anomaly.js\"></form></body></html>",
            "<div class=\"anomaly-modal__modal\">bots use DuckDuckGo too</div>",
            "<div id=\"b_captcha\"></div>",
            "<iframe src=\"https://www.google.com/recaptcha/api2/anchor\"></iframe>",
            "<form action=\"/turing/captcha/challenge\"></form>",
        ] {
            assert!(is_challenge(&Html::parse_document(page)), "{page}");
        }
        assert!(!is_challenge(&Html::parse_document(
            "<div id=\"links\"><div class=\"result\">x</div></div>"
        )));
    }
}
