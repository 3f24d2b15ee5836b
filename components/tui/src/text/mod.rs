//! Text as the terminal sees it: display width, cutting, cleaning and
//! wrapping.
//!
//! A terminal lays text out in columns, not bytes or chars: most characters
//! take one column, CJK ideographs and most emoji take two, combining marks
//! take none. Everything here measures in columns (through `unicode-width`)
//! and moves in grapheme clusters (through `unicode-segmentation`), so no
//! function ever cuts inside a character — or inside an emoji sequence or a
//! letter with its accent.
//!
//! - [`width`]: how wide a string is, and cutting it to a width;
//! - [`sanitize`](mod@sanitize): removing what must never reach the terminal (escape
//!   sequences and other control characters from a model or a tool);
//! - [`styled`]: [`Span`]s and [`Line`]s of styled text and their ANSI form;
//! - [`wrap`](mod@wrap): breaking styled text into lines of a given width.

pub mod sanitize;
pub(crate) mod styled;
pub(crate) mod width;
pub mod wrap;

pub use sanitize::sanitize;
pub(crate) use styled::Color;
pub use styled::{Line, Span, Style};
pub use width::{display_width, truncate};
pub use wrap::{Wrap, wrap};
