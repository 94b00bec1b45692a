//! What each provider accepts of a tool's images and files
//! ([`Provider::media_limits`]), and the notice that replaces a part it
//! would refuse ([`MediaBudget::admit`]).

use super::Provider;
use crate::model_output::ContentPart;

const MB: usize = 1024 * 1024;

/// What one provider accepts of the images and files in tool results (see
/// the table at [`Provider::media_limits`]).
///
/// ```
/// use tool_core::provider::Provider;
///
/// let limits = Provider::Anthropic.media_limits();
/// assert!(limits.image_types.contains(&"image/webp"));
/// assert_eq!(limits.max_image_bytes, Some(5 * 1024 * 1024));
/// assert_eq!(limits.max_images_per_request, 100);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MediaLimits {
    /// Media types of inline (base64) images.
    pub image_types: &'static [&'static str],
    /// Media types of inline (base64) files.
    pub file_types: &'static [&'static str],
    /// The most base64 characters one inline image may take.
    pub max_image_bytes: Option<usize>,
    /// The most base64 characters all inline images and files of one
    /// request may take.
    pub max_inline_bytes: usize,
    /// The most images one request may carry.
    pub max_images_per_request: usize,
    /// Whether an image may be given by URL.
    pub image_urls: bool,
    /// Whether a file may be given by URL.
    pub file_urls: bool,
    /// How the provider's file ids begin; `None` when files cannot be
    /// referred to by id.
    pub file_id_prefix: Option<&'static str>,
    /// Whether an uploaded image may be referred to by its file id.
    pub image_file_ids: bool,
}

const OPENAI_IMAGES: &[&str] = &["image/png", "image/jpeg", "image/webp", "image/gif"];
const PDF: &[&str] = &["application/pdf"];

impl Provider {
    /// What this provider accepts of the images and files in tool results.
    ///
    /// | | Anthropic Messages | OpenAI Responses | OpenAI Chat Completions | Gemini |
    /// |---|---|---|---|---|
    /// | where a part goes | `tool_result` content blocks | `function_call_output` items | one user message after the step's tool messages (tool messages take text only) | `functionResponse.parts` (inline data only) |
    /// | image types | jpeg, png, gif, webp | png, jpeg, webp, gif | png, jpeg, webp, gif | png, jpeg, webp |
    /// | inline file types | application/pdf | application/pdf | application/pdf | application/pdf, text/plain |
    /// | one inline image | 5 MB of base64 | no own limit | no own limit | no own limit |
    /// | inline data per request | 32 MB | 50 MB | 50 MB | 20 MB |
    /// | images per request | 100 | 500 | 500 | 3,000 |
    /// | image and file URLs | yes (a file URL is read as a PDF) | yes | images only | no: sent as text |
    /// | file ids | `file_…` (Files API beta header, which the agent's model adds) | `file-…` | `file-…` (files, not images) | no: sent as text |
    ///
    /// A part a provider would refuse (a media type it does not take, a part
    /// over a limit, another provider's file id, a [`ContentPart::Custom`]
    /// part) is never sent: a text notice takes its place, naming the part and
    /// why, so the model knows something was left out and the request cannot
    /// fail with a 400. Limits per request count parts in conversation order.
    /// Sources: the providers' vision and file-input guides and their official
    /// SDK request types (`anthropic` 2.15, `openai` 3.57).
    ///
    /// ```
    /// use tool_core::provider::Provider;
    ///
    /// assert!(!Provider::OpenAiChat.media_limits().file_urls);
    /// assert_eq!(Provider::OpenAiResponses.media_limits().file_id_prefix, Some("file-"));
    /// ```
    pub fn media_limits(&self) -> MediaLimits {
        match self {
            Provider::Anthropic => MediaLimits {
                image_types: &["image/jpeg", "image/png", "image/gif", "image/webp"],
                file_types: PDF,
                max_image_bytes: Some(5 * MB),
                max_inline_bytes: 32 * MB,
                max_images_per_request: 100,
                image_urls: true,
                file_urls: true,
                file_id_prefix: Some("file_"),
                image_file_ids: true,
            },
            Provider::OpenAiResponses => MediaLimits {
                image_types: OPENAI_IMAGES,
                file_types: PDF,
                max_image_bytes: None,
                max_inline_bytes: 50 * MB,
                max_images_per_request: 500,
                image_urls: true,
                file_urls: true,
                file_id_prefix: Some("file-"),
                image_file_ids: true,
            },
            Provider::OpenAiChat => MediaLimits {
                image_types: OPENAI_IMAGES,
                file_types: PDF,
                max_image_bytes: None,
                max_inline_bytes: 50 * MB,
                max_images_per_request: 500,
                image_urls: true,
                file_urls: false,
                file_id_prefix: Some("file-"),
                image_file_ids: false,
            },
            Provider::Gemini => MediaLimits {
                image_types: &["image/png", "image/jpeg", "image/webp"],
                file_types: &["application/pdf", "text/plain"],
                max_image_bytes: None,
                max_inline_bytes: 20 * MB,
                max_images_per_request: 3000,
                image_urls: false,
                file_urls: false,
                file_id_prefix: None,
                image_file_ids: false,
            },
        }
    }
}

