//! SSRF-safe dialing: every new connection resolves the host through a [`Resolve`],
//! checks **every** resolved address against the [`AddressPolicy`], and only then connects
//! through a [`Connect`]. Both are injectable, so tests (and hosts with their own DNS or
//! tunnels) replace them; nothing reaches a socket without passing the check.
//!
//! # The rule
//!
//! A public (global unicast) address is always allowed. A special address — loopback,
//! private (RFC 1918, `fc00::/7`), shared CGNAT (`100.64.0.0/10`), link-local (`169.254.0.0/16`,
//! `fe80::/10`), unspecified, multicast, broadcast, documentation, other reserved ranges — is
//! dialed only when **the base URL itself names it**:
//!
//! - the base URL's host is an IP literal (`http://127.0.0.1:8080/mcp`, `http://[::1]/mcp`):
//!   exactly that address is allowed, since no name resolution is involved;
//! - the base URL's host is `localhost` or ends in `.localhost` (RFC 6761): loopback addresses
//!   are allowed, and only loopback among the special ranges.
//!
//! Any other name must resolve to public addresses only — we do **not** trust what a name
//! resolved to on its first dial, because that is exactly what DNS rebinding controls.
//! [`AddressPolicy::allow_private_networks`] opts a deployment on an intranet into private
//! and CGNAT addresses (never loopback, link-local or the rest). A name whose answers mix
//! allowed and refused addresses is refused as a whole (a mixed answer is a rebinding signal).
//!
//! The check runs at every dial, so a pooled connection never hides a changed answer, and
//! redirects (same origin only) dial through the same check.
#![forbid(unsafe_code)]

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::BoxFuture;

pub use super::error::{AddressClass, DialError};

/// Most resolved addresses one dial considers; the rest of an answer is ignored.
///
/// Threat: a resolver answering thousands of addresses, each tried in turn, holding the
/// request far longer than one connection attempt should take.
pub const MAX_DIAL_ADDRESSES: usize = 16;

/// How long one new connection may take to resolve, connect and finish its TLS handshake. A
/// silent peer must not hold a send until the request deadline, and a bare HTTP transport
/// used without a client has no deadline at all; ten seconds covers a slow handshake across
/// continents while still failing well before the default request deadline.
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(10);

/// Resolves a host name to socket addresses (the port is the URL's).
///
/// Implement it to use your own DNS, or in tests to answer without a network. The transport
/// never calls it for an IP literal.
pub trait Resolve: Send + Sync + 'static {
    /// The addresses `host` resolves to; each is checked before any is dialed.
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>>;
}

/// Opens a TCP connection to one checked address.
///
/// Implement it to tunnel (for instance through a proxy you choose) or, in tests, to record
/// the dials; it only ever receives addresses the [`AddressPolicy`] allowed.
pub trait Connect: Send + Sync + 'static {
    /// Connects to `addr`.
    fn connect(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>>;
}

/// The operating system's resolver (`getaddrinfo` on Tokio's blocking pool).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host, port))
                .await?
                .take(MAX_DIAL_ADDRESSES + 1)
                .collect())
        })
    }
}

/// Plain `TcpStream::connect` with `TCP_NODELAY` (small JSON-RPC messages).
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpConnect;

impl Connect for TcpConnect {
    fn connect(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>> {
        Box::pin(async move {
            let stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            Ok(stream)
        })
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddressClass::Public => "public",
            AddressClass::Loopback => "loopback",
            AddressClass::Private => "private",
            AddressClass::SharedCgnat => "shared (CGNAT)",
            AddressClass::LinkLocal => "link-local",
            AddressClass::Unspecified => "unspecified",
            AddressClass::Multicast => "multicast",
            AddressClass::Broadcast => "broadcast",
            AddressClass::Documentation => "documentation",
            AddressClass::Reserved => "reserved",
        })
    }
}

