//! `crabtalk-docs`: checks that keep the book and the repository's own
//! Markdown whole. The book itself is in `src/` (built with mdbook); this
//! crate is only what reads it:
//!
//! - [`broken_links`]: every relative link in a Markdown file (and every
//!   entry of `SUMMARY.md`, which is a list of links) names a file that
//!   exists, and a `#fragment` names a heading of that file.
//! - [`uncited_rfcs`]: every project RFC cited in source code (`RFC 0NNN`,
//!   four digits with a leading zero; IETF RFCs such as RFC 3339 have no
//!   leading zero) exists as `docs/src/rfcs/0NNN-*.md`.
//!
//! ```no_run
//! let root = std::path::Path::new("..");
//! let problems = crabtalk_docs::broken_links(&crabtalk_docs::markdown_files(root));
//! assert!(problems.is_empty(), "{problems:#?}");
//! ```

mod links;
mod rfcs;
mod walk;

pub use links::{BrokenLink, broken_links, headings, link_targets};
pub use rfcs::{UncitedRfc, cited_rfcs, uncited_rfcs};
pub use walk::{markdown_files, source_files};
