//! `ViewImage` (a local image, inside the roots and size-limited, to a vision-capable model)
//! and `GenerateImage` (the provider's images API; the PNG written at the planned path).
//!
//! Invariants: the image read is the file planned (re-resolved, opened beneath its root, at
//! most `[web] max_image_bytes` read); the generated image is written only at the path the gate
//! allowed, never over an existing file.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::{Risk, ToolCategory};

use super::{ImageInput, WebServices};
use crate::sandbox::Access;
use crate::tools::builtin::documents::resolve_readable_file;
use crate::tools::builtin::files::{plan_new_output, write_new_output};
use crate::tools::{Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, localized};

/// Image sizes the images API accepts.
const SIZES: &[&str] = &["1024x1024", "1024x1536", "1536x1024", "auto"];

/// Arguments of `ViewImage`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ViewImageArgs {
    /// The image file (PNG, JPEG, GIF or WebP) inside the roots.
    pub image_path: String,
    /// What to find out about the image.
    pub question: String,
}

/// Arguments of `GenerateImage`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GenerateImageArgs {
    /// What the image should show.
    pub prompt: String,
    /// Where to save the PNG (a new .png file inside the roots; default
    /// `~/Documents/souz/generated_image_<time>.png`).
    #[serde(default)]
    pub output_path: Option<String>,
    /// `1024x1024` (default), `1024x1536`, `1536x1024` or `auto`.
    #[serde(default)]
    pub size: Option<String>,
}

/// `ViewImage`.
pub(crate) struct ViewImage(pub Arc<WebServices>);

/// `GenerateImage`.
pub(crate) struct GenerateImage(pub Arc<WebServices>);

/// The media type of an image file by its extension.
pub(crate) fn media_type(path: &Path) -> Option<&'static str> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match extension.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

fn no_model() -> ToolError {
    ToolError::Failed("no model is set up for images (add a provider key in Settings)".into())
}

impl Tool for ViewImage {
    type Args = ViewImageArgs;
    type Prepared = PathBuf;

    fn name(&self) -> &'static str {
        "ViewImage"
    }

    fn description(&self) -> &'static str {
        "Looks at a local image file (PNG, JPEG, GIF or WebP, inside the workspace) with a \
         vision-capable model and answers a question about it: what it shows, text in it, \
         details. The image is sent to the configured model provider."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }

    async fn plan(
        &self,
        args: &ViewImageArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<PathBuf>, ToolError> {
        if args.question.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "`question` must not be empty".into(),
            ));
        }
        let resolved = resolve_readable_file(ctx, &args.image_path)?;
        let shown = ctx.sandbox.display(&resolved.path);
        if media_type(&resolved.path).is_none() {
            return Err(ToolError::InvalidArguments(format!(
                "{shown} is not a PNG, JPEG, GIF or WebP image"
            )));
        }
        let limit = self.0.config.max_image_bytes;
        let size = std::fs::metadata(&resolved.path)
            .map(|meta| meta.len())
            .unwrap_or(0);
        if size > limit {
            return Err(ToolError::InvalidArguments(format!(
                "{shown} is {size} bytes; images larger than {limit} bytes are not sent"
            )));
        }
        let path = resolved.path.clone();
        Ok(Plan::new(localized!(
            ctx.language,
            "Show the image {shown} to the model",
            "Показать модели изображение {shown}"
        ))
        .path(&resolved, Access::Read)
        .with(path))
    }

    async fn run(
        &self,
        args: ViewImageArgs,
        planned: PathBuf,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let model = self.0.model.clone().ok_or_else(no_model)?;
        let resolved = ctx.sandbox.resolve(&args.image_path, Access::Read)?;
        let shown = ctx.sandbox.display(&planned);
        if resolved.path != planned {
            return Err(ToolError::Conflict(format!(
                "`{}` now leads to {} instead of {shown}; nothing was read",
                args.image_path,
                ctx.sandbox.display(&resolved.path)
            )));
        }
        let limit = self.0.config.max_image_bytes;
        let mut bytes = Vec::new();
        ctx.sandbox
            .beneath()
            .open_read(&planned)
            .and_then(|file| file.take(limit.saturating_add(1)).read_to_end(&mut bytes))
            .map_err(|error| ToolError::Failed(format!("cannot read {shown}: {error}")))?;
        if bytes.len() as u64 > limit {
            return Err(ToolError::Failed(format!(
                "{shown} grew past {limit} bytes after the call was planned; it was not sent"
            )));
        }
        let image = ImageInput {
            media_type: media_type(&planned).unwrap_or("image/png").to_owned(),
            bytes,
        };
        let answer = model
            .view_image(&ctx.requester, args.question.trim(), &image, &ctx.cancel)
            .await
            .map_err(|error| {
                if ctx.cancel.is_cancelled() {
                    ToolError::Cancelled
                } else {
                    ToolError::Failed(format!("the vision model failed: {error}"))
                }
            })?;
        Ok(ToolOutput::text(answer))
    }
}