/// The class of `ip`; IPv4-mapped, NAT64 and 6to4 IPv6 addresses take their IPv4 class.
#[must_use]
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, _] = ip.octets();
    match (a, b, c) {
        _ if ip.is_unspecified() => AddressClass::Unspecified,
        _ if ip.is_broadcast() => AddressClass::Broadcast,
        (127, _, _) => AddressClass::Loopback,
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => AddressClass::Private,
        (100, 64..=127, _) => AddressClass::SharedCgnat,
        (169, 254, _) => AddressClass::LinkLocal,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => AddressClass::Documentation,
        (224..=239, _, _) => AddressClass::Multicast,
        (0, _, _) | (240..=255, _, _) | (192, 0, 0) | (192, 88, 99) | (198, 18..=19, _) => {
            AddressClass::Reserved
        }
        _ => AddressClass::Public,
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        classify_v4(Ipv4Addr::new(a, b, c, d))
    };
    if ip.is_unspecified() {
        return AddressClass::Unspecified;
    }
    if ip.is_loopback() {
        return AddressClass::Loopback;
    }
    match s {
        // IPv4-mapped ::ffff:a.b.c.d and NAT64 64:ff9b::a.b.c.d reach the IPv4 address.
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => embedded(hi, lo),
        // 6to4 2002:a.b.c.d::/48 also reaches its IPv4 address.
        [0x2002, hi, lo, ..] => embedded(hi, lo),
        [0x2001, 0x0db8, ..] => AddressClass::Documentation,
        [0x3fff, seg, ..] if seg < 0x1000 => AddressClass::Documentation,
        [seg, ..] if seg & 0xfe00 == 0xfc00 => AddressClass::Private,
        [seg, ..] if seg & 0xffc0 == 0xfe80 => AddressClass::LinkLocal,
        [seg, ..] if seg & 0xff00 == 0xff00 => AddressClass::Multicast,
        // Teredo and the other IETF protocol assignments in 2001::/23.
        [0x2001, seg, ..] if seg < 0x0200 => AddressClass::Reserved,
        [seg, ..] if seg & 0xe000 == 0x2000 => AddressClass::Public,
        _ => AddressClass::Reserved,
    }
}

/// What the base URL's host allows beyond public addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Named {
    /// An IP literal: exactly this address.
    Literal(IpAddr),
    /// `localhost` / `*.localhost`: loopback.
    Localhost,
    /// Any other name: public only.
    Name,
}

/// Which addresses a dial may reach, fixed from the base URL (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressPolicy {
    host: String,
    named: Named,
    private_networks: bool,
}

impl AddressPolicy {
    /// The policy for a base URL whose host is `host` (as in the URL, IPv6 in brackets).
    #[must_use]
    pub fn for_host(host: &str) -> AddressPolicy {
        let bare = bare_host(host).to_ascii_lowercase();
        let named = if let Ok(ip) = bare.parse::<IpAddr>() {
            Named::Literal(ip)
        } else {
            let name = bare.strip_suffix('.').unwrap_or(&bare);
            if name == "localhost" || name.ends_with(".localhost") {
                Named::Localhost
            } else {
                Named::Name
            }
        };
        AddressPolicy {
            host: bare,
            named,
            private_networks: false,
        }
    }

    /// Also allows private (RFC 1918, `fc00::/7`) and shared CGNAT addresses for any name:
    /// for deployments on an intranet. Loopback, link-local and the rest stay refused.
    #[must_use]
    pub fn allow_private_networks(mut self) -> AddressPolicy {
        self.private_networks = true;
        self
    }

    /// Whether a dial to `host` (the URL's host) may reach `ip`. A host other than the base
    /// URL's (never the case with same-origin redirects) gets the plain-name rule.
    #[must_use]
    pub fn permits(&self, host: &str, ip: IpAddr) -> bool {
        let class = classify(ip);
        let own = bare_host(host).eq_ignore_ascii_case(&self.host);
        match class {
            AddressClass::Public => true,
            _ if own && self.named == Named::Literal(ip) => true,
            AddressClass::Loopback => own && self.named == Named::Localhost,
            AddressClass::Private | AddressClass::SharedCgnat => self.private_networks,
            _ => false,
        }
    }
}

