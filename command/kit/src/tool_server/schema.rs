//! Input schemas as clients build forms from them: an argument's type is
//! what it holds, without `null`.
//!
//! schemars writes an `Option<u32>` as `"type": ["integer", "null"]`. The
//! MCP inspector, given such a type, shows a text field and sends what is
//! typed as a string (`"1"`); given `"integer"` it sends a number. `null`
//! means nothing more than a left-out argument to any tool of the family
//! (serde reads both as `None`), so it is dropped from the types.

use rmcp::model::JsonObject;
use serde_json::Value;

/// Removes `"null"` from the type of every property of `schema` (and of
/// the objects and arrays inside it); a type left with one name is written
/// as that name.
pub(super) fn drop_null_types(schema: &mut JsonObject) {
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        let before = types.len();
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            schema.insert("type".into(), only);
        } else if types.is_empty() && before > 0 {
            // Only null: leave it as it was written.
            schema.insert("type".into(), Value::String("null".into()));
        }
    }
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            if let Value::Object(property) = property {
                drop_null_types(property);
            }
        }
    }
    if let Some(Value::Object(items)) = schema.get_mut("items") {
        drop_null_types(items);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn dropped(schema: Value) -> Value {
        let mut schema = schema.as_object().cloned().unwrap();
        drop_null_types(&mut schema);
        Value::Object(schema)
    }

    #[test]
    fn optional_arguments_are_typed_by_what_they_hold() {
        let schema = dropped(json!({
            "type": "object",
            "properties": {
                "n": {"type": ["integer", "null"], "format": "uint", "minimum": 0},
                "id": {"type": ["string", "null"]},
                "either": {"type": ["integer", "string", "null"]},
                "wait": {"type": "boolean", "default": false},
                "any": true,
                "nested": {"type": ["object", "null"], "properties": {"k": {"type": ["number", "null"]}}},
                "list": {"type": "array", "items": {"type": ["integer", "null"]}},
                "nothing": {"type": ["null"]}
            }
        }));
        let properties = &schema["properties"];
        assert_eq!(
            properties["n"],
            json!({"type": "integer", "format": "uint", "minimum": 0})
        );
        assert_eq!(properties["id"]["type"], "string");
        assert_eq!(properties["either"]["type"], json!(["integer", "string"]));
        assert_eq!(properties["wait"]["type"], "boolean");
        assert_eq!(properties["any"], true);
        assert_eq!(properties["nested"]["type"], "object");
        assert_eq!(properties["nested"]["properties"]["k"]["type"], "number");
        assert_eq!(properties["list"]["items"]["type"], "integer");
        assert_eq!(properties["nothing"]["type"], "null");
    }
}