/// What `GenerateImage` planned.
#[derive(Debug)]
pub(crate) struct ImagePlan {
    raw: String,
    path: PathBuf,
    size: String,
}

impl Tool for GenerateImage {
    type Args = GenerateImageArgs;
    type Prepared = ImagePlan;

    fn name(&self) -> &'static str {
        "GenerateImage"
    }

    fn description(&self) -> &'static str {
        "Generates an image from a text prompt with the provider's images API (OpenAI) and \
         saves it as a new PNG file (outputPath, default ~/Documents/souz/generated_image_<time>.png)."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::Write
    }

    async fn plan(
        &self,
        args: &GenerateImageArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<ImagePlan>, ToolError> {
        let prompt = args.prompt.trim();
        if prompt.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`prompt` must not be empty".into(),
            ));
        }
        let size = args.size.as_deref().map(str::trim).unwrap_or("1024x1024");
        if !SIZES.contains(&size) {
            return Err(ToolError::InvalidArguments(format!(
                "`size` must be one of {}",
                SIZES.join(", ")
            )));
        }
        let raw = match args.output_path.as_deref().map(str::trim) {
            Some(path) if !path.is_empty() => path.to_owned(),
            _ => format!(
                "~/Documents/souz/generated_image_{}.png",
                chrono::Local::now().format("%Y%m%d_%H%M%S")
            ),
        };
        if !raw.to_ascii_lowercase().ends_with(".png") {
            return Err(ToolError::InvalidArguments(
                "`outputPath` must end with .png: the images API returns PNG".into(),
            ));
        }
        let resolved = plan_new_output(&ctx.sandbox, &raw)?;
        let shown = ctx.sandbox.display(&resolved.path);
        let short: String = prompt.chars().take(80).collect();
        Ok(Plan::new(localized!(
            ctx.language,
            "Generate an image of \"{short}\" and save it to {shown}",
            "Создать изображение «{short}» и сохранить его в {shown}"
        ))
        .path(&resolved, Access::Write)
        .with(ImagePlan {
            raw,
            path: resolved.path,
            size: size.to_owned(),
        }))
    }

    async fn run(
        &self,
        args: GenerateImageArgs,
        planned: ImagePlan,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let model = self.0.model.clone().ok_or_else(no_model)?;
        let png = model
            .generate_image(
                &ctx.requester,
                args.prompt.trim(),
                &planned.size,
                &ctx.cancel,
            )
            .await
            .map_err(|error| {
                if ctx.cancel.is_cancelled() {
                    ToolError::Cancelled
                } else {
                    ToolError::Failed(format!("the images API failed: {error}"))
                }
            })?;
        if !png.starts_with(b"\x89PNG\r\n\x1a\n") {
            return Err(ToolError::Failed(
                "the images API did not return a PNG".into(),
            ));
        }
        let sandbox = Arc::clone(&ctx.sandbox);
        let bytes = png.len();
        let shown = tokio::task::spawn_blocking(move || {
            write_new_output(&sandbox, &planned.raw, &planned.path, &png)
        })
        .await
        .map_err(|error| ToolError::Internal(format!("image write failed: {error}")))??;
        Ok(ToolOutput::text(format!(
            "Image saved to {shown} ({bytes} bytes)"
        )))
    }
}
