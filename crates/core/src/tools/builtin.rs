//! The built-in tools: the original's backend-safe catalog (files, documents, data, web,
//! calculator, the model-backed web and image tools) plus `RunCommand`. Each submodule
//! registers its tools.

pub(crate) mod calculator;
pub(crate) mod command;
pub(crate) mod data;
pub(crate) mod documents;
pub(crate) mod files;
pub(crate) mod internet;
pub(crate) mod web;
pub(crate) mod worker;

use std::sync::Arc;

use super::{Catalog, CatalogBuilder, CatalogError, DynTool};

/// Every built-in tool, the model-backed ones without a model or cache (they say so when run).
#[cfg(any(test, feature = "test-support"))]
pub(crate) fn catalog() -> Result<Catalog, CatalogError> {
    catalog_with(&Arc::new(internet::WebServices::default()), Vec::new())
}

/// Every built-in tool, the model-backed ones over `web`, and `extra`: catalog tools of the
/// layers above (the schedule tools), erased.
pub(crate) fn catalog_with(
    web: &Arc<internet::WebServices>,
    extra: Vec<Arc<dyn DynTool>>,
) -> Result<Catalog, CatalogError> {
    let mut builder = CatalogBuilder::default();
    for tool in extra {
        builder.add_dyn(tool)?;
    }
    files::register(&mut builder)?;
    documents::register(&mut builder)?;
    data::register(&mut builder)?;
    calculator::register(&mut builder)?;
    web::register(&mut builder)?;
    internet::register(&mut builder, web)?;
    command::register(&mut builder)?;
    Ok(builder.build())
}
