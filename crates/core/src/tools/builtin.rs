//! The built-in tools: the original's backend-safe catalog (files, documents, data, web,
//! calculator) plus `RunCommand`. Each submodule registers its tools.

pub(crate) mod calculator;
pub(crate) mod command;
pub(crate) mod data;
pub(crate) mod documents;
pub(crate) mod files;
pub(crate) mod web;

use super::{Catalog, CatalogBuilder, CatalogError};

/// Every built-in tool.
pub(crate) fn catalog() -> Result<Catalog, CatalogError> {
    let mut builder = CatalogBuilder::default();
    files::register(&mut builder)?;
    documents::register(&mut builder)?;
    data::register(&mut builder)?;
    calculator::register(&mut builder)?;
    web::register(&mut builder)?;
    command::register(&mut builder)?;
    Ok(builder.build())
}
