//! The route registry: each route is added together with its documentation, so the router and
//! the OpenAPI 3.1 document (`/docs/openapi.json`) are built from the same list and cannot
//! drift apart. Schemas come from the wire types through schemars. Each route also says whom it
//! serves: public, a user (the default), or the daemon's operator (`operator()`: a proxied user
//! gets 403 `forbidden`; the handler takes [`Operator`](super::identity::Operator)).

use axum::Router;
use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{MethodFilter, on};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};
use souz_protocol::ErrorBody;

type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

fn root_schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.root_schema_for::<T>()
}

/// One documented route.
#[derive(Clone)]
pub(crate) struct Operation {
    method: Method,
    path: &'static str,
    summary: &'static str,
    description: Option<&'static str>,
    tag: &'static str,
    public: bool,
    operator: bool,
    websocket: bool,
    request: Option<SchemaFn>,
    /// A non-JSON request body: its media type.
    binary_request: Option<&'static str>,
    multipart_request: Option<fn() -> Value>,
    query: Option<SchemaFn>,
    responses: Vec<(u16, &'static str, Option<SchemaFn>)>,
}

impl Operation {
    fn new(method: Method, path: &'static str) -> Self {
        Self {
            method,
            path,
            summary: "",
            description: None,
            tag: "system",
            public: false,
            operator: false,
            websocket: false,
            request: None,
            binary_request: None,
            multipart_request: None,
            query: None,
            responses: Vec::new(),
        }
    }

    /// A `GET` route.
    pub(crate) fn get(path: &'static str) -> Self {
        Self::new(Method::GET, path)
    }

    /// A `POST` route.
    pub(crate) fn post(path: &'static str) -> Self {
        Self::new(Method::POST, path)
    }

    /// A `PUT` route.
    pub(crate) fn put(path: &'static str) -> Self {
        Self::new(Method::PUT, path)
    }

    /// A `PATCH` route.
    pub(crate) fn patch(path: &'static str) -> Self {
        Self::new(Method::PATCH, path)
    }

    /// A `DELETE` route.
    pub(crate) fn delete(path: &'static str) -> Self {
        Self::new(Method::DELETE, path)
    }

    /// One-line summary.
    pub(crate) fn summary(mut self, summary: &'static str) -> Self {
        self.summary = summary;
        self
    }

    /// Longer description (Markdown).
    pub(crate) fn description(mut self, description: &'static str) -> Self {
        self.description = Some(description);
        self
    }

    /// Group in the docs.
    pub(crate) fn tag(mut self, tag: &'static str) -> Self {
        self.tag = tag;
        self
    }

    /// Needs no token.
    pub(crate) fn public(mut self) -> Self {
        self.public = true;
        self
    }

    /// Serves the daemon's operator only: in trusted-proxy mode a proxied user gets 403
    /// `forbidden` (the handler must take [`Operator`](super::identity::Operator)).
    pub(crate) fn operator(mut self) -> Self {
        self.operator = true;
        self
    }

    /// A WebSocket upgrade; `T` is the type of the frames the server sends.
    pub(crate) fn websocket<T: JsonSchema>(mut self) -> Self {
        self.websocket = true;
        self.responses.push((
            101,
            "Switching to the WebSocket protocol; frames are JSON.",
            Some(schema_of::<T>),
        ));
        self
    }

    /// JSON request body of type `T`.
    pub(crate) fn request<T: JsonSchema>(mut self) -> Self {
        self.request = Some(schema_of::<T>);
        self
    }

    /// A raw request body of media type `media_type` (an upload).
    pub(crate) fn binary_request(mut self, media_type: &'static str) -> Self {
        self.binary_request = Some(media_type);
        self
    }

    /// A `multipart/form-data` request body whose parts `schema` describes (an object schema).
    pub(crate) fn multipart_request(mut self, schema: fn() -> Value) -> Self {
        self.multipart_request = Some(schema);
        self
    }

    /// Query parameters: the fields of `T`.
    pub(crate) fn query<T: JsonSchema>(mut self) -> Self {
        self.query = Some(root_schema_of::<T>);
        self
    }

    /// A JSON response of type `T`.
    pub(crate) fn response<T: JsonSchema>(
        mut self,
        status: u16,
        description: &'static str,
    ) -> Self {
        self.responses
            .push((status, description, Some(schema_of::<T>)));
        self
    }

    /// A response with no body, or a non-JSON one.
    pub(crate) fn plain_response(mut self, status: u16, description: &'static str) -> Self {
        self.responses.push((status, description, None));
        self
    }

    /// `METHOD /path`.
    pub(crate) fn endpoint(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    #[cfg(test)]
    /// The path template.
    pub(crate) fn path(&self) -> &'static str {
        self.path
    }

    #[cfg(test)]
    /// The method.
    pub(crate) fn method(&self) -> &Method {
        &self.method
    }