fn bare_host(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// What one dial needs: the policy and the injectable seams.
#[derive(Clone)]
pub(crate) struct DialSettings {
    pub(crate) policy: AddressPolicy,
    pub(crate) resolver: Arc<dyn Resolve>,
    pub(crate) connector: Arc<dyn Connect>,
    /// The bound on one whole dial ([`DIAL_TIMEOUT`] by default).
    pub(crate) timeout: Duration,
    #[cfg(feature = "https")]
    pub(crate) tls: Arc<tokio_rustls::rustls::ClientConfig>,
}

impl DialSettings {
    /// [`DialSettings::dial`] bounded by the dial limit.
    pub(crate) async fn dial_within(&self, uri: &Uri) -> Result<Stream, DialError> {
        tokio::time::timeout(self.timeout, self.dial(uri))
            .await
            .map_err(|_| DialError::Timeout {
                limit: self.timeout,
            })?
    }

    /// Resolves, checks every address, then connects to the first that answers.
    async fn dial(&self, uri: &Uri) -> Result<Stream, DialError> {
        let tls = match uri.scheme_str() {
            Some("http") => false,
            #[cfg(feature = "https")]
            Some("https") => true,
            _ => return Err(DialError::Scheme),
        };
        let host = uri.host().ok_or(DialError::NoAddress)?;
        let bare = bare_host(host);
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let mut addrs = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => self
                .resolver
                .resolve(bare, port)
                .await
                .map_err(|e| DialError::Resolve { kind: e.kind() })?,
        };
        addrs.truncate(MAX_DIAL_ADDRESSES);
        if addrs.is_empty() {
            return Err(DialError::NoAddress);
        }
        if let Some(bad) = addrs.iter().find(|a| !self.policy.permits(host, a.ip())) {
            return Err(DialError::Blocked {
                addr: bad.ip(),
                class: classify(bad.ip()),
            });
        }
        let mut last = io::ErrorKind::NotFound;
        for addr in addrs {
            // The port is always the URL's, whatever the resolver answered.
            let addr = SocketAddr::new(addr.ip(), port);
            match self.connector.connect(addr).await {
                Ok(tcp) => return self.wrap(tcp, bare, tls).await,
                Err(e) => last = e.kind(),
            }
        }
        Err(DialError::Connect { kind: last })
    }

    #[cfg(feature = "https")]
    async fn wrap(&self, tcp: TcpStream, host: &str, tls: bool) -> Result<Stream, DialError> {
        if !tls {
            return Ok(Stream::Plain(TokioIo::new(tcp)));
        }
        let stream = super::tls::handshake(&self.tls, host, tcp).await?;
        Ok(Stream::Tls(Box::new(TokioIo::new(stream))))
    }

    #[cfg(not(feature = "https"))]
    async fn wrap(&self, tcp: TcpStream, _host: &str, _tls: bool) -> Result<Stream, DialError> {
        Ok(Stream::Plain(TokioIo::new(tcp)))
    }
}

/// The connector the pooled hyper client (the client's HTTP transport) calls for each new
/// connection.
#[cfg(feature = "client")]
#[derive(Clone)]
pub(crate) struct Dialer(pub(crate) Arc<DialSettings>);

#[cfg(feature = "client")]
impl tower::Service<Uri> for Dialer {
    type Response = Stream;
    type Error = DialError;
    type Future = BoxFuture<'static, Result<Stream, DialError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), DialError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let settings = Arc::clone(&self.0);
        Box::pin(async move { settings.dial_within(&uri).await })
    }
}

/// One connection, plain or TLS.
pub(crate) enum Stream {
    Plain(TokioIo<TcpStream>),
    #[cfg(feature = "https")]
    Tls(Box<TokioIo<tokio_rustls::client::TlsStream<TcpStream>>>),
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match $self.get_mut() {
            Stream::Plain($s) => $e,
            #[cfg(feature = "https")]
            Stream::Tls($s) => {
                let $s = &mut **$s;
                $e
            }
        }
    };
}

impl hyper::rt::Read for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        each!(self, s => Pin::new(s).poll_read(cx, buf))
    }
}

impl hyper::rt::Write for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each!(self, s => Pin::new(s).poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => Pin::new(s).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => Pin::new(s).poll_shutdown(cx))
    }
}

