//! Every named bound of the wire, each with the threat it blocks.
//!
//! Sizes count the bytes of the JSON text exactly as they appear on the wire: for stdio the
//! line without its terminating `\n`, for HTTP the body. Per-direction bundles of these numbers
//! live in [`crate::codec::IngressLimits`] and [`crate::codec::EgressLimits`].

/// One KiB, so the bounds below read as the requirements state them.
const KIB: usize = 1024;
/// One MiB, so the bounds below read as the requirements state them.
const MIB: usize = 1024 * KIB;

/// Largest request or notification frame a server accepts (2 MiB).
///
/// Threat: a client that streams an unbounded line or body to exhaust server memory. The stdio
/// framer never buffers more than this many bytes of one line; HTTP drivers stop reading the
/// body here.
pub const MAX_REQUEST_FRAME_BYTES: usize = 2 * MIB;

/// Largest JSON-RPC response a server may emit (16 MiB).
///
/// Threat: a tool result that grows without bound and stalls or crashes the client; the server
/// turns an oversized result into a bounded failure instead.
pub const MAX_RESPONSE_BYTES: usize = 16 * MIB;

/// Part of [`MAX_RESPONSE_BYTES`] held back for framing and metadata (8 KiB).
///
/// Threat: a result that just fits the ceiling and then overflows it once the envelope, the id
/// and the server identity are added. A result is preflighted against
/// `MAX_RESPONSE_BYTES - RESPONSE_RESERVE_BYTES`.
pub const RESPONSE_RESERVE_BYTES: usize = 8 * KIB;

/// Largest result payload accepted by the egress preflight: the ceiling minus the reserve.
pub const MAX_RESULT_PAYLOAD_BYTES: usize = MAX_RESPONSE_BYTES - RESPONSE_RESERVE_BYTES;

/// Largest frame a client accepts from a server: a full response plus the reserve.
///
/// Threat: a hostile server exhausting client memory with an endless response; the extra
/// reserve keeps a conforming server's largest legal response acceptable.
pub const MAX_CLIENT_INGRESS_FRAME_BYTES: usize = MAX_RESPONSE_BYTES + RESPONSE_RESERVE_BYTES;

/// Largest encoded request `id` token, quotes and escapes included (256 bytes).
///
/// Threat: ids used as a memory or log amplifier (they are stored per in-flight request and
/// echoed in every reply); also bounds integer ids, so a 400-digit id is an Invalid Request.
pub const MAX_ID_BYTES: usize = 256;

/// Largest encoded `method` token, quotes and escapes included (256 bytes).
///
/// Threat: huge method names copied into logs, metrics labels and error messages.
pub const MAX_METHOD_BYTES: usize = 256;

/// Deepest nesting of objects and arrays in one message; the top-level object is level 1.
///
/// Threat: stack exhaustion in any recursive consumer (schema validation, `Value` parsing,
/// handlers). The ingress scanner refuses a 65th level before it recurses into it.
pub const MAX_DEPTH: usize = 64;

/// Largest encoded server identity (`serverInfo`) inside the response reserve (4 KiB).
///
/// Threat: an identity that eats the reserve so that a preflighted result no longer fits.
pub const MAX_IDENTITY_BYTES: usize = 4 * KIB;

/// Largest encoded `params` of a notification, before framing (8 KiB).
///
/// Threat: notification floods (progress, log messages) that carry bulk data past the
/// request/response bounds and the result-size accounting.
pub const MAX_NOTIFICATION_PARAMS_BYTES: usize = 8 * KIB;

/// Largest total size of all protocol HTTP headers at admission (8 KiB).
///
/// Threat: header floods and oversized `Mcp-*` headers; enforced by the HTTP driver, named
/// here so every bound lives in one place.
pub const MAX_PROTOCOL_HEADER_BYTES: usize = 8 * KIB;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o36_o39_o42_bounds_have_the_required_values() {
        assert_eq!(MAX_REQUEST_FRAME_BYTES, 2_097_152);
        assert_eq!(MAX_RESPONSE_BYTES, 16_777_216);
        assert_eq!(RESPONSE_RESERVE_BYTES, 8_192);
        assert_eq!(MAX_RESULT_PAYLOAD_BYTES, 16_769_024);
        assert_eq!(MAX_CLIENT_INGRESS_FRAME_BYTES, 16_785_408);
        assert_eq!(MAX_ID_BYTES, 256);
        assert_eq!(MAX_METHOD_BYTES, 256);
        assert_eq!(MAX_DEPTH, 64);
        assert_eq!(MAX_IDENTITY_BYTES, 4_096);
        assert_eq!(MAX_NOTIFICATION_PARAMS_BYTES, 8_192);
        assert_eq!(MAX_PROTOCOL_HEADER_BYTES, 8_192);
    }
}