/// What one request has spent of its provider's [`MediaLimits`]: build one
/// per request and pass it to every tool result the request carries
/// ([`Provider::encode_tool_result`]), so limits per request hold across
/// all of them.
///
/// ```
/// use tool_core::ContentPart;
/// use tool_core::provider::{MediaBudget, Provider};
///
/// let mut budget = MediaBudget::new(Provider::Anthropic);
/// let png = ContentPart::ImageData { data: "iVBORw0KGgo=".into(), media_type: "image/png".into() };
/// assert_eq!(budget.admit(&png), Ok(()));
/// let bmp = ContentPart::ImageData { data: "Qk0=".into(), media_type: "image/bmp".into() };
/// assert_eq!(
///     budget.admit(&bmp).unwrap_err(),
///     "[image/bmp image not sent: Anthropic takes image/jpeg, image/png, image/gif, image/webp]"
/// );
/// ```
#[derive(Debug, Clone)]
pub struct MediaBudget {
    provider: Provider,
    limits: MediaLimits,
    images: usize,
    inline_bytes: usize,
}

impl MediaBudget {
    /// Nothing spent yet of `provider`'s limits.
    pub fn new(provider: Provider) -> Self {
        MediaBudget {
            provider,
            limits: provider.media_limits(),
            images: 0,
            inline_bytes: 0,
        }
    }

    /// The provider whose limits this counts.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Takes `part` into the request, counting it against the limits; or
    /// the text notice that replaces it, saying why it cannot go. Text
    /// parts are always taken.
    pub fn admit(&mut self, part: &ContentPart) -> Result<(), String> {
        let name = self.provider.display_name();
        let limits = &self.limits;
        let is_image = matches!(
            part,
            ContentPart::ImageUrl { .. }
                | ContentPart::ImageData { .. }
                | ContentPart::ImageFileId { .. }
        );
        if is_image && self.images >= limits.max_images_per_request {
            return Err(format!(
                "[image not sent: {name} takes at most {} images per request]",
                limits.max_images_per_request
            ));
        }
        let inline = match part {
            ContentPart::Text { .. } => return Ok(()),
            ContentPart::ImageUrl { url } if !limits.image_urls => {
                return Err(format!(
                    "[image {url} not sent: {name} does not fetch image URLs in tool results]"
                ));
            }
            ContentPart::FileUrl { url } if !limits.file_urls => {
                return Err(format!(
                    "[file {url} not sent: {name} does not fetch file URLs]"
                ));
            }
            ContentPart::ImageUrl { .. } | ContentPart::FileUrl { .. } => 0,
            ContentPart::ImageData { data, media_type } => {
                if !limits.image_types.contains(&media_type.as_str()) {
                    return Err(format!(
                        "[{media_type} image not sent: {name} takes {}]",
                        limits.image_types.join(", ")
                    ));
                }
                if let Some(max) = limits.max_image_bytes.filter(|max| data.len() > *max) {
                    return Err(format!(
                        "[{media_type} image not sent: {} is over {name}'s {} per image]",
                        megabytes(data.len()),
                        megabytes(max)
                    ));
                }
                data.len()
            }
            ContentPart::FileData {
                data, media_type, ..
            } => {
                if !limits.file_types.contains(&media_type.as_str()) {
                    return Err(format!(
                        "[{media_type} file not sent: {name} takes {}]",
                        limits.file_types.join(", ")
                    ));
                }
                data.len()
            }
            ContentPart::FileId { file_id } | ContentPart::ImageFileId { file_id } => {
                let image = matches!(part, ContentPart::ImageFileId { .. });
                match limits.file_id_prefix {
                    None => {
                        return Err(format!(
                            "[file {file_id} not sent: {name} cannot refer to files by id]"
                        ));
                    }
                    Some(_) if image && !limits.image_file_ids => {
                        return Err(format!(
                            "[image file {file_id} not sent: {name} cannot refer to images by file id]"
                        ));
                    }
                    Some(prefix) if !file_id.starts_with(prefix) => {
                        return Err(format!(
                            "[file {file_id} not sent: {name} file ids begin with \"{prefix}\"]"
                        ));
                    }
                    Some(_) => 0,
                }
            }
            ContentPart::Custom { .. } => {
                return Err(format!(
                    "[provider-specific part not sent: custom parts are not passed to {name}]"
                ));
            }
        };
        if self.inline_bytes + inline > limits.max_inline_bytes {
            return Err(format!(
                "[{} not sent: the request would carry more than {name}'s {} of inline data]",
                if is_image { "image" } else { "file" },
                megabytes(limits.max_inline_bytes)
            ));
        }
        self.inline_bytes += inline;
        if is_image {
            self.images += 1;
        }
        Ok(())
    }
}

