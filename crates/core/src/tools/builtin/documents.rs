//! Built-in tools: documents.

use crate::tools::{CatalogBuilder, CatalogError};

/// Registers this module's tools.
pub fn register(_builder: &mut CatalogBuilder) -> Result<(), CatalogError> {
    Ok(())
}
