//! How a config section is declared: one struct per `[section]`, defaults next to the fields,
//! doc comments that become the comments of the generated `config.toml`.
//!
//! `config_section!` turns a struct declaration into the struct, its `Default`, and a
//! [`Section`] implementation that sets fields one key at a time. Setting keys one by one is what
//! lets `souz config check` report *every* problem with its position instead of stopping at the
//! first serde error.

use std::ops::Range;

use serde::de::{DeserializeOwned, IntoDeserializer};

/// One documented key of a section.
#[derive(Debug, Clone, Copy)]
pub struct KeyDoc {
    /// The key as written in TOML.
    pub name: &'static str,
    /// Its documentation, one line per doc-comment line.
    pub doc: &'static str,
}

/// Why a value could not be set.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// Human-readable message (without position).
    pub message: String,
    /// Byte range in the source, when the parser knew it more precisely than the value.
    pub span: Option<Range<usize>>,
}

/// A semantic problem found by a section's validation, tied to the key it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// The key inside the section (`port`), or `""` for the section as a whole.
    pub key: &'static str,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl Invalid {
    /// A problem with `key`.
    pub fn new(key: &'static str, message: impl Into<String>) -> Self {
        Self {
            key,
            message: message.into(),
        }
    }
}

/// A `[section]` of `config.toml`.
pub trait Section: Default {
    /// The section name as written in brackets.
    const NAME: &'static str;
    /// Documentation of the section.
    const DOC: &'static str;
    /// Every key, in declaration order.
    const KEYS: &'static [KeyDoc];

    /// Sets `key` from `value`. `None` means the key is unknown.
    fn set(&mut self, key: &str, value: toml_edit::Value) -> Option<Result<(), FieldError>>;

    /// The default of `key` rendered as a TOML value, for the template.
    fn default_toml(key: &str) -> Option<String>;

    /// Semantic checks that types cannot express.
    fn validate(&self) -> Vec<Invalid>;
}

/// Deserializes one TOML value into a field type, keeping the parser's position on failure.
pub(crate) fn parse_value<T: DeserializeOwned>(value: toml_edit::Value) -> Result<T, FieldError> {
    T::deserialize(value.into_deserializer()).map_err(|error| FieldError {
        message: error.message().to_owned(),
        span: error.span(),
    })
}

/// Renders a default value as TOML for the generated template.
pub(crate) fn render_default<T: serde::Serialize>(value: &T) -> String {
    match value.serialize(toml_edit::ser::ValueSerializer::new()) {
        Ok(rendered) => rendered.to_string().trim().to_owned(),
        // Only reachable for types TOML cannot express (e.g. `None`); sections avoid them.
        Err(error) => format!("<unrepresentable: {error}>"),
    }
}

/// Declares a config section. See the module docs.
macro_rules! config_section {
    (
        $(#[doc = $section_doc:literal])*
        #[section = $name:literal]
        pub struct $type:ident {
            $(
                $(#[doc = $field_doc:literal])*
                pub $field:ident : $field_type:ty = $default:expr,
            )*
        }
    ) => {
        $(#[doc = $section_doc])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct $type {
            $(
                $(#[doc = $field_doc])*
                pub $field: $field_type,
            )*
        }

        impl Default for $type {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }

        impl $crate::config::section::Section for $type {
            const NAME: &'static str = $name;
            const DOC: &'static str = concat!($($section_doc, "\n",)*);
            const KEYS: &'static [$crate::config::section::KeyDoc] = &[
                $(
                    $crate::config::section::KeyDoc {
                        name: stringify!($field),
                        doc: concat!($($field_doc, "\n",)*),
                    },
                )*
            ];

            fn set(
                &mut self,
                key: &str,
                value: toml_edit::Value,
            ) -> Option<Result<(), $crate::config::section::FieldError>> {
                match key {
                    $(
                        stringify!($field) => Some(
                            $crate::config::section::parse_value::<$field_type>(value)
                                .map(|parsed| self.$field = parsed),
                        ),
                    )*
                    _ => None,
                }
            }

            fn default_toml(key: &str) -> Option<String> {
                let defaults = Self::default();
                match key {
                    $(
                        stringify!($field) => {
                            Some($crate::config::section::render_default(&defaults.$field))
                        }
                    )*
                    _ => None,
                }
            }

            fn validate(&self) -> Vec<$crate::config::section::Invalid> {
                self.check()
            }
        }
    };
}

pub(crate) use config_section;