/// The [`DialError`] inside a hyper client error, if the dial failed.
#[cfg(feature = "client")]
pub(crate) fn dial_error(e: &(dyn std::error::Error + 'static)) -> Option<DialError> {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(d) = err.downcast_ref::<DialError>() {
            return Some(d.clone());
        }
        next = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> AddressClass {
        classify(s.parse().expect("ip"))
    }

    #[test]
    fn d47_ipv4_ranges_at_their_edges() {
        use AddressClass::*;
        for (ip, class) in [
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", Reserved),
            ("9.255.255.255", Public),
            ("10.0.0.0", Private),
            ("10.255.255.255", Private),
            ("11.0.0.0", Public),
            ("100.63.255.255", Public),
            ("100.64.0.0", SharedCgnat),
            ("100.127.255.255", SharedCgnat),
            ("100.128.0.0", Public),
            ("126.255.255.255", Public),
            ("127.0.0.1", Loopback),
            ("127.255.255.255", Loopback),
            ("169.253.255.255", Public),
            ("169.254.169.254", LinkLocal),
            ("169.255.0.0", Public),
            ("172.15.255.255", Public),
            ("172.16.0.0", Private),
            ("172.31.255.255", Private),
            ("172.32.0.0", Public),
            ("192.0.0.1", Reserved),
            ("192.0.2.1", Documentation),
            ("192.88.99.1", Reserved),
            ("192.167.255.255", Public),
            ("192.168.0.1", Private),
            ("192.169.0.0", Public),
            ("198.17.255.255", Public),
            ("198.18.0.0", Reserved),
            ("198.19.255.255", Reserved),
            ("198.20.0.0", Public),
            ("198.51.100.7", Documentation),
            ("203.0.113.7", Documentation),
            ("223.255.255.255", Public),
            ("224.0.0.1", Multicast),
            ("239.255.255.255", Multicast),
            ("240.0.0.0", Reserved),
            ("255.255.255.254", Reserved),
            ("255.255.255.255", Broadcast),
            ("8.8.8.8", Public),
        ] {
            assert_eq!(v4(ip), class, "{ip}");
        }
    }

    #[test]
    fn d47_ipv6_ranges_and_embedded_ipv4() {
        use AddressClass::*;
        for (ip, class) in [
            ("::", Unspecified),
            ("::1", Loopback),
            ("::2", Reserved),
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:169.254.169.254", LinkLocal),
            ("::ffff:8.8.8.8", Public),
            ("64:ff9b::a9fe:a9fe", LinkLocal),
            ("2002:a9fe:a9fe::1", LinkLocal),
            ("2002:0808:0808::1", Public),
            ("1fff:ffff::1", Reserved),
            ("2000::1", Public),
            ("2001::1", Reserved),
            ("2001:1ff::1", Reserved),
            ("2001:200::1", Public),
            ("2001:db8::1", Documentation),
            ("2606:4700::1111", Public),
            ("3ffe:ffff::1", Public),
            ("3fff::1", Documentation),
            ("3fff:fff::1", Documentation),
            ("3fff:1000::1", Public),
            ("4000::1", Reserved),
            ("fbff::1", Reserved),
            ("fc00::1", Private),
            ("fdff:ffff::1", Private),
            ("fe00::1", Reserved),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("fec0::1", Reserved),
            ("ff02::1", Multicast),
        ] {
            assert_eq!(v4(ip), class, "{ip}");
        }
    }

    #[test]
    fn d47_policy_literal_localhost_and_names() {
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        let literal = AddressPolicy::for_host("127.0.0.1");
        assert!(literal.permits("127.0.0.1", ip("127.0.0.1")));
        assert!(!literal.permits("127.0.0.1", ip("127.0.0.2")));
        assert!(!literal.permits("other.test", ip("127.0.0.1")));
        let v6 = AddressPolicy::for_host("[::1]");
        assert!(v6.permits("[::1]", ip("::1")));
        let metadata = AddressPolicy::for_host("169.254.169.254");
        assert!(metadata.permits("169.254.169.254", ip("169.254.169.254")));
        for host in ["localhost", "LOCALHOST.", "dev.localhost"] {
            let local = AddressPolicy::for_host(host);
            assert!(local.permits(host, ip("127.0.0.1")), "{host}");
            assert!(local.permits(host, ip("::1")), "{host}");
            assert!(!local.permits(host, ip("10.0.0.1")), "{host}");
            assert!(!local.permits(host, ip("169.254.169.254")), "{host}");
        }
        let name = AddressPolicy::for_host("mcp.example");
        assert!(name.permits("mcp.example", ip("8.8.8.8")));
        for special in [
            "127.0.0.1",
            "10.0.0.1",
            "100.64.0.1",
            "169.254.169.254",
            "fd00::1",
        ] {
            assert!(!name.permits("mcp.example", ip(special)), "{special}");
        }
        let intranet = name.allow_private_networks();
        for ok in ["10.0.0.1", "192.168.1.1", "100.64.0.1", "fd00::1"] {
            assert!(intranet.permits("mcp.example", ip(ok)), "{ok}");
        }
        for refused in [
            "127.0.0.1",
            "169.254.169.254",
            "fe80::1",
            "0.0.0.0",
            "224.0.0.1",
        ] {
            assert!(!intranet.permits("mcp.example", ip(refused)), "{refused}");
        }
    }
}
