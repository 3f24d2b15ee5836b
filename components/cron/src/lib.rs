//! `crabtalk-cron`: the crabtalk scheduler service.

pub mod cli;
pub mod schedule;
