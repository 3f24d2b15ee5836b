//! What a component declares about each tool: [`ToolSpec`]. Every field is
//! required, so no tool goes out without its title and its hints.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

/// One tool, as `tools/list` shows it and as `tools/call` treats it.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    /// What callers call it (`cron_add`).
    pub name: &'static str,
    /// What people read (`Schedule a message or skill`); also the
    /// annotations' title.
    pub title: &'static str,
    /// What the model reads to decide when and how to call it.
    pub description: &'static str,
    /// The arguments it takes.
    pub input: Input,
    /// What it may do (MCP's tool annotations).
    pub hints: Hints,
    /// What a call its client cancels does.
    pub on_cancel: OnCancel,
}

/// What a tool may do, for hosts that ask their user before a tool that
/// acts. Each is MCP's annotation of the same name; all four are always
/// sent, so a host never falls back to the specification's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// `readOnlyHint`: it changes nothing.
    pub read_only: bool,
    /// `destructiveHint`: it may change or delete what is there, not only
    /// add (meaningful when not read-only).
    pub destructive: bool,
    /// `idempotentHint`: calling it again with the same arguments changes
    /// nothing more.
    pub idempotent: bool,
    /// `openWorldHint`: it reaches beyond the component's own state (the
    /// web, Telegram, an agent's turn).
    pub open_world: bool,
}

/// What a call its client cancels (`notifications/cancelled`, or the
/// session closed) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnCancel {
    /// The handler runs to its end; its answer goes nowhere. For tools that
    /// write state in several steps, where stopping half-way would leave a
    /// change half made.
    Finish,
    /// The handler is dropped at once: its work stops at its next `.await`.
    Stop,
}

/// A tool's input schema: a JSON Schema object whose properties are the
/// arguments.
///
/// Optional arguments are typed by what they hold (`"type": "integer"`),
/// not as that or `null` (`["integer", "null"]`, what schemars writes for
/// an `Option`): forms made from the schema (the MCP inspector's) then
/// send a number, and `null` is still read as absent.
#[derive(Debug, Clone, PartialEq)]
pub struct Input(JsonObject);

impl Input {
    /// The schema of `T`, the type the handler reads the arguments into.
    pub fn of<T: schemars::JsonSchema>() -> Self {
        match serde_json::to_value(schemars::schema_for!(T)) {
            Ok(Value::Object(schema)) => Self::object(schema),
            // A type whose schema is `true` takes anything.
            _ => Self::object(JsonObject::new()),
        }
    }

    /// A schema written by hand; it must be a JSON object.
    ///
    /// # Panics
    ///
    /// When `schema` is not an object: a mistake in the component's own
    /// code, caught by its first test that lists the tools.
    pub fn schema(schema: Value) -> Self {
        match schema {
            Value::Object(schema) => Self::object(schema),
            other => panic!("a tool's input schema must be a JSON object, not {other}"),
        }
    }

    fn object(mut schema: JsonObject) -> Self {
        super::schema::drop_null_types(&mut schema);
        Self(schema)
    }

    /// The schema as JSON.
    pub fn as_object(&self) -> &JsonObject {
        &self.0
    }
}

impl ToolSpec {
    /// The tool as rmcp lists it.
    pub(super) fn tool(&self) -> Tool {
        let hints = self.hints;
        let annotations = ToolAnnotations::with_title(self.title)
            .read_only(hints.read_only)
            .destructive(hints.destructive)
            .idempotent(hints.idempotent)
            .open_world(hints.open_world);
        Tool::new(
            Cow::Borrowed(self.name),
            Cow::Borrowed(self.description),
            Arc::new(self.input.0.clone()),
        )
        .with_title(self.title)
        .with_annotations(annotations)
    }
}
