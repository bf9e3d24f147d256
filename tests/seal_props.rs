//! Property tests for `core::seal` (I6, I7): any bit flip, truncation, extension or key change is
//! rejected, and a token never carries argument or answer bytes in the clear.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use proptest::prelude::*;
use strict_mcp::core::seal::{
    open, principal_digest, request_digest, seal, KeyRing, SealKey, TOKEN_LEN,
};
use strict_mcp::machine::ledger::{ChainId, InputMethod, RequestState};
use strict_mcp::machine::{Epoch, Tick};

fn method() -> impl Strategy<Value = InputMethod> {
    prop_oneof![
        Just(InputMethod::ToolsCall),
        Just(InputMethod::ResourcesRead),
        Just(InputMethod::PromptsGet)
    ]
}

prop_compose! {
    fn request_state()(
        chain in any::<[u8; 16]>(),
        principal in proptest::collection::vec(any::<u8>(), 0..32),
        method in method(),
        target in "[a-z_]{1,12}",
        args in proptest::collection::vec(any::<u8>(), 0..64),
        round in 1u8..=10,
        expires in any::<u64>(),
        epoch in any::<u64>(),
    ) -> RequestState {
        RequestState {
            chain: ChainId(chain),
            principal: principal_digest(&principal),
            method,
            request: request_digest(method, &target, &args),
            round,
            expires: Tick(expires),
            epoch: Epoch(epoch),
        }
    }
}

fn ring(id: u32, key: [u8; 32]) -> KeyRing {
    KeyRing::new(SealKey::new(id, key))
}

const RAW_LEN: usize = 131;

proptest! {
    #[test]
    fn round_trips(state in request_state(), key in any::<[u8; 32]>(), id in any::<u32>(), nonce in any::<[u8; 12]>()) {
        let r = ring(id, key);
        let token = seal(&r, nonce, &state);
        prop_assert_eq!(token.len(), TOKEN_LEN);
        prop_assert_eq!(open(&r, &token), Ok(state));
    }

    #[test]
    fn i6_any_bit_flip_is_rejected(state in request_state(), key in any::<[u8; 32]>(), nonce in any::<[u8; 12]>(), bit in 0usize..(RAW_LEN * 8)) {
        let r = ring(7, key);
        let mut raw = URL_SAFE_NO_PAD.decode(seal(&r, nonce, &state)).unwrap();
        prop_assert_eq!(raw.len(), RAW_LEN);
        raw[bit / 8] ^= 1 << (bit % 8);
        prop_assert!(open(&r, &URL_SAFE_NO_PAD.encode(&raw)).is_err());
    }

    #[test]
    fn i6_any_truncation_or_extension_is_rejected(state in request_state(), nonce in any::<[u8; 12]>(), cut in 0usize..TOKEN_LEN, extra in "[A-Za-z0-9_-]{1,8}") {
        let r = ring(1, [5; 32]);
        let token = seal(&r, nonce, &state);
        prop_assert!(open(&r, &token[..cut]).is_err());
        let extended = format!("{token}{extra}");
        prop_assert!(open(&r, &extended).is_err());
    }

    #[test]
    fn i6_any_other_key_is_rejected(state in request_state(), a in any::<[u8; 32]>(), b in any::<[u8; 32]>(), id_a in any::<u32>(), id_b in any::<u32>()) {
        prop_assume!(a != b || id_a != id_b);
        let token = seal(&ring(id_a, a), [0; 12], &state);
        prop_assert!(open(&ring(id_b, b), &token).is_err());
    }

    #[test]
    fn arbitrary_input_never_panics_and_never_opens(s in "\\PC{0,300}") {
        prop_assert!(open(&ring(1, [1; 32]), &s).is_err());
    }

    #[test]
    fn i6_token_never_contains_argument_or_answer_bytes_in_clear(
        args in "[ -~]{12,64}",
        answer in "[ -~]{12,64}",
        nonce in any::<[u8; 12]>(),
    ) {
        let r = ring(3, [9; 32]);
        let state = RequestState {
            chain: ChainId([1; 16]),
            principal: principal_digest(b"alice"),
            method: InputMethod::ToolsCall,
            request: request_digest(InputMethod::ToolsCall, "tool", args.as_bytes()),
            round: 1,
            expires: Tick(10),
            epoch: Epoch(0),
        };
        let token = seal(&r, nonce, &state);
        let raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for secret in [args.as_bytes(), answer.as_bytes()] {
            prop_assert!(!raw.windows(secret.len()).any(|w| w == secret));
            prop_assert!(!token.contains(std::str::from_utf8(secret).unwrap()));
        }
    }
}
