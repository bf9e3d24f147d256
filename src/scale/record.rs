//! The compact binary form of a [`Chain`] kept in a shared store.
//!
//! Fixed-width big-endian fields, length-prefixed byte strings, a leading format version. The
//! encoding is canonical (one chain, one byte string), which is what lets the store compare the
//! stored bytes with the caller's expected chain instead of decoding inside the script.

use crate::machine::ledger::{
    Binding, Chain, ChainId, ChainRecord, InputMethod, LedgerConfig, Phase, MAX_ROUNDS,
};
use crate::machine::{Digest, Epoch, Tick};

/// Largest encoded chain a store accepts. A chain holds its latest prompt and up to ten exact
/// answers; one mebibyte keeps a runaway handler or client from filling the shared store while
/// leaving room for ordinary elicitation payloads.
pub const MAX_RECORD_BYTES: usize = 1024 * 1024;

/// Format version written first; a reader refuses any other.
const VERSION: u8 = 1;

/// Why a record could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordCodecError {
    /// The encoded chain would exceed [`MAX_RECORD_BYTES`].
    #[error("chain record of {0} bytes exceeds the bound")]
    TooLarge(usize),
    /// The bytes are not a record this version wrote.
    #[error("malformed chain record: {0}")]
    Malformed(&'static str),
}

/// Encodes `chain`; refuses records over [`MAX_RECORD_BYTES`].
pub fn encode_chain(chain: &Chain) -> Result<Vec<u8>, RecordCodecError> {
    let r = chain.to_record();
    let size = encoded_len(&r);
    if size > MAX_RECORD_BYTES {
        return Err(RecordCodecError::TooLarge(size));
    }
    let mut out = Vec::with_capacity(size);
    out.push(VERSION);
    out.extend_from_slice(&r.id.0);
    out.extend_from_slice(&r.binding.principal.0);
    out.push(r.binding.method.code());
    out.extend_from_slice(&r.binding.request.0);
    out.extend_from_slice(&r.epoch.0.to_be_bytes());
    out.extend_from_slice(&r.config.state_ttl_ms.to_be_bytes());
    match r.phase {
        Phase::Running { round } => out.extend_from_slice(&[0, round]),
        Phase::AwaitingAnswer { round, expires } => {
            out.extend_from_slice(&[1, round]);
            out.extend_from_slice(&expires.0.to_be_bytes());
        }
        Phase::Completed => out.push(2),
        Phase::Failed => out.push(3),
        Phase::Expired => out.push(4),
        Phase::Invalidated { running } => out.extend_from_slice(&[5, u8::from(running)]),
    }
    out.push(r.issued);
    out.extend_from_slice(&r.last_expires.0.to_be_bytes());
    put_bytes(&mut out, &r.prompt);
    // `from_record` bounds answers by `issued <= MAX_ROUNDS`, so the count fits a byte.
    out.push(u8::try_from(r.answers.len()).unwrap_or(u8::MAX));
    for a in &r.answers {
        put_bytes(&mut out, a);
    }
    debug_assert_eq!(out.len(), size);
    Ok(out)
}

/// Decodes what [`encode_chain`] wrote; every inconsistency is a typed error.
pub fn decode_chain(bytes: &[u8]) -> Result<Chain, RecordCodecError> {
    if bytes.len() > MAX_RECORD_BYTES {
        return Err(RecordCodecError::TooLarge(bytes.len()));
    }
    let mut r = Reader(bytes);
    if r.u8()? != VERSION {
        return Err(RecordCodecError::Malformed("unknown format version"));
    }
    let id = ChainId(r.array()?);
    let principal = Digest(r.array()?);
    let method = InputMethod::from_code(r.u8()?).ok_or(RecordCodecError::Malformed("method"))?;
    let request = Digest(r.array()?);
    let epoch = Epoch(r.u64()?);
    let config = LedgerConfig::with_ttl(r.u64()?);
    let phase = match r.u8()? {
        0 => Phase::Running { round: r.u8()? },
        1 => Phase::AwaitingAnswer {
            round: r.u8()?,
            expires: Tick(r.u64()?),
        },
        2 => Phase::Completed,
        3 => Phase::Failed,
        4 => Phase::Expired,
        5 => Phase::Invalidated {
            running: match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(RecordCodecError::Malformed("running flag")),
            },
        },
        _ => return Err(RecordCodecError::Malformed("phase")),
    };
    let issued = r.u8()?;
    let last_expires = Tick(r.u64()?);
    let prompt = r.bytes()?;
    let count = r.u8()?;
    if count > MAX_ROUNDS {
        return Err(RecordCodecError::Malformed("answer count"));
    }
    let mut answers = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        answers.push(r.bytes()?);
    }
    if !r.0.is_empty() {
        return Err(RecordCodecError::Malformed("trailing bytes"));
    }
    Chain::from_record(ChainRecord {
        id,
        binding: Binding {
            principal,
            method,
            request,
        },
        epoch,
        config,
        phase,
        issued,
        prompt,
        answers,
        last_expires,
    })
    .map_err(|e| RecordCodecError::Malformed(e.0))
}

/// Fixed part: version, id, principal, method, request, epoch, ttl, phase (up to 10 bytes),
/// issued, last expiry, prompt length, answer count.
fn encoded_len(r: &ChainRecord) -> usize {
    let phase = match r.phase {
        Phase::Running { .. } | Phase::Invalidated { .. } => 2,
        Phase::AwaitingAnswer { .. } => 10,
        _ => 1,
    };
    1 + 16
        + 32
        + 1
        + 32
        + 8
        + 8
        + phase
        + 1
        + 8
        + 4
        + r.prompt.len()
        + 1
        + r.answers.iter().map(|a| 4 + a.len()).sum::<usize>()
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    // Callers checked the total against MAX_RECORD_BYTES, far below u32::MAX.
    out.extend_from_slice(&u32::try_from(b.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(b);
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], RecordCodecError> {
        if self.0.len() < n {
            return Err(RecordCodecError::Malformed("truncated"));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, RecordCodecError> {
        Ok(self.take(1)?[0])
    }
    fn u64(&mut self) -> Result<u64, RecordCodecError> {
        Ok(u64::from_be_bytes(self.array()?))
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], RecordCodecError> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn bytes(&mut self) -> Result<Vec<u8>, RecordCodecError> {
        let len = u32::from_be_bytes(self.array()?) as usize;
        Ok(self.take(len)?.to_vec())
    }
}