    #[cfg(test)]
    /// Whether the route needs no token.
    pub(crate) fn is_public(&self) -> bool {
        self.public
    }

    #[cfg(test)]
    /// Whether the route serves the daemon's operator only.
    pub(crate) fn is_operator(&self) -> bool {
        self.operator
    }
}

/// A router that remembers the documentation of its routes.
pub(crate) struct ApiRouter<S> {
    router: Router<S>,
    operations: Vec<Operation>,
}

impl<S: Clone + Send + Sync + 'static> Default for ApiRouter<S> {
    fn default() -> Self {
        Self {
            router: Router::new(),
            operations: Vec::new(),
        }
    }
}

impl<S: Clone + Send + Sync + 'static> ApiRouter<S> {
    /// Adds a documented route.
    pub(crate) fn route<H, T>(mut self, operation: Operation, handler: H) -> Self
    where
        H: Handler<T, S>,
        T: 'static,
    {
        let filter = method_filter(&operation.method);
        self.router = self.router.route(operation.path, on(filter, handler));
        self.operations.push(operation);
        self
    }

    /// Adds every route of `other`.
    pub(crate) fn merge(mut self, other: Self) -> Self {
        self.router = self.router.merge(other.router);
        self.operations.extend(other.operations);
        self
    }

    /// The router and its documentation.
    pub(crate) fn finish(self) -> (Router<S>, Vec<Operation>) {
        (self.router, self.operations)
    }
}

fn method_filter(method: &Method) -> MethodFilter {
    match *method {
        Method::POST => MethodFilter::POST,
        Method::PUT => MethodFilter::PUT,
        Method::PATCH => MethodFilter::PATCH,
        Method::DELETE => MethodFilter::DELETE,
        _ => MethodFilter::GET,
    }
}

/// The `requestBody` of `operation`: JSON of its request type, or a raw upload.
fn request_body(operation: &Operation, generator: &mut SchemaGenerator) -> Option<Value> {
    if let Some(request) = operation.request {
        return Some(
            json!({"required": true, "content": {"application/json": {"schema": request(generator)}}}),
        );
    }
    if let Some(schema) = operation.multipart_request {
        return Some(
            json!({"required": true, "content": {"multipart/form-data": {"schema": schema()}}}),
        );
    }
    operation.binary_request.map(|media_type| {
        json!({"required": true, "content": {media_type: {"schema": {"type": "string", "contentMediaType": media_type}}}})
    })
}

/// Builds the OpenAPI 3.1 document for `operations`.
pub(crate) fn openapi(operations: &[Operation], version: &str) -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    settings.meta_schema = None;
    let mut generator = settings.into_generator();
    let error_schema = generator.subschema_for::<ErrorBody>();

    let mut paths: Map<String, Value> = Map::new();
    for operation in operations {
        let mut op = Map::new();
        op.insert("summary".into(), json!(operation.summary));
        if let Some(description) = operation.description {
            op.insert("description".into(), json!(description));
        }
        op.insert("tags".into(), json!([operation.tag]));
        op.insert(
            "operationId".into(),
            json!(operation_id(&operation.method, operation.path)),
        );
        if operation.public {
            op.insert("security".into(), json!([]));
        }
        if operation.operator {
            op.insert("x-souz-operator".into(), json!(true));
        }

        let mut parameters: Vec<Value> = path_parameters(operation.path)
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        if let Some(query) = operation.query {
            parameters.extend(query_parameters(&query(&mut generator)));
        }
        if !parameters.is_empty() {
            op.insert("parameters".into(), Value::Array(parameters));
        }
        if let Some(body) = request_body(operation, &mut generator) {
            op.insert("requestBody".into(), body);
        }

        let mut responses = Map::new();
        for (status, description, schema) in &operation.responses {
            let mut response = json!({"description": description});
            if let Some(schema) = schema {
                response["content"] =
                    json!({"application/json": {"schema": schema(&mut generator)}});
            }
            responses.insert(status.to_string(), response);
        }
        let mut standard = vec![if operation.operator {
            (
                403,
                "An operator route called by a user behind the trusted proxy (`forbidden`), or \
                 a foreign Host or Origin (DNS-rebinding defence).",
            )
        } else {
            (403, "Foreign Host or Origin (DNS-rebinding defence).")
        }];
        if !operation.public {
            standard.push((
                401,
                "Missing or wrong bearer token, or (trusted-proxy mode) proxy headers that do \
                 not check out (`untrusted_proxy`, `missing_user_identity`, \
                 `invalid_user_identity`).",
            ));
        }
        if operation.request.is_some() {
            standard.push((400, "Invalid request."));
            standard.push((413, "Body over the configured limit."));
        }
        for (status, description) in standard {
            responses
                .entry(status.to_string())
                .or_insert_with(|| json!({"description": description, "content": {"application/json": {"schema": error_schema.clone()}}}));
        }
        op.insert("responses".into(), Value::Object(responses));

        let item = paths
            .entry(operation.path.to_owned())
            .or_insert_with(|| json!({}));
        item[operation.method.as_str().to_ascii_lowercase()] = Value::Object(op);
    }

    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Souz",
            "version": version,
            "description": "The local Souz daemon: gateway API, runtime events and the approval gate. \
                            Every route except those marked public needs `Authorization: Bearer <token>` \
                            (`souz token` prints it). Behind a trusted proxy (`[server] trusted_proxy_token`), \
                            requests with `X-Souz-Proxy-Auth` and `X-User-Id` act for that user and get 403 \
                            `forbidden` on operator routes (`x-souz-operator`); requests without them are \
                            the operator's. An MCP client token (`/v1/clients`) is valid on `/mcp` \
                            only: every `/v1` route answers it 403 `forbidden`.",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": generator.take_definitions(true),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    })
}

