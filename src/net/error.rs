//! The errors of dialing, in a leaf module below both roles: the client's HTTP transport
//! reports them inside its `HttpError::Dial`, the OAuth fetchers of either role inside their
//! own fetch errors. Re-exported from [`crate::client::http`] as before.

use std::io;
use std::net::IpAddr;
use std::time::Duration;

#[cfg(doc)]
use super::dial::DIAL_TIMEOUT;

/// Why a connection could not be opened. Never carries header values or URL credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DialError {
    /// The resolver failed.
    #[error("the host name could not be resolved: {kind}")]
    Resolve {
        /// The resolver's error kind.
        kind: io::ErrorKind,
    },
    /// The resolver answered no address.
    #[error("the host name resolved to no address")]
    NoAddress,
    /// A resolved address is one the base URL does not name; nothing was dialed.
    #[error("refused to dial {addr}: a {class} address the endpoint URL does not name")]
    Blocked {
        /// The refused address.
        addr: IpAddr,
        /// Its class.
        class: AddressClass,
    },
    /// Every allowed address refused the connection (or failed otherwise).
    #[error("could not connect: {kind}")]
    Connect {
        /// The last connection error's kind.
        kind: io::ErrorKind,
    },
    /// Resolving, connecting and the TLS handshake took longer than the dial limit.
    #[error("the connection was not established within {limit:?}")]
    Timeout {
        /// The limit that passed ([`DIAL_TIMEOUT`] unless configured).
        limit: Duration,
    },
    /// The URL's scheme is not one this build dials.
    #[error("the URL scheme is not supported by this build")]
    Scheme,
    /// The TLS handshake failed.
    #[cfg(feature = "https")]
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// What kind of destination an IP address is, for the dial check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddressClass {
    /// Global unicast: always dialable.
    Public,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918 (`10/8`, `172.16/12`, `192.168/16`) and unique-local `fc00::/7`.
    Private,
    /// Shared address space `100.64.0.0/10` (carrier-grade NAT).
    SharedCgnat,
    /// `169.254.0.0/16` (cloud metadata lives here) and `fe80::/10`.
    LinkLocal,
    /// `0.0.0.0`, `::`.
    Unspecified,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// Everything else that is not global unicast (`0/8`, `240/4`, benchmarking, protocol
    /// assignments, Teredo, IPv6 outside `2000::/3`, ...).
    Reserved,
}

/// Why the TLS layer refused a connection; never carries certificate bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[cfg(feature = "https")]
pub enum TlsError {
    /// The server's certificate chain does not verify.
    #[error("the server's certificate was rejected: {0}")]
    Certificate(CertificateFault),
    /// The handshake failed for another reason (protocol, alert, connection lost).
    #[error("the TLS handshake failed")]
    Handshake,
    /// The URL's host cannot be used as a TLS server name.
    #[error("the host is not a valid TLS server name")]
    ServerName,
    /// A custom root certificate could not be parsed as an X.509 trust anchor.
    #[error("the root certificate is not a valid DER X.509 certificate")]
    BadRootCertificate,
}

/// Why a certificate chain was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[cfg(feature = "https")]
pub enum CertificateFault {
    /// No trusted root issued the chain (a private CA that was not added, or self-signed).
    #[error("unknown issuer")]
    UnknownIssuer,
    /// The certificate does not name the URL's host.
    #[error("not valid for the host name")]
    NotValidForName,
    /// Expired.
    #[error("expired")]
    Expired,
    /// Not valid yet.
    #[error("not valid yet")]
    NotValidYet,
    /// Revoked.
    #[error("revoked")]
    Revoked,
    /// Another verification failure (bad signature, encoding, usage, ...).
    #[error("invalid certificate")]
    Invalid,
}
