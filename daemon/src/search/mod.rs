//! Session search (placeholder).