impl Provider {
    /// The provider's name as its documentation writes it.
    fn display_name(&self) -> &'static str {
        match self {
            Provider::OpenAiChat => "OpenAI Chat Completions",
            Provider::OpenAiResponses => "OpenAI Responses",
            Provider::Anthropic => "Anthropic",
            Provider::Gemini => "Gemini",
        }
    }
}

/// `bytes` in megabytes, as the providers' limits are written.
fn megabytes(bytes: usize) -> String {
    let mb = bytes as f64 / MB as f64;
    if mb.fract() == 0.0 {
        format!("{mb:.0} MB")
    } else {
        format!("{mb:.1} MB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(bytes: usize, media_type: &str) -> ContentPart {
        ContentPart::ImageData {
            data: "A".repeat(bytes),
            media_type: media_type.into(),
        }
    }

    #[test]
    fn an_image_over_anthropics_five_megabytes_is_replaced_by_a_notice() {
        let mut budget = MediaBudget::new(Provider::Anthropic);
        assert_eq!(budget.admit(&image(5 * MB, "image/png")), Ok(()));
        assert_eq!(
            budget.admit(&image(5 * MB + MB / 2, "image/png")),
            Err("[image/png image not sent: 5.5 MB is over Anthropic's 5 MB per image]".into())
        );
        // OpenAI has no limit per image, only per request.
        let mut openai = MediaBudget::new(Provider::OpenAiResponses);
        assert_eq!(openai.admit(&image(6 * MB, "image/png")), Ok(()));
    }

    #[test]
    fn limits_per_request_count_every_part_admitted_before() {
        let mut budget = MediaBudget::new(Provider::Anthropic);
        for _ in 0..100 {
            assert_eq!(
                budget.admit(&ContentPart::image_url("https://x/a.png")),
                Ok(())
            );
        }
        assert_eq!(
            budget.admit(&ContentPart::image_url("https://x/b.png")),
            Err("[image not sent: Anthropic takes at most 100 images per request]".into())
        );
        let mut budget = MediaBudget::new(Provider::OpenAiChat);
        for _ in 0..10 {
            assert_eq!(budget.admit(&image(5 * MB, "image/jpeg")), Ok(()));
        }
        assert_eq!(
            budget.admit(&image(1, "image/jpeg")),
            Err("[image not sent: the request would carry more than OpenAI Chat Completions's 50 MB of inline data]".into())
        );
    }

    #[test]
    fn another_providers_file_id_and_custom_parts_are_never_sent() {
        let openai_file = ContentPart::FileId {
            file_id: "file-abc".into(),
        };
        let anthropic_file = ContentPart::FileId {
            file_id: "file_011abc".into(),
        };
        let mut anthropic = MediaBudget::new(Provider::Anthropic);
        assert_eq!(
            anthropic.admit(&openai_file),
            Err("[file file-abc not sent: Anthropic file ids begin with \"file_\"]".into())
        );
        assert_eq!(anthropic.admit(&anthropic_file), Ok(()));
        let mut responses = MediaBudget::new(Provider::OpenAiResponses);
        assert_eq!(responses.admit(&openai_file), Ok(()));
        assert!(responses.admit(&anthropic_file).is_err());
        let custom = ContentPart::Custom {
            fields: serde_json::Map::new(),
        };
        assert_eq!(
            responses.admit(&custom),
            Err("[provider-specific part not sent: custom parts are not passed to OpenAI Responses]".into())
        );
    }

    #[test]
    fn what_a_format_cannot_carry_at_all_is_named() {
        let mut chat = MediaBudget::new(Provider::OpenAiChat);
        assert_eq!(
            chat.admit(&ContentPart::FileUrl {
                url: "https://x/r.pdf".into()
            }),
            Err(
                "[file https://x/r.pdf not sent: OpenAI Chat Completions does not fetch file URLs]"
                    .into()
            )
        );
        let mut gemini = MediaBudget::new(Provider::Gemini);
        assert!(
            gemini
                .admit(&ContentPart::image_url("https://x/a.png"))
                .is_err()
        );
        let pdf = ContentPart::FileData {
            data: "JVBERi0=".into(),
            media_type: "application/pdf".into(),
            filename: None,
        };
        assert_eq!(gemini.admit(&pdf), Ok(()));
        let zip = ContentPart::FileData {
            data: "UEsDBA==".into(),
            media_type: "application/zip".into(),
            filename: None,
        };
        assert_eq!(
            MediaBudget::new(Provider::Anthropic).admit(&zip),
            Err("[application/zip file not sent: Anthropic takes application/pdf]".into())
        );
    }
}
