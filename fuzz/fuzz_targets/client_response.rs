//! The client's response path: a body as a server would send it, decoded with the client's
//! bounds, every success result dispatched on `resultType` for every method (lenient, as the
//! client reads other servers), and the bytes canonicalised for the snapshot digest.
//! Invariants: no panic; an accepted result decodes or is a typed error; the canonical form is
//! a fixed point (canonicalising it again gives the same text) and keeps the digest.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strict_mcp::client::digest::{canonical_json, digest_text, SnapshotKind};
use strict_mcp::codec::{decode, IngressLimits};
use strict_mcp::wire::jsonrpc::{Message, Response};
use strict_mcp::wire::result::{decode_lenient, Method};

fuzz_target!(|data: &[u8]| {
    if let Ok(Message::Response(Response::Success(success))) = decode(data, &IngressLimits::CLIENT)
    {
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(success.result.get()) {
            for method in Method::ALL {
                let _ = decode_lenient(method, &value);
            }
        }
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(canonical) = canonical_json(text) {
        assert_eq!(
            canonical_json(&canonical).as_deref(),
            Ok(canonical.as_str())
        );
        for kind in [SnapshotKind::Discovery, SnapshotKind::Tools] {
            if let Ok(digest) = digest_text(kind, text) {
                assert_eq!(digest_text(kind, &canonical), Ok(digest));
            }
        }
    }
});