fn path_parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter_map(|segment| {
        segment
            .strip_prefix('{')
            .and_then(|rest| rest.strip_suffix('}'))
            .map(|name| name.trim_start_matches('*'))
    })
}

fn query_parameters(schema: &Schema) -> Vec<Value> {
    let Some(object) = schema.as_object() else {
        return Vec::new();
    };
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    object
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(name, schema)| {
                    let mut parameter = json!({
                        "name": name,
                        "in": "query",
                        "required": required.contains(&name.as_str()),
                        "schema": schema,
                    });
                    if let Some(description) = schema.get("description") {
                        parameter["description"] = description.clone();
                    }
                    parameter
                })
                .collect()
        })
        .unwrap_or_default()
}

fn operation_id(method: &Method, path: &str) -> String {
    let mut id = method.as_str().to_ascii_lowercase();
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        id.push('_');
        id.extend(
            segment
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .filter(|c| *c != '_' || !segment.starts_with('{')),
        );
    }
    if id == method.as_str().to_ascii_lowercase() {
        id.push_str("_root");
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Paging {
        /// Return events after this sequence number.
        after_seq: Option<i64>,
        limit: u32,
    }

    #[test]
    fn document_lists_operations_with_schemas_and_security() {
        let operations = vec![
            Operation::get("/health")
                .summary("Health")
                .public()
                .response::<ErrorBody>(200, "ok"),
            Operation::get("/v1/things/{id}")
                .summary("Thing")
                .query::<Paging>(),
            Operation::post("/v1/things")
                .summary("Create")
                .request::<ErrorBody>(),
            Operation::get("/v1/settings-of-the-daemon")
                .summary("Operator")
                .operator(),
        ];
        let doc = openapi(&operations, "9.9.9");
        assert_eq!(doc["openapi"], "3.1.0");
        assert_eq!(doc["info"]["version"], "9.9.9");
        assert_eq!(doc["paths"]["/health"]["get"]["security"], json!([]));
        assert!(doc["paths"]["/health"]["get"]["responses"]["401"].is_null());
        let thing = &doc["paths"]["/v1/things/{id}"]["get"];
        assert!(thing["responses"]["401"].is_object());
        let params = thing["parameters"].as_array().unwrap();
        assert_eq!(params[0]["name"], "id");
        assert_eq!(params[0]["in"], "path");
        let after = params.iter().find(|p| p["name"] == "after_seq").unwrap();
        assert_eq!(after["required"], false);
        assert_eq!(
            after["description"],
            "Return events after this sequence number."
        );
        let limit = params.iter().find(|p| p["name"] == "limit").unwrap();
        assert_eq!(limit["required"], true);
        let create = &doc["paths"]["/v1/things"]["post"];
        assert_eq!(
            create["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/ErrorBody"
        );
        assert!(create["responses"]["413"].is_object());
        assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
        assert!(doc["components"]["schemas"]["ErrorCode"].is_object());
        let operator = &doc["paths"]["/v1/settings-of-the-daemon"]["get"];
        assert_eq!(operator["x-souz-operator"], true);
        let forbidden = operator["responses"]["403"]["description"]
            .as_str()
            .unwrap();
        assert!(forbidden.contains("`forbidden`"), "{forbidden}");
        assert!(thing["x-souz-operator"].is_null());
        let host_only = thing["responses"]["403"]["description"].as_str().unwrap();
        assert!(!host_only.contains("forbidden"), "{host_only}");
    }

    #[test]
    fn operation_ids_are_readable_and_distinct() {
        assert_eq!(operation_id(&Method::GET, "/"), "get_root");
        assert_eq!(
            operation_id(&Method::GET, "/v1/bootstrap"),
            "get_v1_bootstrap"
        );
        assert_eq!(
            operation_id(&Method::GET, "/docs/openapi.json"),
            "get_docs_openapi_json"
        );
        assert_eq!(
            operation_id(&Method::DELETE, "/v1/grants/{id}"),
            "delete_v1_grants_id"
        );
    }
}
