//! `crabtalk-command`: service metadata, unit rendering and service managers shared by crabtalk binaries.
//!
//! Not built yet.
