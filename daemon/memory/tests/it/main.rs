//! The integration tests of `crabtalk-memory`, as one test binary: the
//! CRMEM v1 format byte for byte, the store's operations, dump/load, and
//! kill -9 at random moments.

mod crmem_format;
mod memory_crash;
mod memory_dump;
mod memory_store;
