//! The extension registry: callers plug in their own types for extension
//! payloads; everything else stays lossless and inert.
//!
//! - The server's `capabilities.extensions` from discovery is kept as [`Declarations`]: each
//!   entry's JSON exactly as received (byte-exact, wire order), whether or not anything is
//!   registered for it.
//! - An [`ExtensionRegistry`] maps an extension identifier to an [`ExtensionCodec`]; a codec
//!   turns a payload (a declaration, a result `_meta` value or field) into the caller's type.
//!   [`SerdeCodec`] is the codec for any `serde` type.
//! - Registering never advertises: the registry is never consulted when a request is written
//!   (a client declares an extension per call, in [`crate::client::CallOptions::capabilities`],
//!   and only there). Unknown declarations do nothing.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::{DeserializeOwned, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::wire::meta::MetaKey;

/// The most codecs one registry holds: a registry is configuration, not data.
pub const MAX_EXTENSION_CODECS: usize = 64;

/// Turns one extension payload into the caller's type.
pub trait ExtensionCodec: Send + Sync + 'static {
    /// The typed payload.
    type Payload;

    /// Decodes `raw`, exactly the JSON the server sent.
    ///
    /// # Errors
    /// Why the payload does not fit the type.
    fn decode(&self, raw: &RawValue) -> Result<Self::Payload, String>;
}

/// The codec for any type `serde` can read.
pub struct SerdeCodec<T>(PhantomData<fn() -> T>);

impl<T> SerdeCodec<T> {
    /// The codec.
    #[must_use]
    pub fn new() -> Self {
        SerdeCodec(PhantomData)
    }
}

impl<T> Default for SerdeCodec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for SerdeCodec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SerdeCodec")
    }
}

impl<T: DeserializeOwned + 'static> ExtensionCodec for SerdeCodec<T> {
    type Payload = T;

    fn decode(&self, raw: &RawValue) -> Result<T, String> {
        serde_json::from_str(raw.get()).map_err(|e| e.to_string())
    }
}

/// Why an extension could not be registered or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtensionError {
    /// The identifier is not a prefixed `_meta`-style key.
    #[error("extension identifier {id:?} is not a prefixed key: {reason}")]
    InvalidId {
        /// The identifier.
        id: String,
        /// Why.
        reason: String,
    },
    /// A codec is already registered for this identifier.
    #[error("a codec is already registered for extension {0:?}")]
    Duplicate(String),
    /// More than [`MAX_EXTENSION_CODECS`] codecs.
    #[error("more than {limit} extension codecs")]
    TooMany {
        /// The bound.
        limit: usize,
    },
    /// The codec registered for this identifier has another type than the one asked for.
    #[error("the codec registered for extension {0:?} has another payload type")]
    WrongCodec(String),
    /// The codec refused the payload.
    #[error("extension {id:?} payload does not decode: {reason}")]
    Decode {
        /// The identifier.
        id: String,
        /// The codec's reason.
        reason: String,
    },
}

/// Extension identifier → codec. Cheap to clone; clones share the codecs.
#[derive(Clone, Default)]
pub struct ExtensionRegistry {
    codecs: HashMap<String, Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for ExtensionRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ids: Vec<&String> = self.codecs.keys().collect();
        ids.sort();
        f.debug_struct("ExtensionRegistry")
            .field("ids", &ids)
            .finish()
    }
}

impl ExtensionRegistry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `codec` for `id`. Advertises nothing.
    ///
    /// # Errors
    /// [`ExtensionError::InvalidId`] for an identifier without a valid prefix,
    /// [`ExtensionError::Duplicate`], [`ExtensionError::TooMany`].
    pub fn register<C: ExtensionCodec>(
        &mut self,
        id: &str,
        codec: C,
    ) -> Result<&mut Self, ExtensionError> {
        let invalid = |reason: String| ExtensionError::InvalidId {
            id: id.to_owned(),
            reason,
        };
        let key = MetaKey::parse(id).map_err(|e| invalid(e.to_string()))?;
        if key.prefix().is_none() {
            return Err(invalid("it has no prefix".to_owned()));
        }
        if self.codecs.contains_key(id) {
            return Err(ExtensionError::Duplicate(id.to_owned()));
        }
        if self.codecs.len() == MAX_EXTENSION_CODECS {
            return Err(ExtensionError::TooMany {
                limit: MAX_EXTENSION_CODECS,
            });
        }
        let codec: Arc<C> = Arc::new(codec);
        self.codecs.insert(id.to_owned(), codec);
        Ok(self)
    }

    /// Whether a codec is registered for `id`.
    #[must_use]
    pub fn contains(&self, id: &str) -> bool {
        self.codecs.contains_key(id)
    }

    /// Decodes `raw` with the codec `C` registered for `id`; `Ok(None)` when nothing is
    /// registered for it (the payload stays raw and inert).
    ///
    /// # Errors
    /// [`ExtensionError::WrongCodec`] when `id`'s codec is not a `C`,
    /// [`ExtensionError::Decode`] when the codec refuses the payload.
    pub fn decode<C: ExtensionCodec>(
        &self,
        id: &str,
        raw: &RawValue,
    ) -> Result<Option<C::Payload>, ExtensionError> {
        let Some(codec) = self.codecs.get(id) else {
            return Ok(None);
        };
        let codec = Arc::clone(codec)
            .downcast::<C>()
            .map_err(|_| ExtensionError::WrongCodec(id.to_owned()))?;
        codec
            .decode(raw)
            .map(Some)
            .map_err(|reason| ExtensionError::Decode {
                id: id.to_owned(),
                reason,
            })
    }
}

