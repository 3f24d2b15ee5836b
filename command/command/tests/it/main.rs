//! The integration tests of `crabtalk-command`, as one test binary (one
//! link instead of one per file): rendering units, the service-manager
//! backends driven through fake `systemctl`/`launchctl`, and the process
//! backend running a real component.

mod managers;
mod process_backend;
mod support;
mod units;
