//! HTTPS for every outbound connection (the client's HTTP transport and the [`super::fetch`]
//! fetcher both roles' OAuth code uses) through rustls (feature `https`).
//!
//! - **Crypto provider: `ring`.** It needs only a C compiler to build (aws-lc-rs needs cmake
//!   and builds far slower) and covers every suite rustls' safe defaults use. The provider is
//!   passed explicitly, so the process-wide default provider is never consulted or installed.
//! - **Roots: the bundled Mozilla set (`webpki-roots`).** Trust is the same on every host and
//!   in minimal containers without a CA bundle, and never changes under a running binary. A
//!   server behind a private CA is trusted by adding that CA
//!   (`HttpTransport::add_root_certificate`, [`super::fetch::SafeFetcher::add_root_certificate`]),
//!   or exclusively with `HttpTransport::only_custom_roots`.
//! - TLS 1.2 and 1.3 (rustls' safe defaults), ALPN `http/1.1`, SNI from the URL's host; an IP
//!   literal host is verified against the certificate's IP addresses.
#![forbid(unsafe_code)]

use std::sync::Arc;

use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, CertificateError, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

pub use super::error::{CertificateFault, TlsError};

/// The roots the client trusts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Roots {
    /// Leave out the bundled Mozilla roots.
    pub(crate) only_custom: bool,
    /// DER certificates added by the caller.
    pub(crate) custom: Vec<CertificateDer<'static>>,
}

/// The client configuration for `roots` with the ring provider.
pub(crate) fn config(roots: &Roots) -> Result<Arc<ClientConfig>, TlsError> {
    let mut store = RootCertStore::empty();
    if !roots.only_custom {
        store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    for der in &roots.custom {
        store
            .add(der.clone())
            .map_err(|_| TlsError::BadRootCertificate)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|_| TlsError::Handshake)?
        .with_root_certificates(store)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Runs the handshake over a checked TCP connection.
pub(crate) async fn handshake(
    config: &Arc<ClientConfig>,
    host: &str,
    tcp: TcpStream,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, TlsError> {
    let name = ServerName::try_from(host.to_owned()).map_err(|_| TlsError::ServerName)?;
    TlsConnector::from(Arc::clone(config))
        .connect(name, tcp)
        .await
        .map_err(|e| {
            let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
            match inner {
                Some(rustls::Error::InvalidCertificate(c)) => TlsError::Certificate(fault(c)),
                _ => TlsError::Handshake,
            }
        })
}

fn fault(c: &CertificateError) -> CertificateFault {
    match c {
        CertificateError::UnknownIssuer => CertificateFault::UnknownIssuer,
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            CertificateFault::NotValidForName
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            CertificateFault::Expired
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            CertificateFault::NotValidYet
        }
        CertificateError::Revoked => CertificateFault::Revoked,
        _ => CertificateFault::Invalid,
    }
}