/// Extension declarations exactly as received: identifier and JSON text, in wire order.
#[derive(Debug, Clone, Default)]
pub struct Declarations(Vec<(String, Box<RawValue>)>);

impl PartialEq for Declarations {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|((a, x), (b, y))| a == b && x.get() == y.get())
    }
}

impl Declarations {
    /// The declaration of `id`, byte-exact.
    #[must_use]
    pub fn get(&self, id: &str) -> Option<&RawValue> {
        self.0
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, v)| v.as_ref())
    }

    /// Every identifier, in wire order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    /// How many extensions were declared.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none was.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The declaration of `id` decoded by its codec in `registry`: `Ok(None)` when `id` was
    /// not declared or nothing is registered for it.
    ///
    /// # Errors
    /// As [`ExtensionRegistry::decode`].
    pub fn decode<C: ExtensionCodec>(
        &self,
        registry: &ExtensionRegistry,
        id: &str,
    ) -> Result<Option<C::Payload>, ExtensionError> {
        match self.get(id) {
            Some(raw) => registry.decode::<C>(id, raw),
            None => Ok(None),
        }
    }

    /// Reads `capabilities.extensions` out of a discovery result's exact text.
    pub(crate) fn from_discovery(result: &str) -> Declarations {
        #[derive(Deserialize)]
        struct Discover<'a> {
            #[serde(borrow)]
            capabilities: Option<&'a RawValue>,
        }
        #[derive(Deserialize)]
        struct Capabilities {
            extensions: Option<Declarations>,
        }
        serde_json::from_str::<Discover<'_>>(result)
            .ok()
            .and_then(|r| r.capabilities)
            .and_then(|c| serde_json::from_str::<Capabilities>(c.get()).ok())
            .and_then(|c| c.extensions)
            .unwrap_or_default()
    }
}

impl<'de> Deserialize<'de> for Declarations {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Ordered;
        impl<'de> Visitor<'de> for Ordered {
            type Value = Declarations;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of extension declarations")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Declarations, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                    out.push((k, v));
                }
                Ok(Declarations(out))
            }
        }
        d.deserialize_map(Ordered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Ui {
        #[serde(rename = "mimeTypes")]
        mime_types: Vec<String>,
    }

    #[test]
    fn o76_declarations_keep_exact_text_and_order_and_decode_only_when_registered() {
        let text = r#"{"resultType":"complete","capabilities":{"extensions":{"z.example/b":{"n":1.50,"big":123456789012345678901234567890},"io.modelcontextprotocol/ui":{"mimeTypes":["text/html"]}}}}"#;
        let d = Declarations::from_discovery(text);
        assert_eq!(
            d.ids().collect::<Vec<_>>(),
            vec!["z.example/b", "io.modelcontextprotocol/ui"]
        );
        assert_eq!(
            d.get("z.example/b").unwrap().get(),
            r#"{"n":1.50,"big":123456789012345678901234567890}"#
        );
        let mut registry = ExtensionRegistry::new();
        assert_eq!(
            d.decode::<SerdeCodec<Ui>>(&registry, "io.modelcontextprotocol/ui"),
            Ok(None)
        );
        registry
            .register("io.modelcontextprotocol/ui", SerdeCodec::<Ui>::new())
            .unwrap();
        assert_eq!(
            d.decode::<SerdeCodec<Ui>>(&registry, "io.modelcontextprotocol/ui"),
            Ok(Some(Ui {
                mime_types: vec!["text/html".into()]
            }))
        );
        assert_eq!(
            d.decode::<SerdeCodec<String>>(&registry, "io.modelcontextprotocol/ui"),
            Err(ExtensionError::WrongCodec(
                "io.modelcontextprotocol/ui".into()
            ))
        );
        registry
            .register("z.example/b", SerdeCodec::<Ui>::new())
            .unwrap();
        assert!(matches!(
            d.decode::<SerdeCodec<Ui>>(&registry, "z.example/b"),
            Err(ExtensionError::Decode { .. })
        ));
        assert_eq!(
            d.decode::<SerdeCodec<Ui>>(&registry, "a.b/absent"),
            Ok(None)
        );
    }

    #[test]
    fn b19_ids_need_a_valid_prefix_and_register_once() {
        let mut r = ExtensionRegistry::new();
        for bad in ["ui", "-x.com/ui", "a..b/ui"] {
            assert!(
                matches!(
                    r.register(bad, SerdeCodec::<u8>::new()),
                    Err(ExtensionError::InvalidId { .. })
                ),
                "{bad}"
            );
        }
        r.register("com.example/a", SerdeCodec::<u8>::new())
            .unwrap();
        assert_eq!(
            r.register("com.example/a", SerdeCodec::<u8>::new())
                .map(|_| ()),
            Err(ExtensionError::Duplicate("com.example/a".into()))
        );
    }

    #[test]
    fn o76_codec_count_at_the_bound_and_one_past() {
        let mut r = ExtensionRegistry::new();
        for i in 0..MAX_EXTENSION_CODECS {
            r.register(&format!("com.example/e{i}"), SerdeCodec::<u8>::new())
                .unwrap();
        }
        assert_eq!(
            r.register("com.example/one-more", SerdeCodec::<u8>::new())
                .map(|_| ()),
            Err(ExtensionError::TooMany {
                limit: MAX_EXTENSION_CODECS
            })
        );
    }
}
