//! Capturing what the process-wide `tracing` subscriber writes, for the tests that install
//! one. Each such test file is its own binary: tracing caches call-site interest
//! process-wide, so only a global subscriber sees every call site. `cli` brings
//! `tracing-subscriber`.
#![allow(dead_code)]

use std::sync::{Arc, Mutex, PoisonError};

/// What the subscriber wrote, shared with the test.
#[derive(Clone, Default)]
pub struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogBuffer {
    /// Everything written so far (the subscriber writes UTF-8).
    pub fn text(&self) -> String {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        String::from_utf8(bytes).expect("the subscriber writes UTF-8")
    }
}

/// What each line carries besides the level, the fields and the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Time and target too (the fmt subscriber's default).
    Full,
    /// Neither time nor target: lines a test can compare whole.
    Bare,
}

/// Installs the process-wide fmt subscriber, recording up to `level` without colours into
/// the returned buffer. Once per test binary: a second call panics.
pub fn capture(level: tracing::Level, layout: Layout) -> LogBuffer {
    let logs = LogBuffer::default();
    let writer = logs.clone();
    let builder = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(move || writer.clone());
    let installed = match layout {
        Layout::Full => tracing::subscriber::set_global_default(builder.finish()),
        Layout::Bare => tracing::subscriber::set_global_default(
            builder.without_time().with_target(false).finish(),
        ),
    };
    installed.expect("the only global subscriber of this test binary");
    logs
}
