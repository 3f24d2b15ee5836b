//! `crabtalk-docs`: checks that keep the book, the repository's own
//! Markdown and the code map whole. The book itself is in `src/` (built with mdbook); this
//! crate is only what reads it:
//!
//! - [`broken_links`]: every relative link in a Markdown file (and every
//!   entry of `SUMMARY.md`, which is a list of links) names a file that
//!   exists, and a `#fragment` names a heading of that file.
//! - [`uncited_rfcs`]: every project RFC cited in source code (`RFC 0NNN`,
//!   four digits with a leading zero; IETF RFCs such as RFC 3339 have no
//!   leading zero) exists as `docs/src/rfcs/0NNN-*.md`.
//! - [`code_map_problems`]: `ARCHITECTURE.md`'s code map has a section per
//!   crate of the workspace, at its folder, in the order of the floors
//!   ([`FLOORS`]), and every source file a section names is in that crate.
//! - [`unused_dependencies`]: every dependency a crate declares is named by
//!   its code (shipped code for normal ones), or listed with a reason as
//!   ignored.
//! - [`file_imports`] and [`circles`]: which files of a crate import which
//!   (read from the source with [`code_only`] and [`tokens`]: comments and
//!   literals skipped, `use` trees expanded), and every circle among them,
//!   step by step (RFC 0045). The daemon's layer test reads its modules
//!   with the same reader.
//!
//! ```no_run
//! let root = std::path::Path::new("..");
//! let problems = crabtalk_docs::broken_links(&crabtalk_docs::markdown_files(root));
//! assert!(problems.is_empty(), "{problems:#?}");
//! ```

mod circles;
mod code_map;
mod dependencies;
mod imports;
mod links;
mod rfcs;
mod tokens;
mod walk;

pub use circles::circles;

pub use code_map::{
    FLOORS, MapSection, Member, code_map, code_map_problems, floor_of, named_sources,
    workspace_crates,
};
pub use dependencies::{UnusedDependency, names_crate, unused_dependencies};
pub use imports::{
    Import, NamedPath, SourceFile, crate_sources, file_imports, module_path, named_paths,
};
pub use links::{BrokenLink, broken_links, headings, link_targets};
pub use rfcs::{UncitedRfc, cited_rfcs, uncited_rfcs};
pub use tokens::{Token, code_only, tokens};
pub use walk::{markdown_files, schema_files, source_files};
