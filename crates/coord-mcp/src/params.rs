//! Tool arguments. Like the SDK's own `Parameters`, but a deserialization error names
//! the offending field (`ttl_minutes: invalid type: string "soon", expected i64`), so a
//! model can fix its call. The SDK turns these errors into tool errors, not protocol
//! errors, because of their "failed to deserialize parameters" prefix.

use rmcp::ErrorData;
use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

/// A tool's arguments, deserialised from the call (named `Parameters` so the SDK's
/// macro derives the tool's input schema from `T`).
pub struct Parameters<T>(pub T);

impl<T: JsonSchema> JsonSchema for Parameters<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

pub fn parse<T: DeserializeOwned>(arguments: serde_json::Map<String, serde_json::Value>) -> Result<T, String> {
    serde_path_to_error::deserialize(serde_json::Value::Object(arguments)).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.inner().to_string()
        } else {
            format!("field `{path}`: {}", e.inner())
        }
    })
}

impl<S, T: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Parameters<T> {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        let arguments = context.arguments.take().unwrap_or_default();
        parse(arguments)
            .map(Parameters)
            .map_err(|why| ErrorData::invalid_params(format!("failed to deserialize parameters: {why}"), None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coord_domain::locks::AcquireLockRequest;
    use serde_json::json;

    #[test]
    fn errors_name_the_field() {
        let obj = |v: serde_json::Value| v.as_object().unwrap().clone();
        let e = parse::<AcquireLockRequest>(obj(json!({"file_path": "a", "ttl_minutes": "soon"}))).unwrap_err();
        assert!(e.starts_with("field `ttl_minutes`"), "{e}");
        let e = parse::<AcquireLockRequest>(obj(json!({"reason": "x"}))).unwrap_err();
        assert!(e.contains("`file_path`"), "{e}");
        assert!(parse::<AcquireLockRequest>(obj(json!({"file_path": "a"}))).is_ok());
    }
}
