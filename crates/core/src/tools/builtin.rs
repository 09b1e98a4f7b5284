//! The built-in tools: the original's backend-safe catalog (files, documents, data, web,
//! calculator) plus `RunCommand`. Each submodule registers its tools.

pub mod calculator;
pub mod command;
pub mod data;
pub mod documents;
pub mod files;
pub mod web;

use super::{Catalog, CatalogBuilder, CatalogError};

/// Every built-in tool.
pub fn catalog() -> Result<Catalog, CatalogError> {
    let mut builder = CatalogBuilder::default();
    files::register(&mut builder)?;
    documents::register(&mut builder)?;
    data::register(&mut builder)?;
    calculator::register(&mut builder)?;
    web::register(&mut builder)?;
    command::register(&mut builder)?;
    Ok(builder.build())
}
